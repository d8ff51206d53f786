"""The files osep ships beside its code (``osep/data``): the example policy files, the
``condor_master`` snippet, and the scenarios with the job list and workload logs they read.

They are found through :mod:`importlib.resources`, wherever pip put the package, so that a wheel's
install has them as a clone does. A scenario named here is run from where it lies: the paths in it
are relative to it (``swf = "../traces/..."``), and its neighbours are installed with it. The
examples have names of their own (``policy``, ``condor-config``, ...); the scenarios are named by
their file's stem (``paper-general``), in a namespace apart (``osep example scenario NAME``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from osep.config.toml import read_toml
from osep.errors import ConfigError, OsepError


@dataclass(frozen=True)
class Bundled:
    """One file to show or copy: what to type after ``osep example``, where it is, and one line
    on what it is for."""

    words: tuple[str, ...]
    path: Path
    about: str

    @property
    def name(self) -> str:
        return " ".join(self.words)


# The examples other than scenarios: name, file below osep/data, what it is for.
_EXAMPLES = (
    ("policy", "policy.toml",
     "a commented policy file: the owners' shares and how OSEP enforces them"),
    ("owner-tree", "tree.toml",
     "a policy file whose owners are a tree of accounting groups, subgroups and users"),
    ("slurm-classic", "slurm-classic-example.toml",
     "the Slurm manual's classic fair-share example with usage, a file for osep shares"),
    ("condor-config", "condor/50-osep.config",
     "HTCondor configuration that runs osep run under condor_master (for /etc/condor/config.d/)"),
)


def root() -> Path:
    """The folder of bundled files. osep reads them as files (a scenario's log beside it), so it
    must be installed unpacked, as pip does."""
    found = resources.files("osep") / "data"
    if not isinstance(found, Path):
        raise OsepError("osep's bundled files are not on the file system (imported from an archive?): "
                        "install osep with pip")
    return found


def scenario_names() -> list[str]:
    """The bundled scenarios' names, sorted."""
    return sorted(path.stem for path in (root() / "scenarios").glob("*.toml"))


def scenario(name: str) -> Path:
    """The bundled scenario ``name``; a ConfigError naming the bundled ones if there is none."""
    if name not in scenario_names():
        raise ConfigError(name, None, f"no bundled scenario of that name: {', '.join(scenario_names())}")
    return root() / "scenarios" / f"{name}.toml"


def file_or_scenario(given: Path) -> Path:
    """What a scenario argument names: the file, if there is one at ``given`` or a file is meant (a
    separator or a ``.toml`` in the name: the reader then says why it cannot be read); else the
    bundled scenario of that name. A name that is neither is refused with one line that lists the
    bundled scenarios."""
    text = str(given)
    if (os.path.lexists(given) or given.suffix == ".toml" or os.sep in text
            or (os.altsep is not None and os.altsep in text)):
        return given
    if text not in scenario_names():
        raise ConfigError(given, None, f"no such file, nor a bundled scenario (those are: "
                          f"{', '.join(scenario_names())})")
    return scenario(text)


def catalogue() -> list[Bundled]:
    """Every file ``osep example`` offers: the examples, then each scenario (its description)."""
    top = root()
    found = [Bundled((name,), top / file, about) for name, file, about in _EXAMPLES]
    for name in scenario_names():
        path = top / "scenarios" / f"{name}.toml"
        found.append(Bundled(("scenario", name), path, _description(read_toml(path))))
    return found


def find(words: tuple[str, ...]) -> Bundled:
    """The bundled file ``words`` name (``("policy",)``, ``("scenario", "tree")``); an OsepError of
    one line that lists the names there are if none."""
    if words and words[0] == "scenario":
        if len(words) != 2:
            raise OsepError(f"give the scenario's name: osep example scenario NAME, one of "
                            f"{', '.join(scenario_names())}")
        path = scenario(words[1])
        return Bundled(words, path, _description(read_toml(path)))
    for name, file, about in _EXAMPLES:
        if words == (name,):
            return Bundled(words, root() / file, about)
    names = ", ".join([name for name, _, _ in _EXAMPLES] + ["scenario NAME"])
    raise OsepError(f"no bundled file {' '.join(words)!r}: there are {names} (osep example --list)")


def beside(entry: Bundled) -> list[tuple[str, Path]]:
    """The files a bundled scenario reads by a path relative to itself (its job list or workload
    log): each as the scenario names it, and where the bundled one is. A copy of the scenario
    elsewhere needs them too. None for the other files."""
    if entry.words[0] != "scenario":
        return []
    workload = read_toml(entry.path).get("workload", {})
    named = [str(workload[key]) for key in ("swf", "csv") if key in workload]
    return [(name, (entry.path.parent / name).resolve()) for name in named]


def _description(data: dict[str, Any]) -> str:
    return str(data.get("scenario", {}).get("description", "a scenario"))

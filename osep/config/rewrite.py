"""A policy file with some of its ``[policy]`` settings replaced, its owners, comments and layout
kept: what ``osep tune --write-policy`` writes.

The ``[policy]`` table's lines that set a replaced key are left out and the new values written right
under its header (a table is added at the top where the file has none). The text made is read back
as a policy file and its settings compared with those asked for, so a layout this cannot rewrite (a
``policy`` table written inline or as dotted keys) is refused rather than written wrong; ``osep tune``
checks this before it runs anything.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from osep.config.policy import PolicyFile, parse_policy
from osep.config.toml import Table, read_toml, toml_string
from osep.errors import ConfigError

_HEADER = re.compile(r"\s*\[\s*policy\s*\]\s*(#.*)?")
_ANY_HEADER = re.compile(r"\s*\[")


def rewritten(text: str, values: Mapping[str, Any], note: str) -> str:
    """``text`` (a policy file's) with each key of ``values`` set in ``[policy]`` (a
    None value: the key left out, its default holds), under the comment ``note``."""
    lines = text.splitlines()
    setting = re.compile(r"\s*(" + "|".join(map(re.escape, values)) + r")\s*=")
    new = [f"# {note}"] + [f"{key} = {_value(value)}" for key, value in values.items() if value is not None]
    out: list[str] = []
    inside = found = False
    for line in lines:
        if _HEADER.fullmatch(line):
            inside = found = True
            out.append(line)
            out.extend(new)
            continue
        if _ANY_HEADER.match(line):
            inside = False
        if inside and setting.match(line):
            continue
        out.append(line)
    if not found:
        out = ["[policy]", *new, "", *lines]
    return "\n".join(out) + "\n"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def rewrite(source: Path, values: Mapping[str, Any], note: str) -> str:
    """The text of the policy file ``source`` with ``values`` set in ``[policy]``, checked: it reads
    back as a valid policy file with those values, else ConfigError naming ``source``."""
    read_toml(source)  # the file as osep reads it: its size, encoding and syntax checked
    made = rewritten(source.read_text(encoding="utf-8"), values, note)
    try:
        again = Table(source, tomllib.loads(made))
        loaded = parse_policy(again.table("policy"), again.table("owners", required=True))
        again.finish()
    except (ConfigError, tomllib.TOMLDecodeError):
        loaded = None
    if loaded is None or any(_settings(loaded).get(k) != v for k, v in values.items()):
        raise ConfigError(source, "policy", "its [policy] table is written in a way osep tune cannot rewrite "
                                            "(inline or as dotted keys): write it as a [policy] table")
    return made


def write_policy(source: Path, target: Path, values: Mapping[str, Any], note: str) -> None:
    """Write ``source`` with ``values`` set in ``[policy]`` (:func:`rewrite`) to ``target``, replacing
    it whole: a reader sees the old file or the new one, never half of one."""
    made = rewrite(source, values, note)
    # Beside the target (so that the rename is atomic), with the permissions the umask gives a new file.
    temporary = target.parent / f".{target.name}.{os.getpid()}.tmp"
    try:
        with open(temporary, "x", encoding="utf-8") as f:
            f.write(made)
        temporary.replace(target)
    except OSError as exc:
        raise ConfigError(target, None, f"cannot write it: {exc.strerror or exc}") from None
    finally:
        temporary.unlink(missing_ok=True)


def _settings(loaded: PolicyFile) -> dict[str, Any]:
    """The tunable settings of a policy file, as :meth:`osep.tune.candidates.Candidate.as_dict`
    names them."""
    s = loaded.settings
    return {"max_vacates": s.max_vacates, "interval": loaded.interval, "victim_order": s.victim_order.value,
            "target": s.target.value, "min_run_time": loaded.min_run_time, "excess": loaded.excess.value}

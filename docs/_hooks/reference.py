"""An MkDocs hook (mkdocs.yml ``hooks:``) that writes the reference tables of the documentation from
osep's own tables when the site is built, so that they cannot drift from the code.

A page asks for a table with a line of its own, ``<!-- reference: NAME -->``; the hook replaces the
line with the table. The names:

- ``policies``: the policies a simulation runs (``osep.sim.variants.VARIANTS``);
- ``policy-keys``: the ``[policy]`` table's keys, their values and defaults, as ``parse_policy``
  reads them (recorded while it reads an empty table);
- ``knobs``: the ``OSEP_*`` knobs (``osep.config.knobs.KNOBS``), the option of ``osep run`` that
  stands for each (the option whose help names the knob), their defaults (``DaemonSettings``) and
  bounds (``KNOB_BOUNDS``);
- ``bounds``: every constant of ``osep.bounds`` with its comment;
- ``prometheus``: the metric families the endpoint serves (``osep.enforce.figures.families``);
- ``exits``: the exit statuses every command ends with (``osep.ui.exits.STATUSES``).

What the code has no words for (what a knob without an option means, how a default of None reads)
is written here, and checked against the code: a knob, key or marker this file does not know, or
words for one the code no longer has, stops the build (mkdocs build --strict in scripts/test).
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.MULTILINE)

# What the knobs that no option of `osep run` stands for do.
KNOB_MEANING = {
    "OSEP_LOG_LEVEL": "the log's level (`--log-level` of `osep` itself)",
    "OSEP_LOG": "the JSON log file (`--log-file` of `osep` itself)",
    "OSEP_MAX_VACATES_PER_JOB_PER_HOUR": "cap on the vacates of one job in any hour",
    "OSEP_RESERVATION_TIMEOUT": "seconds a freed slot counts as on its way to its beneficiary",
    "OSEP_RELEASE_TIMEOUT": "seconds a stop keeps trying to lift osep's ceilings (0: one try)",
    "OSEP_NAME": "the `Name` of osep's ad in the collector",
    "OSEP_PUBLISH": "whether osep publishes its ad",
}
# How a default of None reads, per DaemonSettings field.
NONE_DEFAULT = {
    "policy_file": "none: required",
    "interval": "the policy file's `interval`",
    "max_vacates": "the policy file's `max_vacates`, else the largest share",
    "min_run_time": "the policy file's `min_run_time`",
    "log": "stderr",
    "max_vacates_per_job_per_hour": "no cap",
    "state_file": "none: required to act (a dry run does without)",
    "pool": "`COLLECTOR_HOST`",
    "name": "`osep@<host>`",
}
# What each [policy] key is.
POLICY_KEY_MEANING = {
    "unit": "what shares and usage are counted in (see [Resources](#resources))",
    "target": "what an owner is held to: its share, or its feasible share",
    "victim_order": "which of an owner's jobs goes first: lowest wall clock of its current run, or "
                    "least work since its last checkpoint",
    "max_vacates": "p, the vacates per cycle, pool-wide",
    "interval": "t, seconds between cycles",
    "min_run_time": "seconds a job must have run before a vacate may take it (a younger one is left "
                    "alone that cycle)",
    "excess": "simulations only: the negotiator order OSEP runs over, which shares out what owners "
              "leave unused (any but `fairshare` needs `target = \"owner\"`); a live pool's is its "
              "negotiator's, and `osep run` warns once if it is set",
}
POLICY_NONE_DEFAULT = {"max_vacates": "the largest owner share"}


def _kind_values() -> dict[str, str]:
    """The values a knob of each kind takes, where KNOB_BOUNDS gives no bounds."""
    from osep import bounds as B
    from osep.config import knobs
    from osep.log import LEVELS

    truth = ", ".join(f"`{w}`" for w in sorted(knobs._TRUE)) + " or " + ", ".join(
        f"`{w}`" for w in sorted(knobs._FALSE))
    return {
        "path": f"a path of at most {B.MAX_PATH:,} printable characters",
        "text": f"at most {B.MAX_NAME:,} printable characters",
        "bool": truth,
        "level": ", ".join(f"`{level}`" for level in LEVELS),
        "address": f"an IP address or a host name (letters, digits, hyphens and dots), at most "
                   f"{B.MAX_NAME:,} characters",
    }


def _number(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:g}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _table(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join([_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)])


def policies() -> str:
    from osep.sim.variants import DEFAULT_NAMES, VARIANTS

    rows = [[f"`{v.name}`", v.description, "yes" if v.enforce else "no",
             "yes" if v.name in DEFAULT_NAMES else ""] for v in VARIANTS.values()]
    return _table(["policy", "what it is", "enforces owner shares", "run by default"], rows)


def policy_keys() -> str:
    from osep.config.policy import parse_policy
    from osep.config.toml import Table

    read: dict[str, tuple[str, str]] = {}

    class Recorder(Table):
        def choice(self, name: str, kind: Any, default: Any) -> Any:
            read[name] = (" or ".join(f"`\"{m.value}\"`" for m in kind), f"`\"{default.value}\"`")
            return super().choice(name, kind, default)

        def number(self, name: str, default: Any = None, **bounds: Any) -> Any:
            low, high = bounds.get("minimum"), bounds.get("maximum")
            what = "a whole number" if bounds.get("integer") else "a number"
            read[name] = (f"{what} from {_number(low)} to {_number(high)}",
                          POLICY_NONE_DEFAULT.get(name, "") if default is None else _number(default))
            return super().number(name, default, **bounds)

    parse_policy(Recorder("policy.toml", {}, "policy"), Table("policy.toml", {"a": 1}, "owners"))
    _same_keys("[policy] keys", set(read), set(POLICY_KEY_MEANING))
    rows = [[f"`{key}`", POLICY_KEY_MEANING[key], values, default]
            for key, (values, default) in read.items()]
    return _table(["key", "what", "values", "default"], rows)


def knobs() -> str:
    from osep.config.knobs import KNOB_BOUNDS, KNOBS, DaemonSettings
    from osep.ui.cli import cli

    run = cli.commands["run"]
    options: dict[str, tuple[str, str]] = {}
    for param in run.params:
        found = re.search(r"knob (OSEP_[A-Z_]+)", getattr(param, "help", None) or "")
        if found:
            text = re.sub(r"\s*\[[^]]*knob [^]]*\]", "", param.help or "").rstrip(".")
            names = " / ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            options[found.group(1)] = (names, text[:1].lower() + text[1:])
    defaults = {f.name: f.default for f in dataclasses.fields(DaemonSettings)}
    _same_keys("knobs without an option", set(KNOBS) - set(options), set(KNOB_MEANING))
    _same_keys("options for knobs", set(options) - set(KNOBS), set())
    nones = {field for field, _ in KNOBS.values() if defaults[field] is None}
    _same_keys("knobs whose default is None", nones, set(NONE_DEFAULT))
    values = _kind_values()
    rows = []
    for knob, (field, kind) in KNOBS.items():
        option, meaning = options.get(knob, ("", KNOB_MEANING.get(knob, "")))
        default = defaults[field]
        shown = (NONE_DEFAULT[field] if default is None else f"`{str(default).lower()}`"
                 if isinstance(default, bool) else f"`{_number(default)}`" if isinstance(default, int | float)
                 else f"`{default}`")
        if knob in KNOB_BOUNDS:
            low, high = KNOB_BOUNDS[knob]
            bound = f"{'a whole number' if kind == 'count' else 'a number'} from {_number(low)} to {_number(high)}"
        elif kind in values:
            bound = values[kind]
        else:
            raise PluginError(f"docs/_hooks/reference.py: no words for knobs of kind {kind!r} ({knob})")
        rows.append([f"`{knob}`", option, meaning, shown, bound])
    return _table(["knob", "option of `osep run`", "meaning", "default", "values"], rows)


def bounds() -> str:
    import osep.bounds as module

    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    trailing: dict[int, str] = {}  # a comment after the code on its line
    above: dict[int, str] = {}  # a comment on a line of its own
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            own_line = token.line.lstrip().startswith("#")
            (above if own_line else trailing)[token.start[0]] = token.string.lstrip("# ").strip()
    rows = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        names += [e.id for t in node.targets if isinstance(t, ast.Tuple) for e in t.elts
                  if isinstance(e, ast.Name)]
        values = [getattr(module, name) for name in names]
        shown = ", ".join(_number(v) if isinstance(v, int | float) else
                          ", ".join(f"{k}: {_number(x)}" for k, x in v.items()) if isinstance(v, dict)
                          else str(v) for v in values)
        block: list[str] = []  # the comment lines right above the constant
        line = node.lineno - 1
        while line in above:
            block.insert(0, above[line])
            line -= 1
        if len(block) == 1 and len(block[0]) < 30 and block[0].endswith("."):
            block = []  # a heading of the constants below it ("Counts."), not words for this one
        text = trailing.get(node.lineno) or " ".join(block)
        if not text:
            raise PluginError(f"osep/bounds.py: {', '.join(names)} has no comment to say what it bounds")
        rows.append([", ".join(f"`{n}`" for n in names), shown, text])
    return _table(["constant", "value", "what it bounds"], rows)


def prometheus() -> str:
    from osep.enforce.figures import Figures, families

    rows = []
    for family in families(Figures(version="")):
        name = family.name + ("_total" if family.type == "counter" else "_info" if family.type == "info" else "")
        labels = list(getattr(family, "_labelnames", ()))
        if family.type == "info":
            labels = ["version"]
        rows.append([f"`{name}`", family.type, ", ".join(f"`{label}`" for label in labels),
                     family.documentation])
    return _table(["metric", "type", "labels", "what"], rows)


def exits() -> str:
    from osep.ui.exits import STATUSES

    return _table(["status", "means"], [[str(s.code), s.meaning] for s in STATUSES])


def _same_keys(what: str, code: set[str], words: set[str]) -> None:
    if code != words:
        raise PluginError(f"docs/_hooks/reference.py: {what}: the code has {sorted(code - words)} "
                          f"without words here, and words here for {sorted(words - code)} the code lacks")


TABLES: dict[str, Callable[[], str]] = {
    "policies": policies,
    "policy-keys": policy_keys,
    "knobs": knobs,
    "bounds": bounds,
    "prometheus": prometheus,
    "exits": exits,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def table(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in TABLES:
            raise PluginError(f"{page.file.src_path}: no reference table {name!r} (known: {', '.join(TABLES)})")
        return TABLES[name]()

    return MARKER.sub(table, markdown)


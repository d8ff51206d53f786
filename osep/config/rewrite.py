"""A policy file with some of its ``[policy]`` settings replaced, its owners, comments and layout
kept: what ``osep tune --write-policy`` writes.

The ``[policy]`` table's lines that set a replaced key are left out and the new values written right
under its header (a table is added at the top where the file has none). The text made is read back
as a policy file and its settings compared with those asked for, so a layout this cannot rewrite (a
``policy`` table written inline or as dotted keys) is refused rather than written wrong.
"""

from __future__ import annotations

import os
import re
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


def write_policy(source: Path, target: Path, values: Mapping[str, Any], note: str) -> PolicyFile:
    """Write ``source`` with ``values`` set in ``[policy]`` to ``target`` (replacing it whole, never
    half-written), and return the policy file it now is. ConfigError when the rewritten text does not
    read back with those values."""
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, None, f"cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    made = rewritten(text, values, note)
    # Beside the target (so that the rename is atomic), with the permissions the umask gives a new file.
    temporary = target.parent / f".{target.name}.{os.getpid()}.tmp"
    try:
        with open(temporary, "x", encoding="utf-8") as f:
            f.write(made)
        top = Table(target, read_toml(temporary))
        loaded = parse_policy(top.table("policy"), top.table("owners", required=True))
        top.finish()
        read_back = _settings(loaded)
        if any(read_back.get(k) != v for k, v in values.items()):
            raise ConfigError(source, "policy", "its [policy] table is written in a way this cannot rewrite "
                                                "(inline or as dotted keys): write it as a [policy] table")
        temporary.replace(target)
    except OSError as exc:
        raise ConfigError(target, None, f"cannot write it: {exc.strerror or exc}") from None
    finally:
        temporary.unlink(missing_ok=True)
    return loaded


def _settings(loaded: PolicyFile) -> dict[str, Any]:
    """The tunable settings of a policy file, as :meth:`osep.tune.candidates.Candidate.as_dict`
    names them."""
    s = loaded.settings
    return {"max_vacates": s.max_vacates, "interval": loaded.interval, "victim_order": s.victim_order.value,
            "target": s.target.value, "min_run_time": loaded.min_run_time, "excess": loaded.excess.value}

"""A file for ``osep shares``: a policy (its ``[owners]``, flat or a tree) plus a table of usage.

docs/fairshare.md gives the layout: usage per leaf by full dotted name in ``[usage]``, and an optional
``[pool] usage``. A group's usage is its members'. A name in ``[usage]`` that is not a leaf, or any
other problem, is a :class:`osep.errors.ConfigError` naming the file and the key. A policy file
without ``[usage]``, and a scenario (its ``[policy]`` and ``[owners]``), read as shares with no
usage: every leaf's is 0.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osep.bounds import MAX_OWNERS
from osep.config.policy import parse_policy
from osep.config.toml import Table, check_number, read_toml
from osep.core.resources import Unit
from osep.core.tree import ShareTree
from osep.errors import ConfigError
from osep.fairshare.hierarchy import Hierarchy, of_shares

MAX_USAGE = 1e18  # any unit: core-seconds of a large pool over decades stay below this


@dataclass(frozen=True, slots=True)
class SharesFile:
    path: str
    unit: str
    tree: Hierarchy
    usage: dict[str, float]
    total: float | None  # the pool's whole usage, if the file gives it
    usage_given: bool = True  # False: a policy file or scenario, with no [usage] (every leaf's is 0)


def hierarchy_of(shares: Any, unit: Unit, path: Path | str) -> Hierarchy:
    """The account tree a policy's shares describe: a tree as it is, a flat policy as one level."""
    if not isinstance(shares, ShareTree) and unit is Unit.DOMINANT:
        raise ConfigError(path, "policy.unit", "the fair-share models need shares in one resource; "
                                               "\"dominant\" gives several")
    return of_shares(shares, unit.value)


def _flatten(table: Table, data: Mapping[str, Any], prefix: str, out: list[tuple[str, Any]]) -> None:
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            _flatten(table, value, name, out)
        else:
            out.append((name, value))
        if len(out) > MAX_OWNERS:
            raise table.error(None, f"at most {MAX_OWNERS:,} entries")


class _Key:
    """Errors about one entry of the usage table, under its dotted key."""

    def __init__(self, table: Table, name: str) -> None:
        self.path = table.path
        self.key = table.key(name)

    def error(self, _: None, reason: str) -> ConfigError:
        return ConfigError(self.path, self.key, reason)

    def failing_here(self) -> Callable[[str], ConfigError]:
        return lambda reason: ConfigError(self.path, self.key, reason)


def parse_usage(table: Table, tree: Hierarchy) -> dict[str, float]:
    """Usage per leaf from a ``[usage]`` table (see the module's description)."""
    flat: list[tuple[str, Any]] = []
    _flatten(table, table.data, "", flat)
    leaves = set(tree.leaves())
    out: dict[str, float] = {}
    for name, value in flat:
        key = _Key(table, name)
        if name not in tree.parents:
            close = difflib.get_close_matches(name, sorted(leaves), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise key.error(None, f"{name!r} is not a leaf of the owner tree{hint}")
        if name not in leaves:
            raise key.error(None, f"{name!r} is a group: usage is given for its members, the leaves")
        if name in out:
            raise key.error(None, f"{name!r} is given twice")
        out[name] = float(check_number(value, key.failing_here(), minimum=0, maximum=MAX_USAGE))
    for name in table.data:
        table.raw(name)
    table.finish()
    return out


def load_shares_file(path: Path | str) -> SharesFile:
    """Read and check a file for ``osep shares`` (see the module's description)."""
    top = Table(path, read_toml(path))
    policy = parse_policy(top.table("policy"), top.table("owners", required=True))
    tree = hierarchy_of(policy.settings.shares, policy.settings.unit, path)
    unit = policy.settings.unit.value
    if top.has("scenario"):  # its other tables are the simulation's: osep validate checks them
        return SharesFile(str(path), unit, tree, {}, None, usage_given=False)
    given = top.has("usage")
    usage = parse_usage(top.table("usage"), tree)
    pool = top.table("pool")
    total = pool.number("usage", None, minimum=0, maximum=MAX_USAGE)
    pool.finish()
    top.finish()
    if total is not None and total < sum(usage.values()) * (1 - 1e-12):
        raise pool.error("usage", f"the pool's usage ({total:g}) is less than its leaves' "
                                  f"({sum(usage.values()):g}): it is their sum or more")
    return SharesFile(str(path), unit, tree, usage, float(total) if total is not None else None,
                      usage_given=given)

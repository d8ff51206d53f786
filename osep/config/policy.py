"""Policy files.

A policy file is TOML with two tables::

    [policy]
    target = "owner"           # or "feasible"
    victim_order = "wallclock" # or "lost-work"
    max_vacates = 10           # p; omit for the largest owner share
    interval = 300             # t, seconds between cycles
    unit = "slots"             # or "cpus", "memory", "gpus", "disk", "dominant"

    [owners]
    atlas = 10                 # in the unit: slots, cores, MiB (or "1.5 TiB"), GPUs or KiB of
                               # disk (or "20 TiB"); or "30%"
    cms = { share = 10 }       # the same, as a table
    physics = { cpus = 400, memory = "1.5 TiB", gpus = 8 }   # per resource (unit = "dominant")

With one resource as the unit, every share is an amount of it (a table may name it: ``{ cpus = 40 }``);
naming another resource would be ignored, so it is an error. With ``dominant``, every share is a table
of the resources the owner contributed. Amounts are all absolute or all percentages of the pool.

Everything is checked on load into frozen objects. Any problem raises :class:`ConfigError` naming the
file, the dotted key and what is wrong; nothing half-loaded is ever returned.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osep.config.bounds import MAX_AMOUNT_TEXT, MAX_INTERVAL, MAX_OWNERS, MAX_VACATES, MIN_INTERVAL, share_maximum
from osep.config.toml import Table, bound_text, check_name, read_toml, show
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings
from osep.core.resources import RESOURCES, Unit
from osep.core.shares import ShareTable
from osep.errors import ConfigError

DEFAULT_INTERVAL = 300.0  # t, seconds between cycles, when a policy file does not say

# Memory and disk amounts: a number in the resource's own unit (MiB of memory, KiB of disk, as
# HTCondor counts them), or a string with a binary unit (K, M, G, T as HTCondor reads them).
SIZE_UNITS = {"k": 1024.0, "m": 1024.0**2, "g": 1024.0**3, "t": 1024.0**4}  # bytes
SIZED = {"memory": 1024.0**2, "disk": 1024.0}  # bytes in one unit of each sized resource
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT])(?:i?[bB])?\s*$")


def _amount(table: Table, name: str, value: Any, resource: str) -> tuple[float, bool]:
    """One amount of ``resource``: (number, whether it is a percentage of the pool)."""
    key = table.key(name)
    percent = False
    if isinstance(value, str) and len(value) > MAX_AMOUNT_TEXT:
        raise ConfigError(table.path, key, f"a share is at most {MAX_AMOUNT_TEXT} characters; got {show(value)}")
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            number = float(value.strip()[:-1].strip())
        except ValueError:
            raise ConfigError(table.path, key, f"not a percentage: {show(value)}") from None
        percent = True
    elif isinstance(value, str) and resource in SIZED:
        match = _SIZE.match(value)
        if match is None:
            raise ConfigError(table.path, key, f"not a {resource} size like \"64 GiB\" or \"1.5 TiB\": {show(value)}")
        number = float(match.group(1)) * SIZE_UNITS[match.group(2).lower()] / SIZED[resource]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(max(min(value, 10**300), -(10**300)))  # an int past a float's range: clamped
    else:
        what = {"slots": "slots", "cpus": "cores", "gpus": "GPUs",
                "memory": "MiB (or a size like \"64 GiB\")", "disk": "KiB (or a size like \"2 TiB\")"}
        raise ConfigError(table.path, key,
                          f"a share is a number of {what[resource]} or a percentage like \"30%\"; got {show(value)}")
    if not math.isfinite(number) or number < 0:
        raise ConfigError(table.path, key, f"a share is a finite number, not negative; got {show(value)}")
    if number > (100.0 if percent else share_maximum(resource)):
        most = "100%" if percent else f"{bound_text(share_maximum(resource))} ({resource})"
        raise ConfigError(table.path, key, f"a share is at most {most}; got {show(value)}")
    return number, percent


def parse_owners(table: Table, unit: Unit = Unit.SLOTS, unit_key: str = "policy.unit") -> ShareTable:
    """Owner shares in ``unit``: all absolute or all percentages of the pool, never a mix."""
    shares: dict[str, float | dict[str, float]] = {}
    kinds: dict[str, bool] = {}  # dotted key -> whether it is a percentage
    totals: dict[str, float] = {}  # resource -> percentages given
    dominant = unit is Unit.DOMINANT
    needs_table = ("with unit = \"dominant\" a share names the resources contributed, "
                   "like { cpus = 400, gpus = 8 }")
    if len(table.data) > MAX_OWNERS:
        raise table.error(None, f"at most {MAX_OWNERS:,} owners, got {len(table.data):,}")
    for owner in table.data:
        check_name(owner, table.failing(owner))
        value = table.raw(owner)
        given: dict[str, tuple[str, Any]] = {}  # resource -> (dotted key, value)
        if isinstance(value, Mapping):
            sub = Table(table.path, value, table.key(owner))
            for name in value:
                if dominant and name in ("share", "slots"):
                    raise sub.error(name, needs_table)
                resource = unit.value if name == "share" else name
                if resource not in RESOURCES:
                    continue  # left for finish(): an unknown key
                if not dominant and resource != unit.value:
                    raise sub.error(name, f"{unit_key} is {unit.value!r}: a share in {resource} would "
                                          "be ignored (use unit = \"dominant\" to weigh several resources)")
                if resource in given:
                    raise sub.error(name, f"the share in {resource} is given twice")
                given[resource] = (name, sub.raw(name))
            for resource, (name, raw) in given.items():
                number, percent = _amount(sub, name, raw, resource)
                given[resource] = (sub.key(name), (number, percent))
            sub.finish()
            if not given:
                names = ", ".join(RESOURCES[1:]) if dominant else unit.value
                raise table.error(owner, f"a share names at least one of: {names}")
        else:
            if dominant:
                raise table.error(owner, needs_table)
            given[unit.value] = (table.key(owner), _amount(table, owner, value, unit.value))
        amounts: dict[str, float] = {}
        for resource, (key, (number, percent)) in given.items():
            kinds[key] = percent
            amounts[resource] = number
            if percent:
                totals[resource] = totals.get(resource, 0.0) + number
        # In slots (the paper's model) a share is a plain number, as it always was.
        shares[owner] = amounts["slots"] if unit is Unit.SLOTS else amounts
    if len(set(kinds.values())) > 1:
        absolute = sorted(k for k, pct in kinds.items() if not pct)
        pct = sorted(k for k, p in kinds.items() if p)
        raise ConfigError(
            table.path,
            pct[0],
            f"shares of different kinds: {', '.join(pct)} in percent but {', '.join(absolute)} absolute",
        )
    percent = any(kinds.values())
    for resource, total in sorted(totals.items()):
        if total > 100.0 + 1e-9:
            raise ConfigError(table.path, table.prefix,
                              f"percentages of {resource} add up to {total:g}%, more than 100%")
    return ShareTable(shares=shares, percent=percent)


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """A policy file: what the decision depends on, and how often the loop runs it (t)."""

    settings: PolicySettings
    interval: float = DEFAULT_INTERVAL


def parse_policy(policy: Table, owners: Table) -> PolicyFile:
    unit = policy.choice("unit", Unit, Unit.SLOTS)
    target = policy.choice("target", Target, Target.OWNER)
    if unit is Unit.DOMINANT and target is Target.FEASIBLE:
        raise policy.error("target", "feasible targets fill one resource: with unit = \"dominant\" "
                                     "only \"owner\" targets are available")
    settings = PolicySettings(
        shares=parse_owners(owners, unit, policy.key("unit")),
        target=target,
        victim_order=policy.choice("victim_order", VictimOrder, VictimOrder.WALLCLOCK),
        max_vacates=policy.number("max_vacates", None, minimum=0, maximum=MAX_VACATES, integer=True),
        unit=unit,
    )
    interval = float(policy.number("interval", DEFAULT_INTERVAL, minimum=MIN_INTERVAL, maximum=MAX_INTERVAL))
    policy.finish()
    return PolicyFile(settings, interval)


def load_policy(path: Path | str) -> PolicyFile:
    """Read and validate a policy file."""
    top = Table(path, read_toml(path))
    loaded = parse_policy(top.table("policy"), top.table("owners", required=True))
    top.finish()
    return loaded

"""Policy files: the ``[policy]`` and ``[owners]`` tables, flat or as a tree of groups.

docs/configuration.md gives the layout, the units of a share and the rules of an owner tree
(:mod:`osep.core.tree` is its model). Everything is checked on load into frozen objects. Any problem
raises :class:`ConfigError` naming the file, the dotted key and what is wrong; nothing half-loaded is
ever returned.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osep.bounds import (
    MAX_AMOUNT_TEXT,
    MAX_INTERVAL,
    MAX_OWNERS,
    MAX_SECONDS,
    MAX_VACATES,
    MIN_INTERVAL,
    share_maximum,
)
from osep.config.toml import Table, bound_text, check_name, read_toml, show
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings
from osep.core.resources import RESOURCES, Unit
from osep.core.shares import ShareTable
from osep.core.tree import OWN, ROOT, ShareTree, TreeNode
from osep.errors import ConfigError
from osep.sim.specs import Order

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


MAX_DEPTH = 12  # levels of an owner tree
# Names a member of a tree cannot have: the keys a node's table holds beside its members, and the
# member a group's own jobs count for.
RESERVED = frozenset({"share", *RESOURCES, OWN})


def _is_tree(table: Table) -> bool:
    return any(isinstance(v, Mapping) and any(isinstance(w, Mapping) for w in v.values())
               for v in table.data.values())


def parse_tree(table: Table, unit: Unit, unit_key: str = "policy.unit") -> ShareTree:
    """An owner tree (see the module's description)."""
    if unit is Unit.DOMINANT:
        raise table.error(None, f"an owner tree's shares are in one resource: {unit_key} cannot be "
                                "\"dominant\" (give the groups' shares in one unit, or list owners flat)")
    nodes: dict[str, TreeNode] = {}
    count = 0

    def level(sub: Table, parent: str, depth: int) -> tuple[str, ...]:
        nonlocal count
        names: list[str] = []
        kinds: dict[bool, str] = {}
        percent_total = 0.0
        for key in sub.data:
            check_name(key, sub.failing(key), "an owner's or a group's name")
            if parent != ROOT and "." in key:
                raise sub.error(key, "a member's name has no \".\" in it: nest it as a table "
                                     "(its full name is the path of keys)")
            if key == OWN:
                raise sub.error(key, f"{OWN!r} is the name a group's own jobs count for: not a "
                                     "member's name")
            count += 1
            if count > MAX_OWNERS:
                raise table.error(None, f"at most {MAX_OWNERS:,} owners and groups in a tree")
            name = key if parent == ROOT else f"{parent}.{key}"
            if name in nodes:
                raise sub.error(key, f"{name!r} is given twice (once flat, once in a tree)")
            value = sub.raw(key)
            children: tuple[str, ...] = ()
            if isinstance(value, Mapping):
                node = Table(sub.path, value, sub.key(key))
                share_keys = [k for k in ("share", unit.value) if k in value]
                if len(share_keys) > 1:
                    raise node.error(share_keys[1], "the share is given twice")
                if not share_keys:
                    raise node.error(None, f"a share is needed: share = <{unit.value}> or \"30%\" "
                                           "of the parent")
                number, percent = _amount(node, share_keys[0], node.raw(share_keys[0]), unit.value)
                members = {k: v for k, v in value.items() if isinstance(v, Mapping)}
                for k in value:
                    if k in RESOURCES and k not in share_keys:
                        raise node.error(k, f"{unit_key} is {unit.value!r}: a share in {k} would be "
                                            "ignored (a tree is in one resource)")
                if members:
                    if depth >= MAX_DEPTH:
                        raise node.error(None, f"an owner tree is at most {MAX_DEPTH} levels deep")
                    children = level(Table(sub.path, members, sub.key(key)), name, depth + 1)
                    for k in members:
                        node.raw(k)
                node.finish()
            else:
                number, percent = _amount(sub, key, value, unit.value)
            kinds.setdefault(percent, sub.key(key))
            if len(kinds) > 1:
                raise sub.error(key, f"shares of different kinds among siblings: {kinds[True]} is a "
                                     f"percentage, {kinds[False]} an amount")
            if percent:
                percent_total += number
            nodes[name] = TreeNode(name, parent, number, percent, children)
            names.append(name)
        if percent_total > 100.0 + 1e-9:
            raise sub.error(None, f"percentages add up to {percent_total:g}%, more than 100%")
        return tuple(names)

    top = level(table, ROOT, 1)
    return ShareTree(nodes=nodes, resource=unit.value, top=top)


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """A policy file: what the decision depends on, how often the loop runs it (t), and the youngest
    job a vacate may take (``min_run_time``, seconds of its current run: the actuator leaves a
    younger one alone that cycle)."""

    settings: PolicySettings
    interval: float = DEFAULT_INTERVAL
    excess: Order = Order.FAIRSHARE  # the simulated negotiator's order under enforcement
    min_run_time: float = 0.0


def parse_policy(policy: Table, owners: Table) -> PolicyFile:
    unit = policy.choice("unit", Unit, Unit.SLOTS)
    target = policy.choice("target", Target, Target.OWNER)
    if unit is Unit.DOMINANT and target is Target.FEASIBLE:
        raise policy.error("target", "feasible targets fill one resource: with unit = \"dominant\" "
                                     "only \"owner\" targets are available")
    shares: ShareTable | ShareTree = (parse_tree(owners, unit, policy.key("unit")) if _is_tree(owners)
                                      else parse_owners(owners, unit, policy.key("unit")))
    settings = PolicySettings(
        shares=shares,
        target=target,
        victim_order=policy.choice("victim_order", VictimOrder, VictimOrder.WALLCLOCK),
        max_vacates=policy.number("max_vacates", None, minimum=0, maximum=MAX_VACATES, integer=True),
        unit=unit,
    )
    interval = float(policy.number("interval", DEFAULT_INTERVAL, minimum=MIN_INTERVAL, maximum=MAX_INTERVAL))
    min_run_time = float(policy.number("min_run_time", 0.0, minimum=0, maximum=MAX_SECONDS))
    excess = policy.choice("excess", Order, Order.FAIRSHARE)
    if excess is not Order.FAIRSHARE and target is Target.FEASIBLE:
        raise policy.error("excess", f"with target = \"feasible\" osep itself shares what owners leave "
                                     f"unused, equally; excess = \"{excess.value}\" needs target = \"owner\"")
    policy.finish()
    return PolicyFile(settings, interval, excess, min_run_time)


def load_policy(path: Path | str) -> PolicyFile:
    """Read and validate a policy file."""
    top = Table(path, read_toml(path))
    loaded = parse_policy(top.table("policy"), top.table("owners", required=True))
    top.finish()
    return loaded

"""The negotiator's group quotas handed down from the pool's size, written as an osep policy tree
(TOML text).

Pure: configuration values in, text out. :mod:`osep.htcondor.quota_knobs` reads the values into the
negotiator's tree of groups; this module does the negotiator's arithmetic on it, taken from its source
(``hgq_assign_quotas``, ``hgq_allocate_surplus``, ``strict_enforce_quota``, the pool's size in
``matchmaker.cpp``); docs/configuration.md says what that comes to. An osep share is an owner's due,
never a ceiling. So a group's quota becomes its share (static: an amount; dynamic: a percentage of its
parent), and every setting osep has no equal for is a comment on the group it concerns. A value osep
cannot take is a problem: counted, commented, and left out or written as HTCondor would read it;
never a traceback or broken TOML.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from osep.bounds import MAX_FILE_BYTES, MAX_NAME, MAX_OWNERS, MAX_TABLES, share_maximum
from osep.config.policy import MAX_DEPTH, RESERVED
from osep.config.toml import escape, toml_key
from osep.htcondor.quota_knobs import (
    C_SPACE,
    DEFAULT_SORT_EXPR,
    GLOBAL_KNOBS,
    MECHANICS,
    PER_GROUP,
    ROOT_NAME,
    SHOWN,
    Evaluate,
    Group,
    GroupTree,
    Knobs,
    fold,
    literal,
    num,
    pool_flag,
    show,
)


@dataclass(frozen=True, slots=True)
class PoolSize:
    """The pool's size as the negotiator counts it for quotas, what its slots' weights are, and where
    the knobs were read: what the translation knows of the pool beside the knobs (all optional)."""

    weighted: float | None = None  # the sum of the slots' weights, as the negotiator counts it
    effective: float | None = None  # slots, a partitionable one counting as its cores (no weights)
    # The units every slot's SlotWeight equals ("cpus", "slots" for 1, ...); None: not looked at.
    weighs: frozenset[str] | None = None
    source: str = ""  # where the knobs were read, for the header
    problem: str | None = None  # why the pool could not be counted


@dataclass(frozen=True, slots=True)
class Translation:
    text: str  # the policy file, TOML with comments
    problems: tuple[str, ...]  # values or names osep could not take as HTCondor does (also in the text)
    groups: int  # groups written as nodes of the tree


# -- the negotiator's arithmetic --------------------------------------------------------------------


def _assign(tree: GroupTree, size: float | None, oversubscribe: bool) -> None:
    """Every group's quota from above, as hgq_assign_quotas hands it down from the pool's ``size``
    (None: not known without the pool's size)."""

    def down(group: Group, quota: float | None) -> None:
        group.quota = quota
        statics = sum(c.config for c in group.children if c.static)
        dynamics = sum(c.config for c in group.children if not c.static)
        for child in group.children:
            if quota is not None and quota <= 0:
                share: float | None = 0.0
            elif child.static:
                if oversubscribe:
                    share = child.config
                elif quota is None:
                    share = None
                else:
                    share = child.config * min(statics, quota) / (statics or 1.0)
            elif child.config == 0:
                share = 0.0
            elif quota is None:
                share = None
            else:
                given = statics if oversubscribe else min(statics, quota)
                share = child.config * max(0.0, quota - given) / max(dynamics, 1.0)
            down(child, share)

    down(tree.root, size)


# -- the osep tree ----------------------------------------------------------------------------------


@dataclass
class _Node:
    group: Group
    share: str  # its value, as TOML
    notes: list[str]


@dataclass
class _Unit:
    name: str  # the policy's unit
    per: float  # how many of it one quota unit is
    size: float | None  # the pool's size in quota units, when known


def translate(knobs: Mapping[str, str], pool_size: PoolSize = PoolSize(),
              evaluate: Evaluate | None = None) -> Translation:
    """The policy tree the negotiator's group quotas say, as TOML text, and the problems found.

    ``knobs``: the negotiator's configuration (names without regard to ASCII case); only
    ``GROUP_*`` and :data:`GLOBAL_KNOBS` are read. ``pool_size``: what is known of the pool (its size is
    needed only where static and dynamic quotas are siblings). ``evaluate``: reads a value that is
    not a plain number or boolean as a ClassAd expression, as HTCondor does; without it such a
    value is a problem."""
    values = Knobs(knobs, evaluate)
    tree = GroupTree(values)
    problems = tree.problems
    header: list[str] = []
    unit = _unit(values, pool_size, header, problems)
    oversubscribe = pool_flag(values, "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", True, problems)
    strict = pool_flag(values, "NEGOTIATOR_STRICT_ENFORCE_QUOTA", True, problems)
    _assign(tree, unit.size, oversubscribe)
    nodes = _nodes(tree, unit, oversubscribe, strict)
    header.extend(_pool_notes(values, tree, pool_size, unit, oversubscribe, strict))
    problems[:] = dict.fromkeys(problems)  # a name listed many times is one problem
    text = _write(header, nodes, problems, unit.name, tree, pool_size)
    size = len(text.encode("utf-8", "replace"))
    if size > MAX_FILE_BYTES:
        problems.append(f"the text is {size:,} bytes, more than the {MAX_FILE_BYTES:,} osep reads in a "
                        "policy file: split it or shorten its comments")
        text = _write(header, nodes, problems, unit.name, tree, pool_size)
    return Translation(text=text, problems=tuple(problems), groups=len(nodes))


def _unit(knobs: Knobs, pool_size: PoolSize, header: list[str], problems: list[str]) -> _Unit:
    """The policy's unit: what the negotiator's quotas count (NEGOTIATOR_USE_SLOT_WEIGHTS,
    SLOT_WEIGHT)."""
    if not pool_flag(knobs, "NEGOTIATOR_USE_SLOT_WEIGHTS", True, problems):
        header.append("NEGOTIATOR_USE_SLOT_WEIGHTS is false: quotas count slots (a partitionable slot as "
                      "its cores when sizing the pool), so the shares are slots")
        return _Unit("slots", 1.0, pool_size.effective)
    expression = knobs.raw("SLOT_WEIGHT") or "Cpus"
    plain = expression.strip(C_SPACE)
    while plain.startswith("(") and plain.endswith(")"):
        plain = plain[1:-1].strip(C_SPACE)
    words = {"CPUS": "cpus", "MEMORY": "memory", "GPUS": "gpus", "DISK": "disk"}
    constant = literal(plain)
    forced = pool_flag(knobs, "FORCE_NEGOTIATOR_SLOT_WEIGHT", False, problems)
    whose = "" if forced else " (each slot's own SlotWeight counts; this one only for slots without one)"
    if fold(plain) in words:
        unit = _Unit(words[fold(plain)], 1.0, pool_size.weighted)
        header.append(f"SLOT_WEIGHT = {show(expression)}: quotas count {unit.name}{whose}")
    elif constant is not None and math.isfinite(constant) and constant > 0 and math.isfinite(1.0 / constant):
        unit = _Unit("slots", 1.0 / constant, pool_size.weighted)
        header.append(f"SLOT_WEIGHT = {show(expression)}: every slot weighs {num(constant)}, so the "
                      f"shares are the quotas divided by {num(constant)}, in slots{whose}")
    else:
        unit = _Unit("cpus", 1.0, pool_size.weighted)
        problems.append(f"SLOT_WEIGHT = {show(expression)} is no one resource osep counts: the shares "
                        "are the quotas' numbers, written as cores; check them")
    if pool_size.weighs is not None and not forced and unit.name not in pool_size.weighs:
        seen = " or ".join(sorted(pool_size.weighs)) or "no one resource osep counts"
        problems.append(f"the slots' own SlotWeight counts {seen}, not {unit.name} as this SLOT_WEIGHT "
                        "does: the startds' SLOT_WEIGHT is not the negotiator's, and theirs counts")
    return unit


def _bad_part(part: str) -> str | None:
    """Why osep's policy files refuse ``part`` as a member's name, or None."""
    if not part:
        return "a part of its name is empty (two dots in a row, or one at an end)"
    if len(part) > MAX_NAME:
        return f"a part of its name is {len(part):,} characters long (osep takes at most {MAX_NAME})"
    if not part.isprintable():
        return "a part of its name has control or invisible characters"
    if part in RESERVED:
        return f"a part of its name is {part!r}, which osep's policy files keep for a node's own keys"
    return None


def _nodes(tree: GroupTree, unit: _Unit, oversubscribe: bool, strict: bool) -> list[_Node]:
    """Every group osep can write, depth first, each with its share and comments."""
    out: list[_Node] = []
    dropped = 0

    def level(parent: Group, path: tuple[str, ...]) -> None:
        nonlocal dropped
        shares = _sibling_shares(tree, parent, unit, oversubscribe)
        for child in parent.children:
            bad = _bad_part(child.part)
            if bad is None and len(path) >= MAX_DEPTH:
                bad = f"it is deeper than the {MAX_DEPTH} levels osep's policy files take"
            if bad is not None:
                below = _count(child)
                tree.problems.append(f"group {show(child.name)} is not written" +
                                     (f", nor its {below:,} subgroups" if below else "") + f": {bad}")
                continue
            if len(out) >= MAX_OWNERS:
                dropped += 1 + _count(child)
                continue
            child.path = (*path, child.part)
            notes = list(child.notes)
            if ".".join(child.path) != child.name:
                notes.append(f"HTCondor names it {show(child.name)} (the same group, case aside); osep "
                             "matches names exactly, so jobs must spell it as this node does")
            if not child.surplus:
                notes.append("HTCondor: a ceiling, as it accepts no surplus: " + (
                    "it and its subgroups together never use more" if strict else "it never uses more") +
                    "; osep has no ceilings")
            if child.autoregroup:
                notes.append("HTCondor: autoregroup (past its quota its jobs also compete as jobs of no "
                             "group); osep has no second round: they stay this group's")
            share, extra = shares[id(child)]
            out.append(_Node(child, share, notes + extra))
            level(child, child.path)

    level(tree.root, ())
    if dropped:
        tree.problems.append(f"{dropped:,} more groups are not written: osep's policy files take at most "
                             f"{MAX_OWNERS:,} owners and groups")
    return out


def _count(group: Group) -> int:
    return sum(1 + _count(c) for c in group.children)


def _sibling_shares(tree: GroupTree, parent: Group, unit: _Unit,
                    oversubscribe: bool) -> dict[int, tuple[str, list[str]]]:
    """The share of each of ``parent``'s subgroups, with comments where HTCondor's split differs.

    osep's siblings are all amounts or all percentages. Static quotas become amounts, dynamic ones
    percentages of the parent; a dynamic 0 (or a static 0) is 0 whatever the pool, so it fits
    either. Where both kinds are given, the dynamic quotas are written as the amounts they come to
    at the pool's present size."""
    kids = parent.children
    out: dict[int, tuple[str, list[str]]] = {}
    statics = sum(c.config for c in kids if c.static)
    dynamics = sum(c.config for c in kids if not c.static)
    whose = "the pool" if parent.parent is None else show(parent.name)
    if dynamics > 0 and statics <= 0:  # percentages of the parent
        scale = max(dynamics, 1.0)
        percents = [0.0 if c.static else 100.0 * c.config / scale for c in kids]
        for child, text in zip(kids, _percentages(percents), strict=True):
            said = []
            if dynamics > 1.0 and not child.static:
                said.append(f"HTCondor: the dynamic quotas under {whose} add up to {num(dynamics)}, so it "
                            f"scales each by 1/{num(dynamics)}, as this share is")
            out[id(child)] = (text, said)
        return out
    for child in kids:  # amounts
        notes: list[str] = []
        if child.static:
            amount = child.config
        elif child.config <= 0:
            amount = 0.0
        elif child.quota is not None:
            amount = child.quota
            notes.append(f"HTCondor: {num(child.config)} of what the static quotas beside it leave of "
                         f"{whose}, {num(child.quota * unit.per)} {unit.name} now: osep's siblings are all "
                         "amounts or all percentages, so this amount stays when the pool's size changes")
        else:
            amount = 0.0
            tree.problem(child, f"{num(child.config)} of what the static quotas beside it leave of "
                                 f"{whose} comes to an amount only with the pool's size, unknown here: "
                                 "written as 0")
        out[id(child)] = (_amount(tree, child, amount * unit.per, unit.name), notes)
    if parent.quota is not None and statics > parent.quota > 0 and kids:
        out[id(kids[0])][1].append(
            f"HTCondor: the static quotas under {whose} add up to {num(statics)}, more than its "
            f"{num(parent.quota)}: " + (
                "it keeps each whole (NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION); osep scales them to fit"
                if oversubscribe else "it scales them to fit, as osep does"))
    return out


def _amount(tree: GroupTree, group: Group, value: float, unit: str) -> str:
    """An amount of ``unit`` as TOML, within what osep's policy files take."""
    most = share_maximum(unit)
    if math.isnan(value):  # not reachable from HTCondor's values; kept from ever reaching the text
        tree.problem(group, "its share works out to no number: written as 0")
        value = 0.0
    if value > most:
        tree.problem(group, f"a share of {num(value)} {unit} is more than osep takes: written as {num(most)}")
        value = most
    value = round(value, 6)
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


_GRID = 10_000  # steps of a percentage: percentages are written to 0.0001%


def _percentages(values: list[float]) -> list[str]:
    """Siblings' percentages as TOML strings to 0.0001%: each to the nearest step, or all down if
    that would make them add up to more than 100% (osep refuses that)."""
    exact = [v * _GRID for v in values]
    steps = [round(v) for v in exact]
    if sum(steps) > 100 * _GRID:
        steps = [math.floor(v) for v in exact]
    return ['"' + f"{s / _GRID:.4f}".rstrip("0").rstrip(".") + '%"' for s in steps]


def _pool_notes(knobs: Knobs, tree: GroupTree, pool_size: PoolSize, unit: _Unit, oversubscribe: bool,
                strict: bool) -> list[str]:
    """Comments for the whole file: the pool's size, the root, the settings osep has no equal for."""
    notes = []
    if unit.size is not None:
        notes.append(f"the pool's size, as the negotiator counts it for quotas: {num(unit.size * unit.per)} "
                     f"{unit.name}")
    elif pool_size.problem:
        tree.problems.append(f"the pool could not be counted: {escape(pool_size.problem, 200)}")
    if tree.groups:
        given = sum(c.quota or 0.0 for c in tree.root.children)
        now = "" if unit.size is None else f", {num(max(0.0, unit.size - given) * unit.per)} {unit.name} now"
        notes.append(f"jobs of no group listed here are HTCondor's {ROOT_NAME} group, which gets what the "
                     f"groups leave{now}; osep has them as non-owners, with no share")
        if any(g.children for g in tree.groups):
            notes.append("a group's own jobs (charged to the group itself) get, in HTCondor, " + (
                "the group's whole quota (NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION)" if oversubscribe else
                "what its subgroups leave of its quota") + "; in osep they have no share of their own")
        notes.append("HTCondor matches accounting group names without regard to case; osep matches them "
                     "exactly")
    if not strict:
        notes.append("NEGOTIATOR_STRICT_ENFORCE_QUOTA is false: a group that accepts no surplus limits "
                     "only itself, not its subgroups")
    # The pool-size constraint has an older name, read only when the newer one is unset.
    sizing = ["NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT", "NEGOTIATOR_SLOT_CONSTRAINT"]
    if knobs.raw(sizing[0]) is None:
        sizing[0] = "GROUP_DYNAMIC_MACH_CONSTRAINT"
    for name in sizing:
        value = knobs.raw(name)
        if value is not None:
            notes.append(f"{name} = {show(value)}: only the slots it matches size the pool for quotas; "
                         "osep's percentages are of every slot")
    for name, what in MECHANICS.items():
        value = knobs.raw(name)
        if value is not None and not (name == "GROUP_SORT_EXPR" and value.strip(C_SPACE) == DEFAULT_SORT_EXPR):
            notes.append(f"{name} = {show(value)} {what}; osep has no equal")
    notes.extend(_orphans(knobs, tree))
    return notes


def _orphans(knobs: Knobs, tree: GroupTree) -> list[str]:
    """Per-group knobs of no group in the tree, which HTCondor ignores: said, at most 20 of them."""
    known = {fold(g.name) for g in tree.groups}
    orphans = []
    pool_wide = {fold(k) for k in GLOBAL_KNOBS}
    for name in knobs.names():
        folded = fold(name)
        prefix = next((p for p in PER_GROUP if folded.startswith(p)), None)
        if prefix is None or folded in pool_wide:  # GROUP_QUOTA_ROUND_ROBIN_RATE is no group's
            continue
        if prefix == "GROUP_QUOTA_DYNAMIC_" and fold("DYNAMIC_" + name[len(prefix):]) in known:
            continue  # also the static quota of a group named DYNAMIC_...
        if fold(name[len(prefix):]) not in known:
            orphans.append(name)
    out = [f"{escape(n, SHOWN)} is set, for no group in the tree: HTCondor ignores it" for n in orphans[:20]]
    if len(orphans) > 20:
        out.append(f"and {len(orphans) - 20:,} more such knobs")
    return out


def _comment(text: str, first: str = "# ") -> list[str]:
    """A comment of one or more lines of at most about 100 characters (a long word stays whole)."""
    lines = textwrap.wrap(text, width=100, initial_indent=first, subsequent_indent="#   ",
                          break_long_words=False, break_on_hyphens=False)
    return lines or [first.rstrip()]


def _write(header: list[str], nodes: list[_Node], problems: list[str], unit: str, tree: GroupTree,
           pool_size: PoolSize) -> str:
    lines = ["# An osep policy tree: the negotiator's group quotas (GROUP_NAMES, GROUP_QUOTA_*) as",
             "# `osep shares --from-pool` read them. Check it with `osep validate FILE` before using it.",
             "#",
             "# An HTCondor quota is what the negotiator hands a group; an osep share is what an owner gets",
             "# back, by vacating others' jobs, when it wants it, and never a ceiling. Where HTCondor says",
             "# more than osep can, the group's comments say what differs."]
    if pool_size.source:
        lines.append(f"# Read from {escape(pool_size.source, 200)}.")
    for line in header:
        lines.extend(_comment(line))
    if not tree.groups:
        lines.append("# GROUP_NAMES names no group: the negotiator has no group quotas, and everyone is a "
                     "non-owner.")
    if problems:
        lines.append(f"# {len(problems):,} problem{'' if len(problems) == 1 else 's'}:")
        for problem in problems:
            lines.extend(_comment(problem, "# - "))
    lines += ["", "[policy]", f'unit = "{unit}"']
    tables = len(nodes) <= MAX_TABLES - 1  # [policy] is one
    if not tables or not nodes:
        lines += ["", "[owners]"]
        if nodes:
            lines.append(f"# {len(nodes):,} groups, as dotted keys: osep reads at most {MAX_TABLES:,} tables")
    for node in nodes:
        key = ".".join(toml_key(p) for p in node.group.path)
        if tables:
            lines += ["", f"[owners.{key}]"]
        for note in node.notes:
            lines.extend(_comment(note))
        lines.append(f"share = {node.share}" if tables else f"{key}.share = {node.share}")
    return "\n".join(lines) + "\n"

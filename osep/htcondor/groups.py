"""The negotiator's hierarchical group quotas, written as an osep policy tree (TOML text).

Pure: configuration values in (a mapping of knob names to the strings HTCondor's ``param`` gives),
text out. :func:`osep.htcondor.live.read_group_quotas` reads the values from the negotiator; this
module never touches the bindings. What HTCondor does with the values is taken from its source, not
from memory: ``GroupEntry::hgq_construct_tree`` (the tree, and how each quota is read),
``hgq_assign_quotas`` (how quotas are handed down), ``hgq_allocate_surplus`` and
``strict_enforce_quota`` (surplus, ceilings) in ``src/condor_negotiator.V6/GroupEntry.cpp``; the
pool's size in ``matchmaker.cpp`` (``negotiationTime``, ``sumSlotWeights``,
``count_effective_slots``); ``param_double`` and ``param_boolean`` in
``src/condor_utils/condor_config.cpp`` (literals, ClassAd expressions, bounds, and the daemon
stopping on a bad value, as daemon_core asks it to); the defaults in ``param_info.in`` (where
``NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION`` is true, as the configuration reference says, though the
manual's group-quota section reads as if it were false).

How the negotiator builds its tree, and what this module follows exactly:

- ``GROUP_NAMES`` is split at commas and white space. Names are sorted without regard to case, so a
  parent comes before its subgroups; a name whose parent (the part before its last ".") is not a
  group is ignored, and so is a second spelling of a name (case does not count) and ``<none>``.
- A group's quota is ``GROUP_QUOTA_<name>`` (static: an amount of what ``SLOT_WEIGHT`` counts) when
  that is set and not NaN, else ``GROUP_QUOTA_DYNAMIC_<name>`` (a fraction, 0 to 1), else a
  dynamic 0. Both are read as numbers or ClassAd expressions; a value that is neither, or outside
  0..2^31-1 (static) or 0..1 (dynamic), makes the negotiator stop with an error.
- Quotas are handed down from the pool's size (the sum of the slots' weights): at every group,
  static subgroups first (each its own amount; scaled to fit the group only when
  ``NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION`` is false, and it is true by default), then dynamic
  subgroups share what the static ones leave, each its fraction (fractions adding up to more than 1
  are scaled to add up to 1).
- ``GROUP_ACCEPT_SURPLUS[_<name>]`` (default false): a group that does not accept surplus is a
  ceiling for itself and its subgroups together; one that does may use what others leave.
  ``GROUP_AUTOREGROUP[_<name>]``: past its quota a group's jobs also compete as jobs of no group.
- The root, ``<none>``, holds every job of no (listed) group and gets what the groups leave.

An osep share is an owner's due, taken back by vacating others when the owner wants it; it is never
a ceiling. So a group's quota becomes its share (static: an amount; dynamic: a percentage of its
parent), and every setting osep has no equal for is written as a comment on the group it concerns.
A value osep cannot take (a name its policy files refuse, a bad number) is a problem: counted,
commented, and left out or written as HTCondor would read it; never a traceback or broken TOML.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from osep.config.bounds import MAX_FILE_BYTES, MAX_NAME, MAX_OWNERS, MAX_TABLES, share_maximum
from osep.config.policy import MAX_DEPTH, RESERVED
from osep.config.toml import escape, toml_key

# The value of a ClassAd expression, as the bindings evaluate it (bool, int, float, str, or None when
# it is undefined or an error): how a knob that is not a plain literal is read.
Evaluate = Callable[[str], object]

INT_MAX = 2**31 - 1  # the largest static quota the negotiator takes (C's INT_MAX)
ROOT_NAME = "<none>"  # the negotiator's root group: jobs of no group
SHOWN = 80  # characters of a name or value from the pool shown in a comment

# Knobs read besides the per-group ones (every knob whose name starts with GROUP_ is read).
GLOBAL_KNOBS = (
    "GROUP_NAMES", "GROUP_ACCEPT_SURPLUS", "GROUP_AUTOREGROUP", "SLOT_WEIGHT",
    "NEGOTIATOR_USE_SLOT_WEIGHTS", "FORCE_NEGOTIATOR_SLOT_WEIGHT", "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION",
    "NEGOTIATOR_STRICT_ENFORCE_QUOTA", "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT", "GROUP_DYNAMIC_MACH_CONSTRAINT",
    "NEGOTIATOR_SLOT_CONSTRAINT", "NEGOTIATOR_USE_WEIGHTED_DEMAND", "GROUP_SORT_EXPR",
    "GROUP_QUOTA_ROUND_ROBIN_RATE", "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS",
)
GROUP_PREFIX = "GROUP_"
# Per-group knobs, longest prefix first (GROUP_QUOTA_DYNAMIC_x is not group DYNAMIC_x's quota).
PER_GROUP = ("GROUP_QUOTA_DYNAMIC_", "GROUP_QUOTA_", "GROUP_ACCEPT_SURPLUS_", "GROUP_AUTOREGROUP_",
             "GROUP_PRIO_FACTOR_")
# The defaults in HTCondor's param table (which win over those in the code that reads them).
DEFAULT_SORT_EXPR = ('ifThenElse(AccountingGroup=?="<none>",3.4e+38,ifThenElse(GroupQuota>0,'
                     'GroupResourcesInUse/GroupQuota,3.3e+38))')
# Knobs that change how the negotiator hands out what the quotas say, not the quotas: noted.
MECHANICS = {
    "GROUP_SORT_EXPR": "orders the groups in each negotiation cycle",
    "GROUP_QUOTA_ROUND_ROBIN_RATE": "paces how fast each group is served within a cycle",
    "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS": "how often a cycle hands out what a group could not use",
    "NEGOTIATOR_USE_WEIGHTED_DEMAND": "whether surplus follows the cores asked for or the jobs",
}

_C_SPACE = " \t\n\v\f\r"
_NAME_SEPARATORS = re.compile(r"[, \t\r\n]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
_SPECIAL = re.compile(r"([+-]?)(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_FOLD = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def fold(name: str) -> str:
    """``name`` as HTCondor compares knob and group names: ASCII letters without case (strcasecmp in
    the C locale; other characters stay as they are)."""
    return name.translate(_FOLD)


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


# -- reading values as HTCondor does -------------------------------------------------------------


class _Knobs:
    """The knobs given, looked up as HTCondor does (without regard to ASCII case), and read as its
    param_double and param_boolean read them; every problem is kept."""

    def __init__(self, knobs: Mapping[str, str], evaluate: Evaluate | None) -> None:
        self._values: dict[str, tuple[str, str]] = {}  # folded name -> (name as given, value)
        for name in sorted(knobs):
            self._values.setdefault(fold(name), (name, knobs[name]))
        self._evaluate = evaluate
        self.problems: list[str] = []

    def raw(self, name: str) -> str | None:
        entry = self._values.get(fold(name))
        return None if entry is None else entry[1]

    def names(self) -> Iterator[str]:
        return (given for given, _ in self._values.values())

    def _value(self, text: str) -> object:
        """A value that is not a plain literal, as a ClassAd expression (None: no evaluator)."""
        if self._evaluate is None:
            return None
        try:
            return self._evaluate(text)
        except Exception:  # noqa: BLE001 - a value nobody can evaluate is a bad value, nothing more
            return None

    def number(self, name: str, low: float, high: float) -> tuple[float, str | None] | None:
        """``name`` as param_double reads it with bounds ``low`` and ``high``: None when unset;
        else the value (NaN passes, as it does there) and why the negotiator would stop on it."""
        text = self.raw(name)
        if text is None:
            return None
        value = _literal(text)
        if value is None:
            result = self._value(text.strip(_C_SPACE))
            value = float(result) if isinstance(result, int | float) else None  # a bool counts as 1 or 0
        shown = f"{escape(name, SHOWN)} = {_show(text)}"
        if value is None:
            return low, f"{shown} is not a number"
        if value < low:
            return low, f"{shown} is below {_num(low)}"
        if value > high:
            return high, f"{shown} is above {_num(high)}"
        return value, None

    def flag(self, name: str, default: bool) -> tuple[bool, str | None]:
        """``name`` as param_boolean reads it: the value, and why the negotiator would stop on it."""
        text = self.raw(name)
        if text is None:
            return default, None
        for word, value in (("true", True), ("1", True), ("false", False), ("0", False)):
            if text[:len(word)].lower() == word and not text[len(word):].strip(_C_SPACE):
                return value, None
        result = self._value(text)
        if isinstance(result, bool | int | float) and not (isinstance(result, float) and math.isnan(result)):
            return bool(result), None
        return default, f"{escape(name, SHOWN)} = {_show(text)} is not true or false"


def _literal(text: str) -> float | None:
    """A number as C's strtod reads the whole of ``text`` (decimal, hexadecimal, inf, nan), or None."""
    body = text.strip(_C_SPACE)
    if _DECIMAL.fullmatch(body):
        return float(body)
    if _HEX.fullmatch(body):
        return float.fromhex(body)
    special = _SPECIAL.fullmatch(body)
    if special:
        sign = -1.0 if special[1] == "-" else 1.0
        return sign * (math.inf if special[2][0] in "iI" else math.nan)
    return None


def _show(text: str) -> str:
    """A name or value from the pool, for a comment: escaped, cut short, quoted where white space at
    its ends (or nothing at all) would not show."""
    shown = escape(text, SHOWN)
    return f"'{shown}'" if text != text.strip() or not text else shown


def _num(value: float) -> str:
    """A number for a comment: 400, 0.25, 1.5e+09."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    return f"{value:.6g}"


# -- the negotiator's tree -----------------------------------------------------------------------


@dataclass(eq=False)
class _Group:
    name: str  # as GROUP_NAMES spells it
    part: str  # its last part, as spelled there
    parent: _Group | None  # None at the root
    static: bool = False
    config: float = 0.0  # the quota configured: an amount if static, else a fraction
    surplus: bool = True  # accepts surplus (the root always does)
    autoregroup: bool = False
    children: list[_Group] = field(default_factory=list)
    by_part: dict[str, _Group] = field(default_factory=dict)  # folded part -> child
    quota: float | None = None  # what it is handed from above (its subtree's), when the pool is known
    notes: list[str] = field(default_factory=list)  # comments written on its node
    path: tuple[str, ...] = ()  # its node's key path in the osep tree


class _Tree:
    def __init__(self, knobs: _Knobs) -> None:
        self.knobs = knobs
        self.root = _Group(ROOT_NAME, ROOT_NAME, None)
        self.problems: list[str] = []  # problems with no node to be written on
        self.groups: list[_Group] = []
        default_surplus, why = knobs.flag("GROUP_ACCEPT_SURPLUS", False)
        default_regroup, why2 = knobs.flag("GROUP_AUTOREGROUP", False)
        self.problems.extend(f"{w}; the negotiator stops with an error on it" for w in (why, why2) if w)
        names = _split_names(knobs.raw("GROUP_NAMES") or "")
        for name in sorted(names, key=lambda n: fold(n).encode("utf-8", "surrogatepass")):
            if name == ROOT_NAME:
                self.problems.append(f"GROUP_NAMES lists {ROOT_NAME}, the name of the root (jobs of "
                                     "no group): HTCondor ignores it")
                continue
            self._add(name, default_surplus, default_regroup)

    def _add(self, name: str, default_surplus: bool, default_regroup: bool) -> None:
        parts = name.split(".")
        parent = self.root
        for depth, part in enumerate(parts[:-1]):
            found = parent.by_part.get(fold(part))
            if found is None:
                missing = ".".join(parts[:depth + 1])
                self.problems.append(f"group {_show(name)} is ignored by HTCondor: its parent "
                                     f"{_show(missing)} is not a group")
                return
            parent = found
        twin = parent.by_part.get(fold(parts[-1]))
        if twin is not None:
            self.problems.append(f"GROUP_NAMES lists {_show(name)} besides {_show(twin.name)}: names do "
                                 "not differ by case in HTCondor, which keeps one of them")
            return
        group = _Group(name, parts[-1], parent)
        parent.children.append(group)
        parent.by_part[fold(parts[-1])] = group
        self.groups.append(group)
        self._quota(group)
        group.surplus, why = self.knobs.flag(f"GROUP_ACCEPT_SURPLUS_{name}", default_surplus)
        self._stops(group, why)
        group.autoregroup, why = self.knobs.flag(f"GROUP_AUTOREGROUP_{name}", default_regroup)
        self._stops(group, why)
        factor = self.knobs.raw(f"GROUP_PRIO_FACTOR_{name}")
        if factor is not None:
            group.notes.append(f"GROUP_PRIO_FACTOR_{escape(name, SHOWN)} = {_show(factor)} sets its "
                               "users' priority factor, not a share: osep leaves it to the negotiator")

    def _problem(self, group: _Group, why: str) -> None:
        """A problem with ``group``'s settings: on its node, and in the list at the top."""
        group.notes.append(f"problem: {why}")
        self.problems.append(f"group {_show(group.name)}: {why}")

    def _stops(self, group: _Group, why: str | None) -> None:
        """A value the negotiator stops on (HTCondor's param functions raise in daemons); the group
        is written as the negotiator would read it were it to go on."""
        if why is not None:
            self._problem(group, f"{why}; the negotiator stops with an error on it")

    def _quota(self, group: _Group) -> None:
        """A group's configured quota, as hgq_construct_tree reads it."""
        name = group.name
        static_name, dynamic_name = f"GROUP_QUOTA_{name}", f"GROUP_QUOTA_DYNAMIC_{name}"
        static = self.knobs.number(static_name, 0.0, float(INT_MAX))
        if static is not None and not math.isnan(static[0]):
            group.static, group.config = True, static[0]
            group.notes.append(f"HTCondor: {self._said(static_name, static[0])} (static)")
            self._stops(group, static[1])
            if self.knobs.raw(dynamic_name) is not None:
                group.notes.append(f"{escape(dynamic_name, SHOWN)} is ignored: a static quota wins")
            return
        # NaN passes param_double's checks and then fails the test for a static quota (>= 0).
        nan = "" if static is None else f"{escape(static_name, SHOWN)} is NaN, which HTCondor takes as unset, and "
        dynamic = self.knobs.number(dynamic_name, 0.0, 1.0)
        if dynamic is None or math.isnan(dynamic[0]):
            why = "no quota is set" if dynamic is None else f"{escape(dynamic_name, SHOWN)} is NaN"
            self._problem(group, f"{nan}{why}: HTCondor gives it a quota of 0")
            return
        if nan:
            self._problem(group, f"{nan}its dynamic quota counts")
        group.config = dynamic[0]
        group.notes.append(f"HTCondor: {self._said(dynamic_name, dynamic[0])} (dynamic)")
        self._stops(group, dynamic[1])

    def _said(self, name: str, value: float) -> str:
        """``NAME = value`` as configured, and as read where that differs."""
        text = self.knobs.raw(name) or ""
        read = "" if _literal(text) == value else f", read as {_num(value)}"
        return f"{escape(name, SHOWN)} = {_show(text)}{read}"

    def assign(self, pool: float | None, oversubscribe: bool) -> None:
        """Every group's quota from above, as hgq_assign_quotas hands it down (None: not known
        without the pool's size)."""

        def down(group: _Group, quota: float | None) -> None:
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

        down(self.root, pool)


def _split_names(text: str) -> list[str]:
    """GROUP_NAMES's names: split at commas and white space, each trimmed of C white space."""
    return [n for n in (part.strip(_C_SPACE) for part in _NAME_SEPARATORS.split(text)) if n]


# -- the osep tree ----------------------------------------------------------------------------------


@dataclass
class _Node:
    group: _Group
    share: str  # its value, as TOML
    notes: list[str]


@dataclass
class _Unit:
    name: str  # the policy's unit
    per: float  # how many of it one quota unit is
    size: float | None  # the pool's size in quota units, when known


def translate(knobs: Mapping[str, str], pool: PoolSize = PoolSize(),
              evaluate: Evaluate | None = None) -> Translation:
    """The policy tree the negotiator's group quotas say, as TOML text, and the problems found.

    ``knobs``: the negotiator's configuration (names without regard to ASCII case); only
    ``GROUP_*`` and :data:`GLOBAL_KNOBS` are read. ``pool``: what is known of the pool (its size is
    needed only where static and dynamic quotas are siblings). ``evaluate``: reads a value that is
    not a plain number or boolean as a ClassAd expression, as HTCondor does; without it such a
    value is a problem."""
    values = _Knobs(knobs, evaluate)
    tree = _Tree(values)
    problems = tree.problems
    header: list[str] = []
    unit = _unit(values, pool, header, problems)
    oversubscribe = _flag(values, "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", True, problems)
    strict = _flag(values, "NEGOTIATOR_STRICT_ENFORCE_QUOTA", True, problems)
    tree.assign(unit.size, oversubscribe)
    nodes = _nodes(tree, unit, oversubscribe, strict)
    header.extend(_pool_notes(values, tree, pool, unit, oversubscribe, strict))
    problems[:] = dict.fromkeys(problems)  # a name listed many times is one problem
    text = _write(header, nodes, problems, unit.name, tree, pool)
    size = len(text.encode("utf-8", "replace"))
    if size > MAX_FILE_BYTES:
        problems.append(f"the text is {size:,} bytes, more than the {MAX_FILE_BYTES:,} osep reads in a "
                        "policy file: split it or shorten its comments")
        text = _write(header, nodes, problems, unit.name, tree, pool)
    return Translation(text=text, problems=tuple(problems), groups=len(nodes))


def knob_flag(knobs: Mapping[str, str], name: str, default: bool, evaluate: Evaluate | None = None) -> bool:
    """A boolean knob as HTCondor reads it (``default`` when unset or unreadable)."""
    return _Knobs(knobs, evaluate).flag(name, default)[0]


def policy_text(knobs: Mapping[str, str], pool: PoolSize = PoolSize(), evaluate: Evaluate | None = None) -> str:
    """Just the text of :func:`translate`."""
    return translate(knobs, pool, evaluate).text


def _flag(knobs: _Knobs, name: str, default: bool, problems: list[str]) -> bool:
    value, why = knobs.flag(name, default)
    if why is not None:
        problems.append(f"{why}; the negotiator stops with an error on it")
    return value


def _unit(knobs: _Knobs, pool: PoolSize, header: list[str], problems: list[str]) -> _Unit:
    """The policy's unit: what the negotiator's quotas count (NEGOTIATOR_USE_SLOT_WEIGHTS,
    SLOT_WEIGHT)."""
    if not _flag(knobs, "NEGOTIATOR_USE_SLOT_WEIGHTS", True, problems):
        header.append("NEGOTIATOR_USE_SLOT_WEIGHTS is false: quotas count slots (a partitionable slot as "
                      "its cores when sizing the pool), so the shares are slots")
        return _Unit("slots", 1.0, pool.effective)
    expression = knobs.raw("SLOT_WEIGHT") or "Cpus"
    plain = expression.strip(_C_SPACE)
    while plain.startswith("(") and plain.endswith(")"):
        plain = plain[1:-1].strip(_C_SPACE)
    words = {"CPUS": "cpus", "MEMORY": "memory", "GPUS": "gpus", "DISK": "disk"}
    constant = _literal(plain)
    forced = _flag(knobs, "FORCE_NEGOTIATOR_SLOT_WEIGHT", False, problems)
    whose = "" if forced else " (each slot's own SlotWeight counts; this one only for slots without one)"
    if fold(plain) in words:
        unit = _Unit(words[fold(plain)], 1.0, pool.weighted)
        header.append(f"SLOT_WEIGHT = {_show(expression)}: quotas count {unit.name}{whose}")
    elif constant is not None and math.isfinite(constant) and constant > 0 and math.isfinite(1.0 / constant):
        unit = _Unit("slots", 1.0 / constant, pool.weighted)
        header.append(f"SLOT_WEIGHT = {_show(expression)}: every slot weighs {_num(constant)}, so the "
                      f"shares are the quotas divided by {_num(constant)}, in slots{whose}")
    else:
        unit = _Unit("cpus", 1.0, pool.weighted)
        problems.append(f"SLOT_WEIGHT = {_show(expression)} is no one resource osep counts: the shares "
                        "are the quotas' numbers, written as cores; check them")
    if pool.weighs is not None and not forced and unit.name not in pool.weighs:
        seen = " or ".join(sorted(pool.weighs)) or "no one resource osep counts"
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


def _nodes(tree: _Tree, unit: _Unit, oversubscribe: bool, strict: bool) -> list[_Node]:
    """Every group osep can write, depth first, each with its share and comments."""
    out: list[_Node] = []
    dropped = 0

    def level(parent: _Group, path: tuple[str, ...]) -> None:
        nonlocal dropped
        shares = _sibling_shares(tree, parent, unit, oversubscribe)
        for child in parent.children:
            bad = _bad_part(child.part)
            if bad is None and len(path) >= MAX_DEPTH:
                bad = f"it is deeper than the {MAX_DEPTH} levels osep's policy files take"
            if bad is not None:
                below = _count(child)
                tree.problems.append(f"group {_show(child.name)} is not written" +
                                     (f", nor its {below:,} subgroups" if below else "") + f": {bad}")
                continue
            if len(out) >= MAX_OWNERS:
                dropped += 1 + _count(child)
                continue
            child.path = (*path, child.part)
            notes = list(child.notes)
            if ".".join(child.path) != child.name:
                notes.append(f"HTCondor names it {_show(child.name)} (the same group, case aside); osep "
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


def _count(group: _Group) -> int:
    return sum(1 + _count(c) for c in group.children)


def _sibling_shares(tree: _Tree, parent: _Group, unit: _Unit,
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
    whose = "the pool" if parent.parent is None else _show(parent.name)
    if dynamics > 0 and statics <= 0:  # percentages of the parent
        scale = max(dynamics, 1.0)
        percents = [0.0 if c.static else 100.0 * c.config / scale for c in kids]
        for child, text in zip(kids, _percentages(percents), strict=True):
            said = []
            if dynamics > 1.0 and not child.static:
                said.append(f"HTCondor: the dynamic quotas under {whose} add up to {_num(dynamics)}, so it "
                            f"scales each by 1/{_num(dynamics)}, as this share is")
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
            notes.append(f"HTCondor: {_num(child.config)} of what the static quotas beside it leave of "
                         f"{whose}, {_num(child.quota * unit.per)} {unit.name} now: osep's siblings are all "
                         "amounts or all percentages, so this amount stays when the pool's size changes")
        else:
            amount = 0.0
            tree._problem(child, f"{_num(child.config)} of what the static quotas beside it leave of "
                                 f"{whose} comes to an amount only with the pool's size, unknown here: "
                                 "written as 0")
        out[id(child)] = (_amount(tree, child, amount * unit.per, unit.name), notes)
    if parent.quota is not None and statics > parent.quota > 0 and kids:
        out[id(kids[0])][1].append(
            f"HTCondor: the static quotas under {whose} add up to {_num(statics)}, more than its "
            f"{_num(parent.quota)}: " + (
                "it keeps each whole (NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION); osep scales them to fit"
                if oversubscribe else "it scales them to fit, as osep does"))
    return out


def _amount(tree: _Tree, group: _Group, value: float, unit: str) -> str:
    """An amount of ``unit`` as TOML, within what osep's policy files take."""
    most = share_maximum(unit)
    if math.isnan(value):  # not reachable from HTCondor's values; kept from ever reaching the text
        tree._problem(group, "its share works out to no number: written as 0")
        value = 0.0
    if value > most:
        tree._problem(group, f"a share of {_num(value)} {unit} is more than osep takes: written as {_num(most)}")
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


def _pool_notes(knobs: _Knobs, tree: _Tree, pool: PoolSize, unit: _Unit, oversubscribe: bool,
                strict: bool) -> list[str]:
    """Comments for the whole file: the pool's size, the root, the settings osep has no equal for."""
    notes = []
    if unit.size is not None:
        notes.append(f"the pool's size, as the negotiator counts it for quotas: {_num(unit.size * unit.per)} "
                     f"{unit.name}")
    elif pool.problem:
        tree.problems.append(f"the pool could not be counted: {escape(pool.problem, 200)}")
    if tree.groups:
        given = sum(c.quota or 0.0 for c in tree.root.children)
        now = "" if unit.size is None else f", {_num(max(0.0, unit.size - given) * unit.per)} {unit.name} now"
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
            notes.append(f"{name} = {_show(value)}: only the slots it matches size the pool for quotas; "
                         "osep's percentages are of every slot")
    for name, what in MECHANICS.items():
        value = knobs.raw(name)
        if value is not None and not (name == "GROUP_SORT_EXPR" and value.strip(_C_SPACE) == DEFAULT_SORT_EXPR):
            notes.append(f"{name} = {_show(value)} {what}; osep has no equal")
    notes.extend(_orphans(knobs, tree))
    return notes


def _orphans(knobs: _Knobs, tree: _Tree) -> list[str]:
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


def _write(header: list[str], nodes: list[_Node], problems: list[str], unit: str, tree: _Tree,
           pool: PoolSize) -> str:
    lines = ["# An osep policy tree: the negotiator's group quotas (GROUP_NAMES, GROUP_QUOTA_*) as",
             "# `osep shares --from-pool` read them. Check it with `osep validate FILE` before using it.",
             "#",
             "# An HTCondor quota is what the negotiator hands a group; an osep share is what an owner gets",
             "# back, by vacating others' jobs, when it wants it, and never a ceiling. Where HTCondor says",
             "# more than osep can, the group's comments say what differs."]
    if pool.source:
        lines.append(f"# Read from {escape(pool.source, 200)}.")
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

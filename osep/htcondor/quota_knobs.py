"""The negotiator's group-quota knobs read as HTCondor reads them, into its tree of groups.

Pure: configuration values in (knob names to the strings HTCondor's ``param`` gives), the groups as
the negotiator has them out, each with its quota as configured. How HTCondor reads the values is taken
from its source, not from memory (``GroupEntry::hgq_construct_tree``, ``param_double`` and
``param_boolean``, the defaults in ``param_info.in``); docs/configuration.md says what that comes to.
A value the negotiator would stop on is a problem, kept on its group's notes and in the tree's list,
and read as the negotiator would read it were it to go on: never an exception.
:func:`osep.htcondor.group_reader.read_group_quotas` reads the values; :mod:`osep.htcondor.quota_shares`
turns the tree into a policy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from osep.config.toml import escape

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

C_SPACE = " \t\n\v\f\r"
_NAME_SEPARATORS = re.compile(r"[, \t\r\n]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
_SPECIAL = re.compile(r"([+-]?)(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_FOLD = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def fold(name: str) -> str:
    """``name`` as HTCondor compares knob and group names: ASCII letters without case (strcasecmp in
    the C locale; other characters stay as they are)."""
    return name.translate(_FOLD)


# -- reading values as HTCondor does -------------------------------------------------------------


class Knobs:
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
        value = literal(text)
        if value is None:
            result = self._value(text.strip(C_SPACE))
            value = float(result) if isinstance(result, int | float) else None  # a bool counts as 1 or 0
        shown = f"{escape(name, SHOWN)} = {show(text)}"
        if value is None:
            return low, f"{shown} is not a number"
        if value < low:
            return low, f"{shown} is below {num(low)}"
        if value > high:
            return high, f"{shown} is above {num(high)}"
        return value, None

    def flag(self, name: str, default: bool) -> tuple[bool, str | None]:
        """``name`` as param_boolean reads it: the value, and why the negotiator would stop on it."""
        text = self.raw(name)
        if text is None:
            return default, None
        for word, value in (("true", True), ("1", True), ("false", False), ("0", False)):
            if text[:len(word)].lower() == word and not text[len(word):].strip(C_SPACE):
                return value, None
        result = self._value(text)
        if isinstance(result, bool | int | float) and not (isinstance(result, float) and math.isnan(result)):
            return bool(result), None
        return default, f"{escape(name, SHOWN)} = {show(text)} is not true or false"


def literal(text: str) -> float | None:
    """A number as C's strtod reads the whole of ``text`` (decimal, hexadecimal, inf, nan), or None."""
    body = text.strip(C_SPACE)
    if _DECIMAL.fullmatch(body):
        return float(body)
    if _HEX.fullmatch(body):
        return float.fromhex(body)
    special = _SPECIAL.fullmatch(body)
    if special:
        sign = -1.0 if special[1] == "-" else 1.0
        return sign * (math.inf if special[2][0] in "iI" else math.nan)
    return None


def show(text: str) -> str:
    """A name or value from the pool, for a comment: escaped, cut short, quoted where white space at
    its ends (or nothing at all) would not show."""
    shown = escape(text, SHOWN)
    return f"'{shown}'" if text != text.strip() or not text else shown


def num(value: float) -> str:
    """A number for a comment: 400, 0.25, 1.5e+09."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    return f"{value:.6g}"


# -- the negotiator's tree -----------------------------------------------------------------------


@dataclass(eq=False)
class Group:
    name: str  # as GROUP_NAMES spells it
    part: str  # its last part, as spelled there
    parent: Group | None  # None at the root
    static: bool = False
    config: float = 0.0  # the quota configured: an amount if static, else a fraction
    surplus: bool = True  # accepts surplus (the root always does)
    autoregroup: bool = False
    children: list[Group] = field(default_factory=list)
    by_part: dict[str, Group] = field(default_factory=dict)  # folded part -> child
    quota: float | None = None  # what it is handed from above (its subtree's), when the pool is known
    notes: list[str] = field(default_factory=list)  # comments written on its node
    path: tuple[str, ...] = ()  # its node's key path in the osep tree


class GroupTree:
    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.root = Group(ROOT_NAME, ROOT_NAME, None)
        self.problems: list[str] = []  # problems with no node to be written on
        self.groups: list[Group] = []
        default_surplus, why = knobs.flag("GROUP_ACCEPT_SURPLUS", False)
        default_regroup, why2 = knobs.flag("GROUP_AUTOREGROUP", False)
        self.problems.extend(f"{w}; the negotiator stops with an error on it" for w in (why, why2) if w)
        names = split_names(knobs.raw("GROUP_NAMES") or "")
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
                self.problems.append(f"group {show(name)} is ignored by HTCondor: its parent "
                                     f"{show(missing)} is not a group")
                return
            parent = found
        twin = parent.by_part.get(fold(parts[-1]))
        if twin is not None:
            self.problems.append(f"GROUP_NAMES lists {show(name)} besides {show(twin.name)}: names do "
                                 "not differ by case in HTCondor, which keeps one of them")
            return
        group = Group(name, parts[-1], parent)
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
            group.notes.append(f"GROUP_PRIO_FACTOR_{escape(name, SHOWN)} = {show(factor)} sets its "
                               "users' priority factor, not a share: osep leaves it to the negotiator")

    def problem(self, group: Group, why: str) -> None:
        """A problem with ``group``'s settings: on its node, and in the list at the top."""
        group.notes.append(f"problem: {why}")
        self.problems.append(f"group {show(group.name)}: {why}")

    def _stops(self, group: Group, why: str | None) -> None:
        """A value the negotiator stops on (HTCondor's param functions raise in daemons); the group
        is written as the negotiator would read it were it to go on."""
        if why is not None:
            self.problem(group, f"{why}; the negotiator stops with an error on it")

    def _quota(self, group: Group) -> None:
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
            self.problem(group, f"{nan}{why}: HTCondor gives it a quota of 0")
            return
        if nan:
            self.problem(group, f"{nan}its dynamic quota counts")
        group.config = dynamic[0]
        group.notes.append(f"HTCondor: {self._said(dynamic_name, dynamic[0])} (dynamic)")
        self._stops(group, dynamic[1])

    def _said(self, name: str, value: float) -> str:
        """``NAME = value`` as configured, and as read where that differs."""
        text = self.knobs.raw(name) or ""
        read = "" if literal(text) == value else f", read as {num(value)}"
        return f"{escape(name, SHOWN)} = {show(text)}{read}"

def split_names(text: str) -> list[str]:
    """GROUP_NAMES's names: split at commas and white space, each trimmed of C white space."""
    return [n for n in (part.strip(C_SPACE) for part in _NAME_SEPARATORS.split(text)) if n]



def knob_flag(knobs: Mapping[str, str], name: str, default: bool, evaluate: Evaluate | None = None) -> bool:
    """A boolean knob as HTCondor reads it (``default`` when unset or unreadable)."""
    return Knobs(knobs, evaluate).flag(name, default)[0]


def pool_flag(knobs: Knobs, name: str, default: bool, problems: list[str]) -> bool:
    """A pool-wide boolean knob as HTCondor reads it; a value the negotiator stops on is one of
    ``problems``."""
    value, why = knobs.flag(name, default)
    if why is not None:
        problems.append(f"{why}; the negotiator stops with an error on it")
    return value

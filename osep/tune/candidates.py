"""The candidate settings a sweep tries: one value of each setting an administrator chooses, and the
grid of every combination of the values given for each.

A setting's values are written as a list (``1,2,4``), a range (``60..600:60``, both ends included),
a doubling range (``1..64x2``) or a mix; ``auto`` is the largest share for ``p``. A setting not
given is swept over :data:`DEFAULTS`, with the policy file's own value added, so that the policy
file's settings are always among the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from osep.bounds import MAX_INTERVAL, MAX_SECONDS, MAX_VACATES, MIN_INTERVAL
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings
from osep.errors import ConfigError
from osep.sim.specs import Order

AUTO = "auto"  # p: the largest owner share, in slots (the policy file's default)
MAX_CANDIDATES = 10_000  # the most a sweep may have: a grid past it is refused before anything runs
_MAX_VALUES = 1_000  # values of one setting


@dataclass(frozen=True, slots=True)
class Candidate:
    """One choice of every setting a sweep varies. ``max_vacates`` None: the largest share."""

    max_vacates: int | None
    interval: float
    victim_order: VictimOrder
    target: Target
    min_run_time: float
    excess: Order

    def settings(self, policy: PolicySettings) -> PolicySettings:
        """``policy`` with this candidate's p, target and victim order (its shares and unit kept)."""
        return replace(policy, max_vacates=self.max_vacates, target=self.target,
                       victim_order=self.victim_order)

    def as_dict(self) -> dict[str, Any]:
        """The candidate as the policy file's keys name its settings (``max_vacates`` None: auto)."""
        return {"max_vacates": self.max_vacates, "interval": self.interval,
                "victim_order": self.victim_order.value, "target": self.target.value,
                "min_run_time": self.min_run_time, "excess": self.excess.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        """The inverse of :meth:`as_dict`; ValueError or KeyError, TypeError on anything else."""
        p = data["max_vacates"]
        if p is not None and (type(p) is not int or not 0 <= p <= MAX_VACATES):
            raise ValueError(f"max_vacates {p!r}")
        interval, min_run = float(data["interval"]), float(data["min_run_time"])
        if not MIN_INTERVAL <= interval <= MAX_INTERVAL or not 0 <= min_run <= MAX_SECONDS:
            raise ValueError("interval or min_run_time out of bounds")
        return cls(p, interval, VictimOrder(data["victim_order"]), Target(data["target"]), min_run,
                   Order(data["excess"]))

    def key(self) -> str:
        """A short text naming the candidate, the same for equal candidates."""
        p = AUTO if self.max_vacates is None else str(self.max_vacates)
        return (f"p={p} t={self.interval:g} victims={self.victim_order.value} target={self.target.value} "
                f"min_run_time={self.min_run_time:g} excess={self.excess.value}")

    @property
    def valid(self) -> bool:
        """Whether a policy file may hold it: osep itself shares what owners leave unused under
        feasible targets, so those go with the fairshare negotiator only."""
        return self.target is Target.OWNER or self.excess is Order.FAIRSHARE


# What a setting not given is swept over (the policy file's own value is added to each).
DEFAULTS: dict[str, str] = {
    "max_vacates": "1,2,4,8,16,auto",
    "interval": "60,300,900",
    "victim_order": "wallclock,lost-work",
    "target": "",
    "min_run_time": "0,600",
    "excess": "",
}
SETTINGS = tuple(DEFAULTS)


def baseline(policy: PolicySettings, interval: float, min_run_time: float, excess: Order) -> Candidate:
    """The policy file's own settings as a candidate."""
    return Candidate(policy.max_vacates, interval, policy.victim_order, policy.target, min_run_time, excess)


def grid(given: Mapping[str, str | None], default: Candidate) -> tuple[Candidate, ...]:
    """Every combination of the values of each setting (``given`` text, or :data:`DEFAULTS`), in
    order, the ones no policy file may hold left out; the policy file's settings (``default``) are
    always among them. ConfigError naming the option for a value that is not one, or a grid larger
    than :data:`MAX_CANDIDATES`."""
    values: dict[str, list[Any]] = {}
    for name in SETTINGS:
        text = given.get(name)
        parsed = parse_values(name, text if text is not None else DEFAULTS[name])
        if text is None and getattr(default, name) not in parsed:
            parsed.append(getattr(default, name))
        values[name] = parsed
    size = math.prod(len(v) for v in values.values())
    if size > MAX_CANDIDATES:
        raise ConfigError(None, "--" + "-".join(max(values, key=lambda n: len(values[n])).split("_")),
                          f"{size:,} candidates: at most {MAX_CANDIDATES:,} are tried; give fewer values")
    out = [default]
    for combination in _product([values[n] for n in SETTINGS]):
        candidate = Candidate(*combination)
        if candidate.valid and candidate != default:
            out.append(candidate)
    return tuple(sorted(set(out), key=_order))


def _order(candidate: Candidate) -> tuple[Any, ...]:
    """Candidates in the order of their settings (p auto after every number)."""
    c = candidate
    return (math.inf if c.max_vacates is None else c.max_vacates, c.interval, c.victim_order.value,
            c.target.value, c.min_run_time, c.excess.value)


def _product(lists: list[list[Any]]) -> Iterable[tuple[Any, ...]]:
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for rest in _product(lists[1:]):
            yield (head, *rest)


def parse_values(name: str, text: str) -> list[Any]:
    """The values ``text`` lists for the setting ``name``, in order, each once (an empty text: none,
    the policy file's alone). ConfigError naming the option on a value that is not one."""
    option = "--" + name.replace("_", "-")
    out: list[Any] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        for value in _item(name, item, option):
            if value not in out:
                out.append(value)
            if len(out) > _MAX_VALUES:
                raise ConfigError(None, option, f"more than {_MAX_VALUES:,} values")
    return out


def _item(name: str, item: str, option: str) -> list[Any]:
    if name == "victim_order":
        return [_choice(VictimOrder, item, option)]
    if name == "target":
        return [_choice(Target, item, option)]
    if name == "excess":
        return [_choice(Order, item, option)]
    if name == "max_vacates" and item == AUTO:
        return [None]
    low, high = (0.0, float(MAX_VACATES)) if name == "max_vacates" else \
        (MIN_INTERVAL, MAX_INTERVAL) if name == "interval" else (0.0, MAX_SECONDS)
    numbers = _range(item, option)
    whole = name == "max_vacates"
    for number in numbers:
        if not low <= number <= high or (whole and number != int(number)):
            kind = "a whole number" if whole else "a number"
            raise ConfigError(None, option, f"{item!r}: each value must be {kind} from {low:g} to {high:g}"
                                            + (" or auto" if whole else ""))
    return [int(n) for n in numbers] if whole else [float(n) for n in numbers]


def _choice(kind: Any, item: str, option: str) -> Any:
    try:
        return kind(item)
    except ValueError:
        known = ", ".join(member.value for member in kind)
        raise ConfigError(None, option, f"{item!r} is not one of {known}") from None


def _range(item: str, option: str) -> list[float]:
    """``N``, ``A..B`` (step 1), ``A..B:S`` (step S) or ``A..BxF`` (times F), both ends included."""
    if ".." not in item:
        return [_number(item, option)]
    start_text, _, rest = item.partition("..")
    start = _number(start_text, option)
    step, factor = 1.0, None
    if "x" in rest:
        rest, _, factor_text = rest.partition("x")
        factor = _number(factor_text, option)
        if factor <= 1:
            raise ConfigError(None, option, f"{item!r}: the factor after x must be more than 1")
    elif ":" in rest:
        rest, _, step_text = rest.partition(":")
        step = _number(step_text, option)
        if step <= 0:
            raise ConfigError(None, option, f"{item!r}: the step after : must be more than 0")
    stop = _number(rest, option)
    if stop < start or (factor is not None and start <= 0):
        raise ConfigError(None, option, f"{item!r}: a range goes up from a start"
                                        + (" above 0" if factor is not None else ""))
    out: list[float] = []
    value, k = start, 0
    while value <= stop * (1 + 1e-12):
        out.append(value)
        if len(out) > _MAX_VALUES:
            raise ConfigError(None, option, f"{item!r}: more than {_MAX_VALUES:,} values")
        k += 1
        value = start * factor ** k if factor is not None else start + k * step
    return out


def _number(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(None, option, f"{text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(None, option, f"{text.strip()!r} is not a number")
    return value

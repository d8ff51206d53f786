"""What capacity is counted in, and how much of its entitlement an owner holds.

Every job and every place is described by the same few resources: ``slots``, ``cpus``, ``memory``
(MiB), ``gpus`` and ``disk`` (KiB, as HTCondor counts it), kept as a :data:`Vec` in the order of
:data:`RESOURCES`; a running job holds ``(1, cpus, memory, gpus, disk)``. The policy measures every
owner in one :class:`Unit`: one resource against its share of it, or ``dominant``, the largest of its
holding/share ratios. docs/policy.md (step 0) says how each unit measures an owner, and why
``dominant`` and not a weighted sum. Where a job fits is a separate question answered in one place:
:func:`fits`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

# Targets and shares can be fractional (percentages, the equal split of excess): compare with this.
EPS = 1e-9

RESOURCES = ("slots", "cpus", "memory", "gpus", "disk")
SLOTS, CPUS, MEMORY, GPUS, DISK = range(5)
# The resources a job asks for and a place has, in the order of a Shape and a Room.
REQUESTED = RESOURCES[1:]

Vec = tuple[float, float, float, float, float]
ZERO: Vec = (0.0, 0.0, 0.0, 0.0, 0.0)

Shape = tuple[int, int, int, int]  # what a job asks for: (cpus, memory in MiB, gpus, disk in KiB)
# What a place has room for: (cpus, memory in MiB, gpus, disk in KiB); memory or disk is None where
# the place does not say (any request fits it).
Room = tuple[int, int | None, int, int | None]
NO_ROOM: Room = (0, 0, 0, 0)
ONE_CORE: Shape = (1, 0, 0, 0)  # the paper's job: one core, nothing else asked for


class Unit(enum.Enum):
    """What an owner's share and usage are measured in."""

    SLOTS = "slots"
    CPUS = "cpus"
    MEMORY = "memory"
    GPUS = "gpus"
    DISK = "disk"
    DOMINANT = "dominant"

    @property
    def index(self) -> int | None:
        """The resource this unit counts (None for ``dominant``)."""
        return None if self is Unit.DOMINANT else RESOURCES.index(self.value)


def fits(shape: Shape, room: Room) -> bool:
    """The one fit check: whether a job asking for ``shape`` fits ``room``."""
    cpus, memory, gpus, disk = room
    return (shape[0] <= cpus and (memory is None or shape[1] <= memory) and shape[2] <= gpus
            and (disk is None or shape[3] <= disk))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _less(a: int | None, b: int) -> int | None:
    return None if a is None else max(0, a - b)


def add_room(a: Room, b: Room) -> Room:
    return (a[0] + b[0], _add(a[1], b[1]), a[2] + b[2], _add(a[3], b[3]))


def less(room: Room, shape: Shape) -> Room:
    """What is left of ``room`` once a job of ``shape`` took its part (never below nothing)."""
    return (max(0, room[0] - shape[0]), _less(room[1], shape[1]), max(0, room[2] - shape[2]),
            _less(room[3], shape[3]))


def held(shape: Shape) -> Vec:
    """What a job of ``shape`` holds once it runs: one slot and its request."""
    return (1.0, float(shape[0]), float(shape[1]), float(shape[2]), float(shape[3]))


def plus(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def minus(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4])


def _ratio(amount: float, of: float) -> float:
    if of > EPS:
        return amount / of
    return math.inf if amount > EPS else 0.0  # a share of none: any use of it is too much


@dataclass(frozen=True, slots=True)
class Measure:
    """How an owner's holding is weighed in the policy's unit: the largest of ``holding[i] / d``
    over ``divisors`` (one pair ``(i, 1.0)`` for a single resource; a divisor of 0, a resource the
    owner was given a share of none in, makes any use of it infinite)."""

    divisors: tuple[tuple[int, float], ...]
    # The one resource weighed as it is, or -1 (worked out once: a decision weighs 10,000 owners).
    _as_is: int = field(default=-1, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.divisors) == 1 and self.divisors[0][1] == 1.0:
            object.__setattr__(self, "_as_is", self.divisors[0][0])

    def __call__(self, holding: Vec) -> float:
        if self._as_is >= 0:  # one resource, as it is
            return holding[self._as_is]
        return max((_ratio(holding[i], d) for i, d in self.divisors), default=0.0)


# One measure per single-resource unit, shared by every owner (a pool has 10,000 of them).
_SINGLE = {u: Measure(((RESOURCES.index(u.value), 1.0),)) for u in Unit if u.value in RESOURCES}


def measure(unit: Unit, share: Mapping[str, float], capacity: Vec) -> tuple[Measure, float]:
    """The measure for one owner and the share it is entitled to in it. ``share``: the owner's
    resolved shares per resource it names (empty for an owner without a share)."""
    index = unit.index
    if index is not None:
        return _SINGLE[unit], share.get(RESOURCES[index], 0.0)
    # A resource the pool has none of (memory or disk where it is not modelled) cannot be weighed.
    own = tuple((RESOURCES.index(r), v) for r, v in sorted(share.items())
                if r != "slots" and capacity[RESOURCES.index(r)] > EPS)
    if any(v > EPS for _, v in own):
        return Measure(own), 1.0
    pool = tuple((i, capacity[i]) for i in range(CPUS, len(RESOURCES)) if capacity[i] > EPS)
    return Measure(pool), 0.0

"""What capacity is counted in, and how much of its entitlement an owner holds.

Every job and every place in a pool is described by the same few resources: ``slots`` (one per job,
the paper's model), ``cpus``, ``memory`` (MiB) and ``gpus``. Amounts are kept as a :data:`Vec` with one
entry per resource, in the order of :data:`RESOURCES`. A running job holds ``(1, cpus, memory, gpus)``.

The policy measures every owner in one :class:`Unit`:

- ``slots``, ``cpus``, ``memory`` or ``gpus``: what it holds of that one resource, against its share
  of that resource; the others only decide where a job fits;
- ``dominant``: its position is the largest of its holding/share ratios over the resources its share
  names (1.0 is exactly its share), so an owner using every GPU with few cores is over share. A
  resource the share does not name does not count for the owner; one it names with 0 counts
  infinitely (any use of it is over share). Owners without a share are measured by their largest
  fraction of the pool's capacity instead, and are entitled to nothing.

Where a job fits is a separate question answered in one place: :func:`fits`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass

# Targets and shares can be fractional (percentages, the equal split of excess): compare with this.
EPS = 1e-9

RESOURCES = ("slots", "cpus", "memory", "gpus")
SLOTS, CPUS, MEMORY, GPUS = range(4)

Vec = tuple[float, float, float, float]
ZERO: Vec = (0.0, 0.0, 0.0, 0.0)

Shape = tuple[int, int, int]  # what a job asks for: (cpus, memory in MiB, gpus)
# What a place has room for: (cpus, memory in MiB or None where memory is not modelled, gpus).
Room = tuple[int, int | None, int]
NO_ROOM: Room = (0, 0, 0)


class Unit(enum.Enum):
    """What an owner's share and usage are measured in."""

    SLOTS = "slots"
    CPUS = "cpus"
    MEMORY = "memory"
    GPUS = "gpus"
    DOMINANT = "dominant"

    @property
    def index(self) -> int | None:
        """The resource this unit counts (None for ``dominant``)."""
        return None if self is Unit.DOMINANT else RESOURCES.index(self.value)


def fits(shape: Shape, room: Room) -> bool:
    """The one fit check: whether a job asking for ``shape`` fits ``room``."""
    cpus, memory, gpus = room
    return shape[0] <= cpus and (memory is None or shape[1] <= memory) and shape[2] <= gpus


def add_room(a: Room, b: Room) -> Room:
    memory = None if a[1] is None or b[1] is None else a[1] + b[1]
    return (a[0] + b[0], memory, a[2] + b[2])


def less(room: Room, shape: Shape) -> Room:
    """What is left of ``room`` once a job of ``shape`` took its part (never below nothing)."""
    memory = None if room[1] is None else max(0, room[1] - shape[1])
    return (max(0, room[0] - shape[0]), memory, max(0, room[2] - shape[2]))


def held(shape: Shape) -> Vec:
    """What a job of ``shape`` holds once it runs: one slot and its request."""
    return (1.0, float(shape[0]), float(shape[1]), float(shape[2]))


def plus(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def minus(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3])


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

    def __call__(self, holding: Vec) -> float:
        if len(self.divisors) == 1 and self.divisors[0][1] == 1.0:  # one resource, as it is
            return holding[self.divisors[0][0]]
        return max((_ratio(holding[i], d) for i, d in self.divisors), default=0.0)


# One measure per single-resource unit, shared by every owner (a pool has 10,000 of them).
_SINGLE = {u: Measure(((RESOURCES.index(u.value), 1.0),)) for u in Unit if u.value in RESOURCES}


def measure(unit: Unit, share: Mapping[str, float], capacity: Vec) -> tuple[Measure, float]:
    """The measure for one owner and the share it is entitled to in it. ``share``: the owner's
    resolved shares per resource it names (empty for an owner without a share)."""
    index = unit.index
    if index is not None:
        return _SINGLE[unit], share.get(RESOURCES[index], 0.0)
    # A resource the pool has none of (memory where it is not modelled) cannot be weighed.
    own = tuple((RESOURCES.index(r), v) for r, v in sorted(share.items())
                if r != "slots" and capacity[RESOURCES.index(r)] > EPS)
    if any(v > EPS for _, v in own):
        return Measure(own), 1.0
    pool = tuple((i, capacity[i]) for i in (CPUS, MEMORY, GPUS) if capacity[i] > EPS)
    return Measure(pool), 0.0

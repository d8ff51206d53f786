"""What a meter reports: each owner's figures and the pool's (PV, LC, PC, US; see
:mod:`osep.measure.meter`), and the totals made from the owners' figures."""

from __future__ import annotations

import math
from dataclasses import dataclass

from osep.errors import OsepError


@dataclass(frozen=True, slots=True)
class OwnerMetrics:
    owner: str
    share: float
    jobs: int
    finished: int
    satisfaction: float | None  # A_US, percent; None when no job finished
    violation: float  # this owner's part of PV
    vacated: int  # runs of this owner's jobs that ended in an eviction
    lost_work: float  # work redone
    saved_work: float = 0.0  # work a checkpoint kept across an eviction
    capacity_loss: float = 0.0  # this owner's part of LC: idle time after its jobs were vacated
    vacate_time: float = 0.0  # its runs' time from the vacate signal to the release (with lost_work: its PC)


@dataclass(frozen=True, slots=True)
class Metrics:
    violation: float  # PV
    capacity_loss: float  # LC
    cost: float  # PC = lost_work + vacate_time
    vacates: int
    lost_work: float
    vacate_time: float
    makespan: float
    owners: tuple[OwnerMetrics, ...]
    saved_work: float = 0.0


class MeterError(OsepError):
    """Events that contradict each other (a job started twice, time running backwards)."""



def totals(owners: tuple[OwnerMetrics, ...], *, capacity_loss: float, vacate_time: float,
           vacates: int, makespan: float) -> Metrics:
    """The pool's figures: the owners' PV, lost and saved work summed, beside what the meter kept
    for the pool as a whole.

    Correctly rounded sums (math.fsum): built-in sum() adds floats another way from Python 3.12 on,
    and a sweep's figures must not depend on which Python ran it (a pool's job, or here)."""
    lost = math.fsum(o.lost_work for o in owners)
    return Metrics(
        violation=math.fsum(o.violation for o in owners),
        capacity_loss=capacity_loss,
        cost=lost + vacate_time,
        vacates=vacates,
        lost_work=lost,
        vacate_time=vacate_time,
        makespan=makespan,
        owners=owners,
        saved_work=math.fsum(o.saved_work for o in owners),
    )

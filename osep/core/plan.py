"""What the policy decides: the figures it decided on and the actions it plans, each with its reason.

A plan is data. Nothing here acts: the actuator (:mod:`osep.enforce.actuator`) applies a plan to a
pool, and the reports show one.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from osep.core.model import JobId


class Target(enum.Enum):
    """What an owner is held to when choosing beneficiaries and victims."""

    # The paper: f = a_i - active_i. Owners above their contributed share give way first.
    OWNER = "owner"
    # f = fes_i - active_i: the excess capacity is balanced as well.
    FEASIBLE = "feasible"


class VictimOrder(enum.Enum):
    """Which running job of the victim owner goes first."""

    # The paper: the job with the lowest wall clock of its current run.
    WALLCLOCK = "wallclock"
    # The job that would lose the least work: time since its last checkpoint (or start).
    LOST_WORK = "lost-work"


@dataclass(frozen=True, slots=True)
class OwnerView:
    """One owner's figures as the policy computed them for a snapshot (before the plan acts).

    ``active`` counts running jobs plus slots already reserved for the owner; ``gap`` is the paper's
    f = target - active (positive: the owner is owed slots; negative: it holds more than its target).
    """

    owner: str
    share: float
    running: int
    idle: int
    vacating: int
    reserved: int
    demand: int
    feasible: float
    target: float

    @property
    def active(self) -> int:
        return self.running + self.reserved

    @property
    def gap(self) -> float:
        return self.target - self.active


@dataclass(frozen=True, slots=True)
class Reason:
    """Why an action was planned, in numbers a log or a report can show as they are."""

    rule: str
    beneficiary_target: float
    beneficiary_active: int
    victim_target: float | None = None
    victim_active: int | None = None

    def text(self) -> str:
        out = (
            f"{self.rule}: beneficiary holds {self.beneficiary_active} of target "
            f"{self.beneficiary_target:g}"
        )
        if self.victim_target is not None:
            out += f"; victim owner holds {self.victim_active} of target {self.victim_target:g}"
        return out


@dataclass(frozen=True, slots=True)
class Vacate:
    """Vacate ``job`` (of ``owner``) and keep its slot for ``beneficiary``."""

    job: JobId
    owner: str
    slot: str
    beneficiary: str
    start_time: float | None
    run_time: float
    lost_work: float
    reason: Reason


@dataclass(frozen=True, slots=True)
class Claim:
    """Keep a free slot for ``beneficiary`` so that the next negotiation hands it over; no job is
    touched."""

    slot: str
    beneficiary: str
    reason: Reason


@dataclass(frozen=True, slots=True)
class Plan:
    """The outcome of one decision: what to do and the figures it was decided on.

    ``holds`` maps the owners to hold until the next cycle (everyone at or above target with idle
    jobs, for as long as some owner below target has idle jobs) to how many new slots each may still
    be given. They keep what they run; slots that free up meanwhile (a vacate, a job ending) go to the
    owners below target. The allowance is the free capacity beyond what the waiting owners can use,
    split among the held owners, so that a hold never leaves slots idle that nobody waiting wants.
    """

    time: float
    capacity: int
    max_vacates: int
    owners: tuple[OwnerView, ...]
    vacates: tuple[Vacate, ...] = ()
    claims: tuple[Claim, ...] = ()
    holds: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = field(default=())

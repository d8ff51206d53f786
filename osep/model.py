"""The project's own picture of a pool: what the policy reads and what it plans.

These types are deliberately independent of HTCondor. The live adapter translates ClassAds into them
and the simulator builds them directly, so the policy never learns where a snapshot came from.

Capacity is counted in slots: one running job holds one slot. Slots and jobs carry cpus and memory
already so that matching ("can this idle job use that freed slot?") is real, and so that shares in
cores or memory can be added later without changing the shape of a snapshot.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class JobState(enum.Enum):
    """Job states the policy distinguishes; adapters map their own states onto these."""

    IDLE = "idle"
    RUNNING = "running"
    # A vacate was sent and the job still holds its slot; it will come back as IDLE.
    VACATING = "vacating"
    HELD = "held"
    COMPLETED = "completed"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class Slot:
    """One execution slot.

    ``reserved_for`` names the owner a slot is being kept for (after a vacate, or a claim on a free
    slot); the policy counts such a slot as already belonging to that owner.
    """

    name: str
    cpus: int = 1
    memory: int | None = None  # MiB; None: not modelled, any job fits
    reserved_for: str | None = None

    def fits(self, job: Job) -> bool:
        """Whether ``job`` could run on this slot as far as the snapshot can tell."""
        if job.cpus > self.cpus:
            return False
        return self.memory is None or job.memory <= self.memory


@dataclass(frozen=True, slots=True)
class Job:
    """One job as the policy sees it.

    ``start_time`` is the start of the current run (HTCondor's JobCurrentStartDate), not of the first
    one: a job that was vacated and restarted has lost its earlier run from the policy's point of view.
    """

    id: str
    owner: str
    state: JobState
    submit_time: float = 0.0
    slot: str | None = None
    start_time: float | None = None
    checkpoint_time: float | None = None
    cpus: int = 1
    memory: int = 0

    def run_time(self, now: float) -> float:
        """Wall clock of the current run; zero for a job that is not running."""
        if self.start_time is None:
            return 0.0
        return max(0.0, now - self.start_time)

    def lost_work(self, now: float) -> float:
        """Work a vacate now would throw away: time since the last checkpoint of this run, or since
        its start when it has none."""
        if self.start_time is None:
            return 0.0
        since = self.start_time
        if self.checkpoint_time is not None and self.checkpoint_time > since:
            since = self.checkpoint_time
        return max(0.0, now - since)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A consistent view of the pool at ``time`` (seconds; epoch in a live pool, virtual in the
    simulator). The policy reads the time from here and never from a clock."""

    time: float
    slots: tuple[Slot, ...]
    jobs: tuple[Job, ...]

    @property
    def capacity(self) -> int:
        return len(self.slots)


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

    job: str
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

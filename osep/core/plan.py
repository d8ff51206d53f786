"""What the policy decides: the figures it decided on and the actions it plans, each with its reason.

A plan is data. Nothing here acts: the actuator (:mod:`osep.act.actuator`) applies a plan to a
pool, and the reports show one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from osep.core.drafts import maker
from osep.core.model import JobId
from osep.core.resources import ONE_CORE, ZERO, Shape, Unit, Vec


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

    ``running``, ``idle``, ``vacating`` and ``reserved`` count jobs (and rooms kept for the owner).
    ``share``, ``demand``, ``feasible``, ``target``, ``holding`` (its running jobs) and ``active``
    (those plus the rooms kept for it) are in the plan's unit (:class:`osep.core.resources.Unit`;
    with ``dominant``, in fractions of the owner's own share). ``gap`` is the paper's
    f = target - active (positive: the owner is owed capacity; negative: it holds more than its
    target). ``idle_cpus`` and ``kept_cpus`` are the cores its idle jobs ask for and the cores kept
    for it: what holds are counted in.
    """

    owner: str
    share: float
    running: int
    idle: int
    vacating: int
    reserved: int
    demand: float
    feasible: float
    target: float
    holding: float
    active: float
    idle_cpus: int = 0
    kept_cpus: int = 0
    # What it holds (running jobs and kept room) per resource the unit weighs (the others 0), and
    # its resolved share of each resource its share names.
    using: Vec = ZERO
    entitled: Mapping[str, float] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        return self.target - self.active


# ``OwnerView(...)`` with every field given, positionally, at a third of the cost (a decision makes
# one per owner, 10,000 of them in a large pool).
owner_view = cast(Callable[[str, float, int, int, int, int, float, float, float, float, float, int, int,
                            Vec, Mapping[str, float]], OwnerView], maker(OwnerView))


@dataclass(frozen=True, slots=True)
class GroupView:
    """One group of an owner tree (:mod:`osep.core.tree`) as the policy computed it: its members'
    figures added up, and its own share and target, all in the plan's unit. ``parent`` is "" at the
    top level."""

    name: str
    parent: str
    share: float
    demand: float
    feasible: float
    target: float
    active: float

    @property
    def gap(self) -> float:
        return self.target - self.active


@dataclass(frozen=True, slots=True)
class Reason:
    """Why an action was planned, in numbers a log or a report can show as they are."""

    rule: str
    beneficiary_target: float
    beneficiary_active: float
    victim_target: float | None = None
    victim_active: float | None = None

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
    """Vacate ``job`` (of ``owner``, on ``slot``) to make room on ``place`` for a job of
    ``beneficiary`` asking for ``room``. The vacates of one ``group`` make that room together (one
    job, or several on one partitionable slot); the room is kept once per group."""

    job: JobId
    owner: str
    slot: str
    beneficiary: str
    start_time: float | None
    run_time: float
    lost_work: float
    reason: Reason
    place: str = ""
    room: Shape = ONE_CORE
    group: int = 0


# ``Reason(...)``, every field given, positionally, at a third of the cost (a plan of 1,000 vacates
# makes one per vacate).
reason = cast(Callable[[str, float, float, float | None, float | None], Reason], maker(Reason))


# ``Vacate(...)`` with every field given, positionally, at a quarter of the cost.
vacate = cast(Callable[[JobId, str, str, str, float | None, float, float, Reason, str, Shape, int], Vacate],
              maker(Vacate))


@dataclass(frozen=True, slots=True)
class Claim:
    """Keep room on a free place (``slot``: a static slot, or a partitionable slot's unclaimed part)
    for a job of ``beneficiary`` asking for ``shape``, so that the next negotiation hands it over; no
    job is touched."""

    slot: str
    beneficiary: str
    reason: Reason
    shape: Shape = ONE_CORE
    # Room the vacates of this group left over on a partitionable slot (None: room that was free).
    after: int | None = None


# ``Claim(...)`` with every field given, positionally, at a fraction of the cost (a simulated week
# claims free room some 200,000 times).
claim = cast(Callable[[str, str, Reason, Shape, int | None], Claim], maker(Claim))


@dataclass(frozen=True, slots=True)
class Plan:
    """The outcome of one decision: what to do and the figures it was decided on.

    ``holds`` maps the owners to hold until the next cycle (everyone at or above target with idle
    jobs, for as long as some owner below target has idle jobs) to how many more cores each may still
    be given. They keep what they run; capacity that frees up meanwhile (a vacate, a job ending) goes
    to the owners below target. The allowance is the free cores beyond what the waiting owners can
    use, split among the held owners, so that a hold never leaves cores idle that nobody waiting
    wants. ``capacity`` is in slots (:attr:`osep.core.model.Snapshot.capacity`).
    """

    time: float
    capacity: int
    max_vacates: int
    owners: tuple[OwnerView, ...]
    vacates: tuple[Vacate, ...] = ()
    claims: tuple[Claim, ...] = ()
    holds: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = field(default=())
    unit: Unit = Unit.SLOTS
    totals: Vec | None = None  # the pool's capacity in every resource
    groups: tuple[GroupView, ...] = ()  # an owner tree's groups (none for flat shares)

    @property
    def size(self) -> float | None:
        """The pool's capacity in the plan's unit, the unit its shares, targets and gaps are in;
        None with ``dominant`` (each owner is weighed in fractions of its own share)."""
        index = self.unit.index
        if index is None:
            return None
        return self.totals[index] if self.totals is not None else float(self.capacity)


# ``Plan(...)`` with every field given, positionally (a simulated pool decides every few minutes of
# its time, some thousands of times a run).
plan = cast(Callable[[float, int, int, tuple[OwnerView, ...], tuple[Vacate, ...], tuple[Claim, ...],
                      Mapping[str, int], tuple[str, ...], Unit, Vec | None, tuple[GroupView, ...]], Plan],
            maker(Plan))

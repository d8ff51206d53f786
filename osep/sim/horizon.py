"""Where a simulation stops at the latest, and why: a horizon given (a scenario's ``horizon``,
``--horizon``) or the simulator's own bound on what a run may cost.

Without a horizon given, the run stops at the bound itself, the latest it may: the driver ends a
run with its last job and an idle stretch costs nothing, so a horizon computed from the workload
(say, some multiple of what a work-conserving schedule needs) could only cut short a run that drains
slowly, as one does whose vacated jobs start over, and save nothing on one that drains. The bound is
what keeps a run's cost bounded; a run that reaches it with jobs left says so (docs/simulate.md, "Bounds").
"""

from __future__ import annotations

from dataclasses import dataclass

from osep import bounds as B

BOUND = "bound"  # Horizon.by: the simulator's bound, no horizon given


@dataclass(frozen=True, slots=True)
class Horizon:
    """When a run stops at the latest (``seconds``), who set it (``by``: :data:`BOUND`, or the key
    or option that gave it), the simulator's bound (``bound``, the latest any horizon may be) and
    what the bound rests on (``why``), and how to make it later (``lift``)."""

    seconds: float
    by: str
    bound: float
    why: str
    lift: str

    @property
    def given(self) -> bool:
        """Whether a file or an option gave it (a run stopping there is as asked)."""
        return self.by != BOUND

    def named(self) -> str:
        """The horizon in words, as the messages about a run that stopped there name it."""
        if not self.given:
            return f"the simulator's bound of {self.seconds:,.0f} s ({self.why})"
        return f"the horizon of {self.seconds:,.0f} s ({self.by})"

    def advice(self) -> str:
        """How to run longer, in a few words."""
        if self.given and self.seconds < self.bound:
            return f"a {self.by} up to {self.bound:,.0f} s (the simulator's bound) runs longer"
        return f"to run longer, {self.lift}"


def simulation_limit(negotiation: float, interval: float, slots: int, jobs: int, owners: int) -> float:
    """The latest a simulation may run to, in simulated seconds: by then the pool has made at most
    ``MAX_CYCLES`` negotiation and enforcement cycles in all, and at most ``MAX_WORK`` of enforcement
    cycles x (slots + jobs / ``JOBS_PER_UNIT`` + ``OWNER_WORK`` x owners) plus negotiation cycles x
    owners. (The simulator runs only the cycles that could do something, but a file can keep every
    one of them busy: an enforcement cycle looks at every slot and owner and hands the decision the
    kept view of the jobs in flight, a negotiation cycle looks at the owners, the free slots and the
    queued jobs' shapes.)"""
    return min(within_cycles(negotiation, interval), _work(negotiation, interval, slots, jobs, owners))


def within_cycles(negotiation: float, interval: float, cycles: float = B.MAX_CYCLES) -> float:
    """The simulated seconds by which a pool negotiating every ``negotiation`` seconds and enforcing
    every ``interval`` has made ``cycles`` cycles in all."""
    return cycles / (1 / negotiation + 1 / interval)


def _work(negotiation: float, interval: float, slots: int, jobs: int, owners: int) -> float:
    per_cycle = slots + jobs / B.JOBS_PER_UNIT + B.OWNER_WORK * owners
    return B.MAX_WORK / (per_cycle / interval + owners / negotiation)


def bound_reason(negotiation: float, interval: float, slots: int, jobs: int, owners: int) -> str:
    """What the bound is, in a few words: the one of its two limits that binds."""
    cycles = f"a negotiation cycle every {negotiation:g} s and an enforcement cycle every {interval:g} s"
    if within_cycles(negotiation, interval) <= _work(negotiation, interval, slots, jobs, owners):
        return f"{B.MAX_CYCLES:,} cycles at {cycles}"
    pool = "1 slot or machine" if slots == 1 else f"{slots:,} slots and machines"
    return f"{B.MAX_WORK:,} units of work at {cycles} over {pool}, {jobs:,} jobs and {owners:,} owners"

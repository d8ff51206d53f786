"""The decision core: a pure function from a pool snapshot to a plan.

This is the paper's Decision Algorithm, rewritten as an iterative loop over heaps instead of a
recursion that rescans every owner per preemption. It is the only copy of the policy: the daemon, the
simulator, the report and replay all call :func:`decide`. One cycle, for a snapshot taken at ``now``:

1. count per owner and compute targets and gaps (:mod:`osep.core.counting`);
2. claim free slots for the owners below target, then plan up to ``p`` vacates, each with its
   beneficiary (:mod:`osep.core.victims`);
3. hold everyone else while someone below target waits (:mod:`osep.core.holds`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from osep.core.counting import count
from osep.core.holds import holds
from osep.core.model import EPS, Snapshot
from osep.core.plan import Plan, Target, Vacate, VictimOrder
from osep.core.shares import ShareTable
from osep.core.victims import Wants, claim_free_slots, plan_vacates


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Everything the decision depends on besides the snapshot."""

    shares: ShareTable
    target: Target = Target.OWNER
    victim_order: VictimOrder = VictimOrder.WALLCLOCK
    # p: at most this many vacates per cycle. None: the largest owner share (the paper's finding that
    # enforcing in a single cycle is cheapest).
    max_vacates: int | None = None

    def vacate_budget(self, capacity: int) -> int:
        if self.max_vacates is not None:
            return self.max_vacates
        return math.ceil(self.shares.largest(capacity) - EPS)


def decide(snapshot: Snapshot, settings: PolicySettings) -> Plan:
    """Plan the vacates and claims that move owners towards their targets for one cycle."""
    census = count(snapshot, settings.shares, settings.target)
    views = census.views
    gap = census.gaps()
    budget = max(0, settings.vacate_budget(snapshot.capacity))
    wants = {
        o: Wants(census.idle[o], v.reserved)
        for o, v in views.items()
        if gap[o] > EPS and v.idle > v.reserved
    }
    claims = claim_free_slots(census.free, wants, gap, views)
    vacates: list[Vacate] = []
    if budget > 0 and wants:
        vacates = plan_vacates(budget, wants, gap, views, census.running, census.slots,
                               settings.target, settings.victim_order, snapshot.time)
    held = holds(views, {v.owner for v in vacates}, len(census.free), len(vacates))
    notes: list[str] = []
    if census.unplaced:
        notes.append(f"{census.unplaced} running job(s) on slots missing from the snapshot: "
                     "never victims")
    return Plan(
        time=snapshot.time,
        capacity=snapshot.capacity,
        max_vacates=budget,
        owners=tuple(views.values()),
        vacates=tuple(vacates),
        claims=tuple(claims),
        holds=held,
        notes=tuple(notes),
    )

"""The decision core: a pure function from a pool snapshot to a plan.

This is the paper's Decision Algorithm, rewritten as an iterative loop over heaps instead of a
recursion that rescans every owner per preemption. It is the only copy of the policy: the daemon, the
simulator, the report and replay all call :func:`decide`. One cycle, for a snapshot taken at ``now``:

1. count per owner and compute targets and gaps (:mod:`osep.core.counting`), into a ledger
   (:mod:`osep.core.ledger`) the later steps update;
2. claim free room for the owners below target (:mod:`osep.core.claims`), as their wants book
   says what they still want (:mod:`osep.core.wants`);
3. plan up to ``p`` vacates, each with its beneficiary (:mod:`osep.core.vacates`), from the victims
   :mod:`osep.core.victims` chooses;
4. hold everyone else while someone below target waits (:mod:`osep.core.holds`).
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass
from operator import attrgetter

from osep.core.claims import claim_free_room
from osep.core.counting import count_view
from osep.core.holds import holds, kept_now
from osep.core.model import Snapshot
from osep.core.plan import Plan, Target, Vacate, VictimOrder, plan
from osep.core.recent import Recent
from osep.core.resources import EPS, RESOURCES, SLOTS, Room, Unit, Vec
from osep.core.shares import ShareTable
from osep.core.tree import ShareTree
from osep.core.vacates import plan_vacates
from osep.core.view import view_of
from osep.core.wants import WantsBook


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Everything the decision depends on besides the snapshot."""

    shares: ShareTable | ShareTree
    target: Target = Target.OWNER
    victim_order: VictimOrder = VictimOrder.WALLCLOCK
    # p: at most this many vacates per cycle. None: the largest owner share in slots (the paper's
    # finding that enforcing in a single cycle is cheapest).
    max_vacates: int | None = None
    unit: Unit = Unit.SLOTS

    def __post_init__(self) -> None:
        if self.unit is Unit.DOMINANT and self.target is Target.FEASIBLE:
            raise ValueError("feasible targets need one resource to fill: with the dominant unit, "
                             "use owner targets")
        if isinstance(self.shares, ShareTree) and self.shares.resource != self.unit.value:
            raise ValueError(f"an owner tree's shares are in one resource, the unit's: "
                             f"{self.shares.resource!r} is not {self.unit.value!r}")

    def budget_for(self, totals: Vec) -> int:
        """p for a pool with ``totals`` in every resource, as the decision works it out (in slots,
        the paper's largest share, with ``unit = "slots"``)."""
        return self.vacate_budget(int(totals[SLOTS]) if self.unit is Unit.SLOTS else totals)

    def vacate_budget(self, capacity: int | Vec) -> int:
        """p for a pool of ``capacity`` (slots, or every resource): the largest fraction of the pool
        any owner contributed, in slots (the largest share in slots where shares are in slots)."""
        if self.max_vacates is not None:
            return self.max_vacates
        if isinstance(capacity, int):
            return math.ceil(self.shares.largest(capacity) - EPS)
        largest = 0.0
        for owner_shares in self.shares.resolve_all(capacity).values():
            for resource, amount in owner_shares.items():
                total = capacity[RESOURCES.index(resource)]
                if total > EPS:
                    largest = max(largest, amount / total)
        return math.ceil(largest * capacity[SLOTS] - EPS)


# p for the settings and pool capacity met last.
_BUDGETS: Recent[int] = Recent()


def _budget(settings: PolicySettings, totals: Vec) -> int:
    """:meth:`PolicySettings.budget_for`, worked out once per settings and capacity."""
    budget = _BUDGETS.get(settings, totals)
    if budget is None:
        budget = _BUDGETS.put(settings, totals, settings.budget_for(totals))
    return budget


def decide(snapshot: Snapshot, settings: PolicySettings) -> Plan:
    """Plan the vacates and claims that move owners towards their targets for one cycle. Reads the
    pool view the snapshot carries, or one built from its jobs (:func:`osep.core.view.view_of`);
    changes neither."""
    # The cyclic garbage collector waits while a decision runs. A decision allocates some tens of
    # thousands of objects (an OwnerView per owner, a record per vacate) and makes no cycles: what
    # it drops, reference counting frees. Yet every 700 allocations the collector would run, each
    # time looking at everything allocated since, among a pool of millions of objects: a tenth of
    # a large pool's decision. It runs again at the next allocation after the decision.
    if not gc.isenabled():
        return _decide(snapshot, settings)
    gc.disable()
    try:
        return _decide(snapshot, settings)
    finally:
        gc.enable()


def _decide(snapshot: Snapshot, settings: PolicySettings) -> Plan:
    pool = view_of(snapshot)
    census = count_view(pool, snapshot.kept, settings.shares, settings.target, settings.unit)
    views, ledger = census.views, census.ledger
    budget = max(0, _budget(settings, census.capacity))
    wants = WantsBook(census.below, pool.tallies, views)
    free_cpus = census.free_cpus
    partitionable = pool.rooms
    left: dict[str, Room] = {}  # the partitionable slots' room the claims left
    claims = claim_free_room(census.free_places(), wants, ledger, views, partitionable, left) \
        if census.free_static or census.free_open else []
    notes: list[str] = []
    vacates: list[Vacate] = []
    if budget > 0 and wants:
        # The partitionable slots' room as claims left it (a copy: the view's is never changed).
        rooms = dict(census.rooms)
        rooms.update(left)
        vacates = plan_vacates(budget, wants, ledger, views, pool, rooms, settings.target,
                               settings.victim_order, snapshot.time, notes, claims, census.above)
    # The cores the vacates free (of the slots the snapshot has), and the owners losing jobs: at C
    # speed, as a plan may have a thousand vacates.
    places = filter(None, map(pool.slots.get, map(attrgetter("slot"), vacates)))
    freed = sum(map(attrgetter("cpus"), places))
    # The room the vacates make for the waiting owners is theirs whole: none of its free part is
    # handed out as the held owners' allowances.
    planned = kept_now(vacates) if free_cpus > 0 else None
    held = holds(census.busy, set(map(attrgetter("owner"), vacates)), free_cpus, freed,
                 by_cores=settings.unit in (Unit.SLOTS, Unit.CPUS), planned=planned)
    if pool.unplaced:
        notes.append(f"{pool.unplaced} running job(s) on slots missing from the snapshot: "
                     "never victims")
    if pool.duplicates:
        notes.append(f"{pool.duplicates} job(s) or slot(s) listed twice in the snapshot: the last "
                     "one counted")
    return plan(snapshot.time, pool.capacity, budget, tuple(views.values()), tuple(vacates),
                tuple(claims), held, tuple(notes), settings.unit, census.capacity, census.groups)

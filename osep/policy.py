"""The decision core: a pure function from a pool snapshot to a plan.

This is the paper's Decision Algorithm, rewritten as an iterative loop over heaps instead of a
recursion that rescans every owner per preemption. It is the only copy of the policy: the daemon, the
simulator and replay all call :func:`decide`.

One cycle, for a snapshot taken at time ``now``:

1. Count per owner: running jobs, idle jobs, jobs being vacated, and slots already reserved for the
   owner (free or still being vacated). ``active = running + reserved``; demand ``d = running + vacating
   + idle``. Held jobs are not demand.
2. Resolve owner shares (:mod:`osep.shares`), compute feasible shares, and pick each owner's target:
   its owner share (paper) or its feasible share. The gap is ``f = target - active``.
3. Free slots first: a free, unreserved slot that an owner below target can use is claimed for the owner
   with the largest gap. No job is touched for these, and they do not count against ``p``.
4. Holds: while some owner below its target (counting only running jobs) has idle jobs, every other
   owner with idle jobs, or losing a job to a vacate, is held at what it runs: it keeps its jobs but
   gets no new slot, so slots freed by vacates or by jobs ending reach the owners below target.
   Nothing is held when nobody below target is waiting.
5. Then, while fewer than ``p`` vacates are planned: the beneficiary is the owner with the largest gap
   (f > 0) that still has an idle job not yet provided for; the victim owner is the owner with the most
   negative gap that is at least one whole slot above its target (f <= -1), so that a vacate never
   pushes it below target; the victim is that owner's running job with the lowest wall clock (or the
   least work to lose) whose slot one of the beneficiary's idle jobs fits. If the most-over owner has no
   such job, the next one is tried; if none has, the beneficiary is passed over for this cycle.

Each step lowers the sum of |f| over owners, so a plan never undoes itself within a snapshot. Ties are
broken by owner name and job id, so the same snapshot always yields the same plan.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from osep.model import (
    Claim,
    Job,
    JobState,
    OwnerView,
    Plan,
    Reason,
    Slot,
    Snapshot,
    Target,
    Vacate,
    VictimOrder,
)
from osep.shares import ShareTable, feasible_shares

# Targets can be fractional (shares in percent, excess split equally); compare with a tolerance.
EPS = 1e-9

Shape = tuple[int, int]  # (cpus, memory) of an idle job


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Everything the decision depends on besides the snapshot."""

    shares: ShareTable
    target: Target = Target.OWNER
    victim_order: VictimOrder = VictimOrder.WALLCLOCK
    # p: at most this many vacates per cycle. None: the largest owner share (the paper's finding that
    # enforcing in a single cycle is cheapest).
    max_vacates: int | None = None
    # t: seconds between cycles. The policy itself does not use it; the loop that calls it does.
    interval: float = 300.0

    def vacate_budget(self, capacity: int) -> int:
        if self.max_vacates is not None:
            return self.max_vacates
        return math.ceil(self.shares.largest(capacity) - EPS)


def _shape_fits(slot: Slot, shape: Shape) -> bool:
    cpus, memory = shape
    return cpus <= slot.cpus and (slot.memory is None or memory <= slot.memory)


class _Wants:
    """The idle jobs of one owner that no slot has been found for yet, grouped by shape.

    Only counts per shape are kept: which of the owner's idle jobs ends up on a slot is the
    negotiator's business; the policy only needs to know that one of them can use it.
    """

    __slots__ = ("shapes",)

    def __init__(self, jobs: list[Job], already_served: int) -> None:
        counts = Counter((j.cpus, j.memory) for j in jobs)
        self.shapes: dict[Shape, int] = dict(sorted(counts.items()))
        # Reserved slots will take some of these jobs; drop the smallest shapes first, they fit most.
        for _ in range(already_served):
            self._take_first()

    def _take_first(self) -> None:
        for shape in self.shapes:
            self._consume(shape)
            return

    def _consume(self, shape: Shape) -> None:
        left = self.shapes[shape] - 1
        if left:
            self.shapes[shape] = left
        else:
            del self.shapes[shape]

    def __bool__(self) -> bool:
        return bool(self.shapes)

    def take(self, slot: Slot) -> bool:
        """Provide one idle job for ``slot`` if any fits; largest fitting shape first, so that small
        jobs stay available for small slots."""
        for shape in reversed(self.shapes):
            if _shape_fits(slot, shape):
                self._consume(shape)
                return True
        return False

    def any_fits(self, slot: Slot) -> bool:
        return any(_shape_fits(slot, shape) for shape in self.shapes)


class _Victims:
    """One owner's running jobs, in the order they would be vacated, consumed lazily."""

    __slots__ = ("jobs", "next", "taken")

    def __init__(self, jobs: list[Job], order: VictimOrder, now: float) -> None:
        if order is VictimOrder.WALLCLOCK:
            self.jobs = sorted(jobs, key=lambda j: (j.run_time(now), j.id))
        else:
            self.jobs = sorted(jobs, key=lambda j: (j.lost_work(now), j.run_time(now), j.id))
        self.next = 0
        self.taken: set[int] = set()

    def pop_fitting(self, wants: _Wants, slots: dict[str, Slot]) -> tuple[Job, Slot] | None:
        """The first job in order whose slot the beneficiary can use; None if there is none."""
        while self.next < len(self.jobs) and self.next in self.taken:
            self.next += 1
        for index in range(self.next, len(self.jobs)):
            if index in self.taken:
                continue
            job = self.jobs[index]
            slot = slots[job.slot]  # type: ignore[index]
            if wants.any_fits(slot):
                self.taken.add(index)
                return job, slot
        return None


def decide(snapshot: Snapshot, settings: PolicySettings) -> Plan:
    """Plan the vacates and claims that move owners towards their targets for one cycle."""
    now = snapshot.time
    capacity = snapshot.capacity
    budget = max(0, settings.vacate_budget(capacity))
    slots = {s.name: s for s in snapshot.slots}

    running: dict[str, list[Job]] = defaultdict(list)
    idle: dict[str, list[Job]] = defaultdict(list)
    vacating: Counter[str] = Counter()
    busy: set[str] = set()  # slots with a running job
    leaving: set[str] = set()  # slots whose job is being vacated
    unplaced = 0
    for job in snapshot.jobs:
        state = job.state
        if state is JobState.RUNNING:
            running[job.owner].append(job)
            if job.slot in slots:
                busy.add(job.slot)  # type: ignore[arg-type]
            else:
                unplaced += 1
        elif state is JobState.IDLE:
            idle[job.owner].append(job)
        elif state is JobState.VACATING:
            vacating[job.owner] += 1
            if job.slot is not None:
                leaving.add(job.slot)

    # Reservations count for their owner only while the slot is not running a job and the owner has
    # idle jobs to put there; anything else is stale and left for the pool to expire.
    reserved: Counter[str] = Counter()
    free: list[Slot] = []
    for slot in snapshot.slots:
        if slot.name in busy:
            continue
        if slot.reserved_for is not None:
            if reserved[slot.reserved_for] < len(idle.get(slot.reserved_for, ())):
                reserved[slot.reserved_for] += 1
        elif slot.name not in leaving:
            free.append(slot)

    shares = settings.shares.resolve(capacity)
    owners = sorted(set(shares) | set(running) | set(idle) | set(vacating))
    demand = {
        o: len(running.get(o, ())) + vacating[o] + len(idle.get(o, ())) for o in owners
    }
    fes = feasible_shares(shares, demand, capacity)
    views: dict[str, OwnerView] = {}
    for o in owners:
        target = fes[o] if settings.target is Target.FEASIBLE else shares.get(o, 0.0)
        views[o] = OwnerView(
            owner=o,
            share=shares.get(o, 0.0),
            running=len(running.get(o, ())),
            idle=len(idle.get(o, ())),
            vacating=vacating[o],
            reserved=reserved[o],
            demand=demand[o],
            feasible=fes[o],
            target=target,
        )
    gap = {o: v.gap for o, v in views.items()}

    wants: dict[str, _Wants] = {}
    for o in owners:
        if gap[o] > EPS and views[o].idle > reserved[o]:
            wants[o] = _Wants(idle[o], reserved[o])

    claims = _claim_free_slots(free, wants, gap, views)

    vacates: list[Vacate] = []
    if budget > 0 and wants:
        vacates = _plan_vacates(
            budget, wants, gap, views, running, slots, settings, now
        )

    holds = _holds(views, {v.owner for v in vacates}, len(free), len(vacates))

    notes: list[str] = []
    if unplaced:
        notes.append(f"{unplaced} running job(s) on slots missing from the snapshot: never victims")
    return Plan(
        time=now,
        capacity=capacity,
        max_vacates=budget,
        owners=tuple(views[o] for o in owners),
        vacates=tuple(vacates),
        claims=tuple(claims),
        holds=holds,
        notes=tuple(notes),
    )


def _holds(views: dict[str, OwnerView], losing: set[str], free: int, vacated: int
           ) -> dict[str, int]:
    """Owners to keep from growing while someone below target waits, each with the number of new
    slots it may still be given (owners in name order). Owners that lose a job in this plan are
    among them: the vacated job is idle again within seconds.

    The allowance: the free slots beyond what the waiting owners can still take (their idle jobs,
    up to their target, less the slots already reserved for them and those this plan's vacates
    free), split evenly among the held owners with idle jobs. Without it a hold would leave free
    slots idle for a whole cycle whenever the owners below target wanted fewer than were free.
    """

    def waiting(v: OwnerView) -> bool:
        return v.idle > 0 and v.target - v.running > EPS

    if not any(waiting(v) for v in views.values()):
        return {}
    held = [o for o, v in views.items()
            if not waiting(v) and (v.idle > 0 or v.vacating > 0 or o in losing)]
    need = sum(
        max(0, min(v.idle - v.reserved, math.ceil(v.gap - EPS)))
        for v in views.values() if waiting(v)
    )
    spare = max(0, free - max(0, need - vacated))
    allowance = dict.fromkeys(held, 0)
    hungry = sorted((views[o].idle, o) for o in held if views[o].idle > 0)
    for index, (idle, owner) in enumerate(hungry):
        portion = spare // (len(hungry) - index)
        allowance[owner] = min(idle, portion)
        spare -= allowance[owner]
    return allowance


def _beneficiary_heap(wants: dict[str, _Wants], gap: dict[str, float]) -> list[tuple[float, str]]:
    heap = [(-gap[o], o) for o, w in wants.items() if w and gap[o] > EPS]
    heapq.heapify(heap)
    return heap


def _claim_free_slots(
    free: list[Slot],
    wants: dict[str, _Wants],
    gap: dict[str, float],
    views: dict[str, OwnerView],
) -> list[Claim]:
    """Hand free slots to owners below target, largest gap first, one slot at a time."""
    claims: list[Claim] = []
    if not free or not wants:
        return claims
    heap = _beneficiary_heap(wants, gap)
    passed: list[tuple[float, str]] = []
    for slot in free:
        # Owners that cannot use this slot are set aside and come back for the next one.
        while heap:
            neg_gap, owner = heapq.heappop(heap)
            if wants[owner].take(slot):
                view = views[owner]
                claims.append(
                    Claim(
                        slot=slot.name,
                        beneficiary=owner,
                        reason=Reason(
                            rule="free slot to the owner furthest below target",
                            beneficiary_target=view.target,
                            beneficiary_active=round(view.target - gap[owner]),
                        ),
                    )
                )
                gap[owner] -= 1
                if gap[owner] > EPS and wants[owner]:
                    heapq.heappush(heap, (-gap[owner], owner))
                break
            passed.append((neg_gap, owner))
        for entry in passed:
            heapq.heappush(heap, entry)
        passed.clear()
        if not heap:
            break
    return claims


def _plan_vacates(
    budget: int,
    wants: dict[str, _Wants],
    gap: dict[str, float],
    views: dict[str, OwnerView],
    running: dict[str, list[Job]],
    slots: dict[str, Slot],
    settings: PolicySettings,
    now: float,
) -> list[Vacate]:
    """The Decision Algorithm proper: up to ``budget`` vacates, each with its beneficiary."""
    beneficiaries = _beneficiary_heap(wants, gap)
    over = [(gap[o], o) for o in gap if gap[o] <= -1 + EPS and running.get(o)]
    heapq.heapify(over)
    queues: dict[str, _Victims] = {}
    rule = (
        f"vacate for the owner furthest below its {settings.target.value} target, from the owner "
        f"furthest above its own, lowest {settings.victim_order.value} first"
    )
    vacates: list[Vacate] = []
    while beneficiaries and over and len(vacates) < budget:
        _, ben = heapq.heappop(beneficiaries)
        found: tuple[str, Job, Slot] | None = None
        tried: list[tuple[float, str]] = []
        while over:
            entry = heapq.heappop(over)
            owner = entry[1]
            queue = queues.get(owner)
            if queue is None:
                placed = [j for j in running[owner] if j.slot in slots]
                queue = queues[owner] = _Victims(placed, settings.victim_order, now)
            hit = queue.pop_fitting(wants[ben], slots)
            if hit is not None:
                found = (owner, hit[0], hit[1])
                break
            tried.append(entry)
        for entry in tried:
            heapq.heappush(over, entry)
        if found is None:
            continue  # nothing running anywhere that this beneficiary's jobs could use
        owner, job, slot = found
        wants[ben].take(slot)
        victim_view, ben_view = views[owner], views[ben]
        vacates.append(
            Vacate(
                job=job.id,
                owner=owner,
                slot=slot.name,
                beneficiary=ben,
                start_time=job.start_time,
                run_time=job.run_time(now),
                lost_work=job.lost_work(now),
                reason=Reason(
                    rule=rule,
                    beneficiary_target=ben_view.target,
                    beneficiary_active=round(ben_view.target - gap[ben]),
                    victim_target=victim_view.target,
                    victim_active=round(victim_view.target - gap[owner]),
                ),
            )
        )
        gap[owner] += 1
        gap[ben] -= 1
        if gap[owner] <= -1 + EPS:
            heapq.heappush(over, (gap[owner], owner))
        if gap[ben] > EPS and wants[ben]:
            heapq.heappush(beneficiaries, (-gap[ben], ben))
    return vacates

"""The Decision Algorithm proper: who gets the free slots, and whose jobs are vacated for whom.

Free slots first: a free, unreserved slot that an owner below target can use is claimed for the owner
with the largest gap. No job is touched for these, and they do not count against ``p``.

Then, while fewer than ``p`` vacates are planned: the beneficiary is the owner with the largest gap
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
from collections import Counter

from osep.core.model import EPS, Job, Shape, Slot
from osep.core.plan import Claim, OwnerView, Reason, Target, Vacate, VictimOrder


class Wants:
    """The idle jobs of one owner that no slot has been found for yet, grouped by shape.

    Only counts per shape are kept: which of the owner's idle jobs ends up on a slot is the
    negotiator's business; the policy only needs to know that one of them can use it.
    """

    __slots__ = ("shapes",)

    def __init__(self, jobs: list[Job], already_served: int) -> None:
        counts = Counter(j.shape for j in jobs)
        self.shapes: dict[Shape, int] = dict(sorted(counts.items()))
        # Reserved slots will take some of these jobs; drop the smallest shapes first, they fit most.
        for _ in range(min(already_served, len(jobs))):
            self._consume(next(iter(self.shapes)))

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
            if slot.fits(shape):
                self._consume(shape)
                return True
        return False

    def any_fits(self, slot: Slot) -> bool:
        return any(slot.fits(shape) for shape in self.shapes)


class _Victims:
    """One owner's running jobs, in the order they would be vacated, consumed lazily."""

    __slots__ = ("jobs", "next", "taken")

    def __init__(self, jobs: list[Job], order: VictimOrder, now: float) -> None:
        # Equal wall clocks (or lost work) go by job id: schedd, then cluster and proc, the order
        # in which HTCondor numbers jobs.
        if order is VictimOrder.WALLCLOCK:
            self.jobs = sorted(jobs, key=lambda j: (j.run_time(now), j.id))
        else:
            self.jobs = sorted(jobs, key=lambda j: (j.lost_work(now), j.run_time(now), j.id))
        self.next = 0
        self.taken: set[int] = set()

    def pop_fitting(self, wants: Wants, slots: dict[str, Slot]) -> tuple[Job, Slot] | None:
        """The first job in order whose slot the beneficiary can use; None if there is none."""
        while self.next < len(self.jobs) and self.next in self.taken:
            self.next += 1
        for index in range(self.next, len(self.jobs)):
            if index in self.taken:
                continue
            job = self.jobs[index]
            slot = slots[job.slot] if job.slot is not None else None
            if slot is not None and wants.any_fits(slot):
                self.taken.add(index)
                return job, slot
        return None


def _beneficiary_heap(wants: dict[str, Wants], gap: dict[str, float]) -> list[tuple[float, str]]:
    heap = [(-gap[o], o) for o, w in wants.items() if w and gap[o] > EPS]
    heapq.heapify(heap)
    return heap


def claim_free_slots(
    free: list[Slot], wants: dict[str, Wants], gap: dict[str, float], views: dict[str, OwnerView]
) -> list[Claim]:
    """Hand free slots to owners below target, largest gap first, one slot at a time. Updates
    ``gap`` and ``wants`` for what it hands out."""
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


def plan_vacates(
    budget: int,
    wants: dict[str, Wants],
    gap: dict[str, float],
    views: dict[str, OwnerView],
    running: dict[str, list[Job]],
    slots: dict[str, Slot],
    target: Target,
    order: VictimOrder,
    now: float,
) -> list[Vacate]:
    """Up to ``budget`` vacates, each with its beneficiary. Updates ``gap`` and ``wants``."""
    beneficiaries = _beneficiary_heap(wants, gap)
    over = [(gap[o], o) for o in gap if gap[o] <= -1 + EPS and running.get(o)]
    heapq.heapify(over)
    queues: dict[str, _Victims] = {}
    rule = (
        f"vacate for the owner furthest below its {target.value} target, from the owner "
        f"furthest above its own, lowest {order.value} first"
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
                # A job whose start is unknown cannot be weighed against the others: never a victim.
                placed = [j for j in running[owner] if j.slot in slots and j.start_time is not None]
                queue = queues[owner] = _Victims(placed, order, now)
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

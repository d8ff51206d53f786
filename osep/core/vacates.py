"""Step three of a decision: plan up to ``p`` vacates, each with its beneficiary.

While fewer than ``p`` vacates are planned, the beneficiary is the owner with the largest gap that
still has an idle job not yet provided for (:func:`osep.core.wants.beneficiaries`). Room is made for
one of its idle jobs, tried in queue order of their shapes (the job the negotiator would start
first): from room earlier vacates of this plan left over, else by the victims
:class:`osep.core.victims.Search` finds (one, else a set on one partitionable slot no larger than
what is left of ``p``). A job that fits no place in the pool, even empty, is never vacated for (the
plan notes it). A beneficiary no room can be made for is passed over for this cycle.

Victims only ever end at or above their target and beneficiaries only gain, so a plan never undoes
itself within a snapshot, and the next cycle does not hand back what this one took (no ping-pong).
Ties are broken by owner name, job id and place name, so the same snapshot always yields the same
plan.
"""

from __future__ import annotations

import heapq
from collections.abc import MutableMapping

from osep.core.ledger import Ledger, Rank, reason_for
from osep.core.plan import Claim, OwnerView, Target, Vacate, VictimOrder, reason, vacate
from osep.core.resources import EPS, Room, Shape, held
from osep.core.victims import Search, Victim
from osep.core.view import PoolView
from osep.core.wants import WantsBook, beneficiaries


def plan_vacates(
    budget: int,
    wants: WantsBook,
    ledger: Ledger,
    views: dict[str, OwnerView],
    pool: PoolView,
    free: MutableMapping[str, Room],
    target: Target,
    order: VictimOrder,
    now: float,
    notes: list[str],
    claims: list[Claim],
    above: list[str],
) -> list[Vacate]:
    """Up to ``budget`` vacates, each with its beneficiary. Updates ``ledger`` and ``wants``; adds
    to ``notes`` the jobs no room can be made for, and to ``claims`` (the claims made so far, whose
    owners are never victims) room that earlier vacates left over. ``above``: the owners above
    target with running jobs, as counted before the claims (:attr:`osep.core.counting.Census.above`)."""
    # Flat, the owners still below target with idle jobs are those the claims left in their heap.
    ranked = wants.ranked if wants.ranked is not None else beneficiaries(wants, ledger)
    if not ranked:  # the claims served everyone below target (most cycles of a busy pool)
        return []
    search = Search(pool, free, order, now, above)
    search.gainers = {c.beneficiary for c in claims}
    holds, somewhere = search.holds, search.somewhere
    partitionable = bool(pool.rooms)
    flat = ledger.groups is None
    rule = (
        f"vacate for the owner furthest below its {target.value} target, from the owner "
        f"furthest above its own, lowest {order.value} first"
    )
    vacates: list[Vacate] = []
    group = 0
    passed: set[str] = set()  # beneficiaries no room can be made for this cycle
    # The beneficiary stays on top of its heap while room is sought for it: given room, it is put
    # back where it ranks now in one sift (or taken out), passed over, taken out.
    while ranked and len(vacates) < budget:
        ben = ranked[0][1]
        found: tuple[Shape, list[Victim]] | None = None
        wanted = wants[ben]
        for shape in list(wanted.shapes):
            if shape not in somewhere and not search.fits_anywhere(shape):
                notes.append(f"{ben}: {wanted.shapes[shape]} idle job(s) asking for "
                             f"{_show(shape)} fit no place in the pool: never vacated for")
                del wanted.shapes[shape]
                continue
            left = search.left_over(shape) if search.leftover else None
            if left is not None:
                found = (shape, [])
                claims.append(Claim(left[0], ben, reason_for("room left over by vacates this cycle",
                                                             ledger, views, ben), shape, after=left[1]))
                break
            victims = search.single(shape, ledger, ben)
            if victims is None and budget - len(vacates) >= 2 and partitionable:
                victims = search.several(shape, ledger, budget - len(vacates), ben)
            if victims:  # an empty set would mean the room was there all along: not for a vacate
                found = (shape, victims)
                break
        if found is None:
            heapq.heappop(ranked)
            passed.add(ben)
            continue  # nothing running anywhere can make room for this beneficiary's jobs
        shape, victims = found
        wanted.consume(shape)
        if not victims:  # room left over: claimed above
            ledger.give(ben, held(shape))
            search.gainers.add(ben)
            ranked = _next(ranked, ben, wants, ledger, passed)
            continue
        place = search.vacated(victims, shape, group)
        # What reason_for gives: the beneficiary's figures stay as they are until it is given the room.
        ben_target, ben_active = views[ben].target, ledger.active(ben)
        for job in victims:
            owner = job.owner
            vacates.append(vacate(job.id, owner, job.slot, ben, job.start_time,
                                  job.run_time, job.lost_work,
                                  reason(rule, ben_target, ben_active, views[owner].target,
                                         ledger.active(owner)), place, shape, group))
            ledger.take(owner, holds[job.shape])
        ledger.give(ben, holds[shape])
        search.gainers.add(ben)
        group += 1
        if flat:  # _next, flat: only the beneficiary's rank moved
            gap = ledger.gap(ben)
            if gap > EPS and wanted:
                heapq.heapreplace(ranked, (-gap, ben))  # Ledger.owed's figure, flat
            else:
                heapq.heappop(ranked)
        else:
            ranked = _next(ranked, ben, wants, ledger, passed)
    return vacates


def _next(heap: list[tuple[Rank, str]], ben: str, wants: WantsBook, ledger: Ledger,
          passed: set[str]) -> list[tuple[Rank, str]]:
    """The beneficiaries after ``ben``, on top of ``heap``, was given room. Flat, only its own rank
    moved; in an owner tree every member of a group that gained or lost did, so the ranks are made
    afresh."""
    if ledger.groups is not None:
        return beneficiaries(wants, ledger, passed)
    gap = ledger.gap(ben)
    if gap > EPS and wants[ben]:
        heapq.heapreplace(heap, (-gap, ben))  # Ledger.owed's figure, flat
    else:
        heapq.heappop(heap)
    return heap


def _show(shape: Shape) -> str:
    cpus, memory, gpus, disk = shape
    out = f"{cpus} cpus, {memory} MiB"
    return out + (f", {gpus} gpus" if gpus else "") + (f", {disk} KiB disk" if disk else "")

"""The simulated negotiator: one negotiation cycle hands free slots and free room to idle jobs.

A reserved slot goes first to its owner (:meth:`osep.core.reservations.ReservationBook.take`); every
other free slot goes to the first owner in rank order that is not held to its allowance and has an
idle job that fits. Then each partitionable machine: room kept for an owner goes to it once the
machine has that much unclaimed (:meth:`osep.core.reservations.ReservationBook.take_fitting`), and what
is left goes, a job at a time, to the first owner in rank order with a job that fits it and its
allowance. The rank order is the ordering's (:mod:`osep.sim.orderings`): first come first served
is re-ranked for every slot, the fair-share models once per cycle (HTCondor's negotiator divides a
cycle into per-submitter portions instead).

What a cycle looks at: the free static slots and the machines with a core unclaimed (the pool keeps
them, in its order), and the owners with jobs queued. An owner whose queue empties, or whose
allowance runs out, is passed over for the rest of the cycle, and the cycle stops once nobody left
can be given anything and no room kept for someone is left to hand over.
"""

from __future__ import annotations

from collections import Counter

from osep.core.reservations import ReservationBook
from osep.core.resources import Room
from osep.sim.orderings import Ordering
from osep.sim.pool import SimJob, SimulatedPool


def negotiate(pool: SimulatedPool, ordering: Ordering) -> None:
    """One negotiation cycle at ``pool.now``."""
    now = pool.now
    pool.accountant.accrue(now, pool.running)
    book = pool.book
    kept_at = Counter(r.slot for r in book.standing())

    def ranks() -> list[str]:
        return ordering.rank(now, pool.idle, pool.running, pool.accountant)

    def anyone(ranked: list[str]) -> bool:
        """Whether an owner of ``ranked`` (every owner with jobs queued, when re-ranked for each
        slot) could still be given something."""
        if ordering.per_slot:
            return any(book.may_match(owner) for owner in pool.idle)
        return bool(ranked)

    ranked = [] if ordering.per_slot else ranks()
    free = pool.free_slots()
    # The free slots still to visit that room is kept on.
    kept_ahead = sum(1 for slot in free if kept_at[slot.spec.name])
    for slot in free:
        name = slot.spec.name
        if kept_at[name]:
            kept_ahead -= 1
            kept = book.take(name, now)
            kept_at[name] -= 1
            if kept is not None:
                job = pool.pop_fitting(kept.owner, slot.room)
                if job is not None:
                    pool.start(job, slot)
                    book.handed_over(kept)
                    continue
        if ordering.per_slot:
            ranked = ranks()
        # A static slot is charged whole, as SlotWeight (its cores) charges it.
        job = _first(pool, book, ranked, slot.room, slot.spec.cpus)
        if job is not None:
            pool.start(job, slot)
            book.matched(job.spec.owner, slot.spec.cpus)
        elif not kept_ahead and not anyone(ranked):
            break
    machines = pool.open_machines()
    kept_ahead = sum(1 for machine in machines if kept_at[machine.spec.name])
    for machine in machines:
        name = machine.spec.name
        if kept_at[name]:
            kept_ahead -= 1
            while (kept := book.take_fitting(name, now, machine.free)) is not None:
                job = pool.pop_fitting(kept.owner, machine.free)
                if job is not None:
                    pool.start_on(job, machine)
                    book.handed_over(kept)
        while machine.free[0] > 0:
            if ordering.per_slot:
                ranked = ranks()
            job = _first(pool, book, ranked, machine.free, None)
            if job is None:
                break
            pool.start_on(job, machine)
            book.matched(job.spec.owner, job.spec.cpus)
        if not kept_ahead and not anyone(ranked):
            break


def _first(pool: SimulatedPool, book: ReservationBook, ranked: list[str], room: Room,
           charge: int | None) -> SimJob | None:
    """The oldest job that fits ``room`` of the first owner in ``ranked`` that has one and may be
    given it (``charge``: the cores a static slot charges; None: the job's own, within the
    owner's allowance), taken off its queue. Owners that can be given nothing more this cycle (no
    job queued, or no allowance left) are dropped from ``ranked``."""
    k = 0
    while k < len(ranked):
        owner = ranked[k]
        if owner not in pool.idle or not book.may_match(owner):
            del ranked[k]
            continue
        if charge is None:
            job = pool.pop_fitting(owner, room, book.allowance(owner))
        else:
            job = pool.pop_fitting(owner, room) if book.may_match(owner, charge) else None
        if job is not None:
            return job
        k += 1
    return None

"""The simulated negotiator: one negotiation cycle hands free slots and free room to idle jobs.

A reserved slot goes first to its owner (:meth:`osep.core.reservations.ReservationBook.take`); every
other free slot goes to the first owner in rank order that is not held to its allowance and has an
idle job that fits. Then each partitionable machine: room kept for an owner goes to it once the
machine has that much unclaimed (:meth:`osep.core.reservations.ReservationBook.take_fitting`), and what
is left goes, a job at a time, to the first owner in rank order with a job that fits it and its
allowance. The rank order is the ordering's (:mod:`osep.sim.orderings`): first come first served
is re-ranked for every slot, the fair-share models once per cycle (HTCondor's negotiator divides a
cycle into per-submitter portions instead).
"""

from __future__ import annotations

from osep.sim.orderings import Ordering
from osep.sim.pool import SimulatedPool


def negotiate(pool: SimulatedPool, ordering: Ordering) -> None:
    """One negotiation cycle at ``pool.now``."""
    pool.accountant.accrue(pool.now, pool.running)
    book = pool.book

    def ranks() -> list[str]:
        return ordering.rank(pool.now, pool.idle, pool.running, pool.accountant)

    ranked = [] if ordering.per_slot else ranks()
    for slot in [s for s in pool.slots.values() if s.parent is None]:
        if slot.job is not None:
            continue
        kept = book.take(slot.spec.name, pool.now)
        if kept is not None:
            job = pool.pop_fitting(kept.owner, slot.room)
            if job is not None:
                pool.start(job, slot)
                book.handed_over(kept)
                continue
        if ordering.per_slot:
            ranked = ranks()
        for candidate in ranked:
            # A static slot is charged whole, as SlotWeight (its cores) charges it.
            if not book.may_match(candidate, slot.spec.cpus):
                continue
            job = pool.pop_fitting(candidate, slot.room)
            if job is not None:
                pool.start(job, slot)
                book.matched(candidate, slot.spec.cpus)
                break
    for machine in pool.machines.values():
        while (kept := book.take_fitting(machine.spec.name, pool.now, machine.free)) is not None:
            job = pool.pop_fitting(kept.owner, machine.free)
            if job is not None:
                pool.start_on(job, machine)
                book.handed_over(kept)
        placed = True
        while placed and machine.free[0] > 0:
            placed = False
            if ordering.per_slot:
                ranked = ranks()
            for candidate in ranked:
                if not book.may_match(candidate):
                    continue
                allowed = book.allowance(candidate)
                job = pool.pop_fitting(candidate, machine.free, allowed)
                if job is not None:
                    pool.start_on(job, machine)
                    book.matched(candidate, job.spec.cpus)
                    placed = True
                    break

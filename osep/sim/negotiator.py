"""The simulated negotiator: one negotiation cycle hands free slots and free room to idle jobs.

A reserved slot goes first to its owner (:meth:`osep.core.reservations.ReservationBook.take`); every
other free slot goes to the first owner in rank order that is not held to its allowance and has an
idle job that fits. Then each partitionable machine: room kept for an owner goes to it once the
machine has that much unclaimed (:meth:`osep.core.reservations.ReservationBook.take_fitting`), and what
is left goes, a job at a time, to the first owner in rank order with a job that fits it and its
allowance. Ranks: first come first served (``fifo``: the owner whose oldest idle job is
oldest) or the Fair-Share priority factor (``fairshare``, ranked once per cycle; HTCondor's
negotiator divides a cycle into per-submitter portions instead).
"""

from __future__ import annotations

from collections.abc import Mapping

from osep.sim import fairshare
from osep.sim.pool import SimulatedPool
from osep.sim.specs import Order


def negotiate(pool: SimulatedPool, shares: Mapping[str, float]) -> None:
    """One negotiation cycle at ``pool.now``. ``shares`` (resolved) feed the Fair-Share ranks."""
    pool.accountant.accrue(pool.now, pool.running)
    book = pool.book
    ranked: list[str] = []
    if pool.settings.order is Order.FAIRSHARE:
        prio = fairshare.factors(pool.accountant.usage, shares)
        ranked = sorted(pool.idle, key=lambda o: (-prio.get(o, 0.0), o))
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
        if pool.settings.order is Order.FIFO:
            ranked = [o for _, o in sorted((q[0], o) for o, q in pool.idle.items() if q)]
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
            if pool.settings.order is Order.FIFO:
                ranked = [o for _, o in sorted((q[0], o) for o, q in pool.idle.items() if q)]
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

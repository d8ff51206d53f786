"""The simulated negotiator: one negotiation cycle hands free slots and free room to idle jobs.

Free static slots first, then partitionable machines, a job at a time. A reserved slot goes first to
its owner, and room kept on a machine once the machine has that much unclaimed
(:class:`osep.core.reservations.ReservationBook`). The rest goes to the first owner in rank order that
is within its allowance and has an idle job that fits. The rank order is the ordering's
(:mod:`osep.sim.orderings`), taken once per cycle. The greedy order puts an owner back in its place
each time one of its jobs leaves its queue, as ranking again for every slot would; the fair-share
models keep the cycle's order (HTCondor divides a cycle into per-submitter portions instead).

Within a cycle queues only shrink and allowances only fall. So an owner with no queue or no allowance
left, and a room no job was found for, are passed over for the rest of the cycle. Once nobody can be
given anything, only slots with room kept are still visited, and the cycle stops when none is left.
"""

from __future__ import annotations

from collections import Counter

from osep.core.reservations import ReservationBook
from osep.core.resources import Room
from osep.sim.orderings import Head, Ordering
from osep.sim.parts import SimJob, SimSlot
from osep.sim.pool import SimulatedPool

_NONE_KEPT: Counter[str] = Counter()  # no room kept anywhere (never changed: nothing is visited)


def negotiate(pool: SimulatedPool, ordering: Ordering) -> None:
    """One negotiation cycle at ``pool.now``."""
    now = pool.now
    book = pool.book
    kept_at = book.kept_places() if book.pending() else _NONE_KEPT
    # The owners that might still be given something, in rank order, and (for an ordering that
    # ranks by queue heads) their heads (see _first).
    ranked, heads = ordering.ranking(now, pool.idle, pool.running, pool.accountant)
    unwanted: set[Room] = set()  # rooms no job was found for, this cycle
    # Nothing is left to do, but for room kept for someone, once nobody can be given anything or
    # none of the rooms still to visit is one a job might be found for: ``wanted`` counts the free
    # places from the one being visited on whose room is not in ``unwanted``.

    def taken(owner: str) -> None:
        """A job of ``owner``'s was taken off its queue for a slot kept for it."""
        if heads is not None and owner in ranked:
            ordering.moved(ranked, heads, ranked.index(owner), pool.idle)

    def hand_kept(slot: SimSlot) -> bool:
        """Whether the free static ``slot``, kept for someone, was handed to a job of theirs."""
        kept = book.take(slot.spec.name, now)
        if kept is not None:
            job = pool.pop_fitting(kept.owner, slot.room)
            if job is not None:
                taken(kept.owner)
                pool.start(job, slot)
                book.handed_over(kept)
                return True
        return False

    rooms_ahead = pool.free_rooms()  # of the free slots from the one being visited on
    wanted = sum(rooms_ahead.values())
    kept_ahead = sum(1 for name in kept_at if name in pool.slots and pool.slots[name].job is None
                     and pool.slots[name].parent is None) if kept_at else 0
    for slot in pool.free_slots():
        if not ranked or not wanted:
            # Nothing is left to do but hand over room kept for someone: on to the slots it is
            # kept on (from this one on, in the pool's order), the others passed by.
            if kept_ahead:
                for kept_slot in _kept_from(pool, kept_at, slot.index):
                    hand_kept(kept_slot)
            break
        room = slot.room
        rooms_ahead[room] -= 1
        if kept_ahead:
            name = slot.spec.name
            if kept_at.get(name):
                kept_ahead -= 1
                kept_at[name] -= 1
                if hand_kept(slot):
                    if room not in unwanted:
                        wanted -= 1
                    continue
        if room in unwanted:
            continue
        wanted -= 1
        # A static slot is charged whole, as SlotWeight (its cores) charges it.
        job = _first(pool, book, ranked, heads, ordering, room, slot.spec.cpus)
        if job is None:
            unwanted.add(room)
            wanted -= rooms_ahead[room]
        else:
            pool.start(job, slot)
    unwanted.clear()  # a machine's room is offered within each owner's allowance, not charged whole
    rooms_ahead = pool.open_rooms()
    wanted = sum(rooms_ahead.values())
    kept_ahead = sum(1 for name in kept_at if kept_at[name] and name in pool.machines
                     and pool.machines[name].free[0] > 0) if kept_at else 0
    for machine in pool.open_machines():
        if not kept_ahead and (not ranked or not wanted):
            break
        name = machine.spec.name
        rooms_ahead[machine.free] -= 1
        if machine.free not in unwanted:
            wanted -= 1
        if kept_ahead and kept_at[name]:
            kept_ahead -= 1
            while (kept := book.take_fitting(name, now, machine.free)) is not None:
                job = pool.pop_fitting(kept.owner, machine.free)
                if job is not None:
                    taken(kept.owner)
                    pool.start_on(job, machine)
                    book.handed_over(kept)
        while machine.free[0] > 0 and machine.free not in unwanted:
            job = _first(pool, book, ranked, heads, ordering, machine.free, None)
            if job is None:
                unwanted.add(machine.free)
                wanted -= rooms_ahead.get(machine.free, 0)
                break
            pool.start_on(job, machine)


def _kept_from(pool: SimulatedPool, kept_at: Counter[str], at: int) -> list[SimSlot]:
    """The free static slots with room kept on them (``kept_at``, by slot name) from position
    ``at`` on, in the pool's order."""
    slots = pool.slots
    found = [slots[name] for name, n in kept_at.items() if n and name in slots]
    return sorted((s for s in found if s.parent is None and s.job is None and s.index >= at),
                  key=lambda s: s.index)


def _first(pool: SimulatedPool, book: ReservationBook, ranked: list[str],
           heads: list[Head] | None, ordering: Ordering, room: Room, charge: int | None
           ) -> SimJob | None:
    """The oldest job that fits ``room`` of the first owner in ``ranked`` that has one and may be
    given it (``charge``: the cores a static slot charges; None: the job's own, within the
    owner's allowance in ``book``), taken off its queue; a held owner given a job is charged for it
    in ``book``. Owners that can be given nothing more this cycle (no job queued, or no allowance
    left: within a cycle queues only shrink and allowances only fall) are dropped from ``ranked``
    (and ``heads``); the owner given a job is put back in its place if the ordering ranks by queue
    heads (``heads``)."""
    idle = pool.idle
    k = 0
    while k < len(ranked):
        owner = ranked[k]
        allowance = book.allowance(owner)  # (None: not held)
        if owner not in idle or (allowance is not None and allowance < 1):
            del ranked[k]
            if heads is not None:
                del heads[k]
            continue
        if allowance is None:
            job = pool.pop_fitting(owner, room)
        elif charge is None:
            job = pool.pop_fitting(owner, room, allowance)
            if job is not None:
                book.matched(owner, job.spec.cpus)
        else:
            job = pool.pop_fitting(owner, room) if allowance >= charge else None
            if job is not None:
                book.matched(owner, charge)
        if job is not None:
            if heads is not None:
                ordering.moved(ranked, heads, k, idle)
            return job
        k += 1
    return None

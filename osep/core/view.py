"""A pool view kept, not rebuilt: what a decision reads of a pool, updated job by job.

A decision needs per owner what its jobs add up to, its idle jobs by shape (in queue order) and its
running jobs in the order they would be vacated (:mod:`osep.core.tally`); and per place what is
busy, leaving or free (:mod:`osep.core.places`). Counting these from a snapshot's jobs costs a pass
over every job; a pool adapter that sees jobs change keeps a :class:`PoolView` instead and tells it
each change. The ways to tell it, each for the pool that needs it:

- :meth:`PoolView.tell`, :meth:`PoolView.put_slot`, :meth:`PoolView.drop_slot`: jobs as rows of
  fields, many at once (None: gone), and slots (the simulated pool at each snapshot, and whenever a
  periodic checkpoint moves a job's row);
- :meth:`PoolView.put_idle`: an owner's idle jobs of one shape as a count (the live pool's idle
  groups, added to a view built from its snapshot);
- :meth:`PoolView.count_idle`, :meth:`PoolView.count_running`, :meth:`PoolView.count_static`,
  :meth:`PoolView.counted_by`: an owner's idle or running jobs as counts kept by the pool, read
  from it only while it is as it was (the simulated pool's queues and, on static slots only, its
  runs in start order).

See :mod:`osep.core.telling` and :mod:`osep.core.counted`. A snapshot carries the view it was taken
from (:attr:`osep.core.model.Snapshot.view`); a snapshot without one gets one built from its jobs
and slots in one pass (:func:`view_of`), which is what a live cycle does after its queries. What the
view keeps is exactly what :mod:`osep.core.counting` would count from the snapshot's jobs and slots,
and the orders are the ones the decision uses. The decision never changes a view (its own
bookkeeping of what it took stays in the call).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable
from operator import attrgetter
from typing import Any, cast

from osep.core.counted import ViewCounted
from osep.core.jobtable import Row, row_of
from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.errors import PoolError

_RUNNING, _IDLE, _VACATING = JobState.RUNNING, JobState.IDLE, JobState.VACATING
_SHAPE = attrgetter("cpus", "memory", "gpus", "disk")  # Job.shape, at C speed
_ASKS = (attrgetter("cpus"), attrgetter("memory"), attrgetter("gpus"), attrgetter("disk"))


def _sum4(jobs: list[Job]) -> list[int]:
    """What ``jobs`` ask for, added up: cpus, memory, gpus, disk (at C speed)."""
    return [sum(map(ask, jobs)) for ask in _ASKS]


class PoolView(ViewCounted):
    """What a decision reads of a pool, kept up to date by the pool's adapter (see the module's
    description)."""


    @classmethod
    def of(cls, slots: Iterable[Slot], jobs: Iterable[Job]) -> PoolView:
        """The view of these slots and jobs, built in one pass over each (what a decision on a
        snapshot without a kept view starts with). Gives the view :meth:`put_slot` and
        :meth:`tell` of their rows would have kept."""
        view = cls()
        listed = 0
        for slot in slots:
            view.slots[slot.name] = slot
            listed += 1
        view.duplicates = listed - len(view.slots)
        listing = list(view.slots.values())
        view._capacity = sum(s.slots for s in listing)
        view._totals = [view._capacity, sum(s.cpus for s in listing),
                        sum(s.memory for s in listing if s.memory is not None),
                        sum(s.gpus for s in listing), sum(s.disk for s in listing if s.disk is not None)]
        view.static = {s.name for s in listing if not s.partitionable and s.parent is None}
        view.odd_static = sum(1 for s in listing
                              if s.cpus != 1 and not s.partitionable and s.parent is None)
        for slot in listing:
            if slot.partitionable:
                view.rooms[slot.name] = slot.room
                if any(slot.room):
                    view.open_rooms.add(slot.name)
            if slot.parent is not None:
                view.children.setdefault(slot.parent, set()).add(slot.name)
        wholes = view.wholes
        for slot in listing:
            if slot.parent is None:
                if slot.name in view.children:
                    view._rewhole(slot.name)
                else:
                    room = view.whole[slot.name] = slot.room
                    wholes[room] += 1

        listed = 0
        table: dict[JobId, Job] = {}
        for job in jobs:
            table[job.id] = job
            listed += 1
        view.duplicates += listed - len(table)
        view.jobs.entries = view._entries = cast(dict[JobId, Job | Row], table)
        running: dict[str, list[Job]] = {}
        idle: dict[str, list[Job]] = {}
        vacating: dict[str, list[Job]] = {}
        run, wait, leave = _RUNNING, _IDLE, _VACATING
        for job in table.values():
            state = job.state
            owners = idle if state is wait else running if state is run else \
                vacating if state is leave else None
            if owners is not None:
                mine = owners.get(job.owner)
                if mine is None:
                    owners[job.owner] = [job]
                else:
                    mine.append(job)
        present = view.slots
        for owner, mine in running.items():
            tally = view._tally(owner)
            tally.running = len(mine)
            tally.run_shapes = dict(Counter(map(_SHAPE, mine)))
            for job in mine:
                view._run_on(job.id, row_of(job), tally, job.slot)
        for owner, mine in idle.items():
            tally = view._tally(owner)
            tally.idle = len(mine)
            tally.shapes = dict(Counter(map(_SHAPE, mine)))
            tally.listed = mine  # which job has which shape: sorted out at the owner's first change
            if len(tally.shapes) > 1:
                tally._sort_out()
        for owner, mine in vacating.items():
            tally = view._tally(owner)
            tally.vacating = len(mine)
            tally.leaving = _sum4(mine)
            for job in mine:
                if job.slot is not None:
                    view.leaving[job.slot] += 1
        for slot in present.values():
            if not slot.partitionable and slot.parent is None and slot.name not in view.busy \
                    and slot.name not in view.leaving:
                view.free_static.add(slot.name)
        return view

    def snapshot(self, time: float, kept: tuple[Any, ...] = ()) -> Snapshot:
        """A snapshot of the pool as the view has it now, carrying the view. Its slots and jobs
        are copied out of the view only if they are read, or before the view next changes."""
        self._settle()
        free = len(self.free_static)
        if free > self._free_peak:
            self._free_peak = free
        elif free * 4 < self._free_peak:  # far fewer than it had: listed faster made afresh
            self.free_static = set(self.free_static)
            self._free_peak = free
        taken = Snapshot.of_view(self, time, kept)
        self._taken = weakref.ref(taken)
        return taken


def view_of(snapshot: Snapshot) -> PoolView:
    """The view a decision on ``snapshot`` reads: the one it carries, if that has not changed since
    the snapshot was taken; else one built from its slots and jobs. A view whose pool counts jobs
    for it (:meth:`PoolView.counted_by`) is read only while the pool is as it was: its snapshot's
    jobs are not all the view counts, so no view can be built from them (PoolError)."""
    view = snapshot.view
    if isinstance(view, PoolView):
        check = view.pool_check
        if check is not None:
            if view.stamp != snapshot.stamp:
                raise PoolError("the pool changed since this snapshot was taken: decide on a new one")
            check()
            return view
        if view.stamp == snapshot.stamp:
            return view
    return PoolView.of(snapshot.slots, snapshot.jobs)

"""How a pool tells its view jobs and slots one by one (:class:`ViewTold`, a base of
:class:`osep.core.view.PoolView`): a job as its row of fields (many at once), a slot as a
:class:`Slot`. Each change costs O(1) (a heap push for an idle job of an owner
with idle jobs of several shapes; a victim order is sorted when read), but for dropping or changing
a static slot with jobs on it, a pass over the jobs.
"""

from __future__ import annotations

from collections.abc import Iterable

from osep.core.jobtable import Row, row_of
from osep.core.model import JobId, JobState, Slot
from osep.core.places import ViewPlaces
from osep.core.tally import Tally

# The states a view tells apart (a module's name is read several times faster than an enum's member).
_RUNNING, _IDLE, _VACATING = JobState.RUNNING, JobState.IDLE, JobState.VACATING


class ViewTold(ViewPlaces):
    """A pool view told its jobs and slots one by one."""

    # -- changes ----------------------------------------------------------------------------------

    def tell(self, changes: Iterable[tuple[JobId, Row | None]]) -> None:
        """Each job's change in turn, as its :data:`Row` now (None: it left the pool); a row the view
        has already changes nothing (a job read as a :class:`Job` stays that object). The view keeps
        the rows, and makes a :class:`Job` only when something reads it. The most common changes (a
        new idle job, a job running on a static slot, new to the view or idle in it until now, a job
        gone from one) are done here without a call each."""
        if self._taken is not None:
            self._settle()
        entries, tallies, static = self._entries, self.tallies, self.static
        busy, free_static, leaving = self.busy, self.free_static, self.leaving
        idle, running = _IDLE, _RUNNING
        told = 0
        for job_id, row in changes:
            if row is None:  # gone
                old = entries.pop(job_id, None)
                if old is None:
                    continue
                told += 1
                if not isinstance(old, tuple):
                    old = row_of(old)
                owner, state, _, name, start, _, shape, vacatable = old
                if state is not running or name not in static:
                    self._job_out(job_id, old)
                    continue
                # A job gone from a static slot the view has (_job_out, written out: the most
                # common end).
                mine = tallies[owner]
                mine.running -= 1
                mine._ran = None
                run_shapes = mine.run_shapes
                left = run_shapes[shape] - 1
                if left:
                    run_shapes[shape] = left
                else:
                    del run_shapes[shape]
                left = busy[name] - 1
                if left:
                    busy[name] = left
                else:
                    busy.pop(name)  # (Counter's del is a Python call)
                    if name not in leaving:
                        free_static.add(name)
                if start is not None and vacatable:
                    orders = mine._orders
                    if orders[0] is None and orders[1] is None:
                        del mine.candidates[job_id]
                    else:
                        mine.drop_victim(job_id)
                if not (mine.running or mine.idle or mine.vacating):
                    del tallies[owner]
                continue
            old = entries.get(job_id)
            if old is not None:
                if not isinstance(old, tuple):
                    old = row_of(old)
                if old == row:
                    continue
            entries[job_id] = row
            told += 1
            owner, state, _, name, start, since, shape, vacatable = row
            if old is None and state is idle:
                # A new idle job, what _job_in does with it (written out).
                tally = tallies.get(owner)
                if tally is None:
                    tally = tallies[owner] = Tally()
                tally.idle += 1
                tally._waiting = None
                if tally.listed is None and not tally.firsts:  # Tally._add_idle, written out
                    shapes = tally.shapes
                    count = shapes.get(shape, 0)
                    if count:
                        shapes[shape] = count + 1
                        tally.ids[shape].add(job_id)
                        continue
                    if not shapes:
                        shapes[shape] = 1
                        tally.ids[shape] = {job_id}
                        continue
                tally._add_idle(job_id, shape)
                continue
            if (state is not running or name not in static
                    or (old is not None and (old[1] is not idle or old[0] != owner
                                             or old[6] != shape))):
                if old is not None:
                    self._job_out(job_id, old)
                self._job_in(job_id, row)
                continue
            # A job running on a static slot the view has, new to the view or idle in it until now
            # (_job_out, _job_in and _placed, written out: the most common change).
            assert self.running_static is None, "a pool that counts its running jobs told one"
            if old is None:
                tally = tallies.get(owner)
                if tally is None:
                    tally = tallies[owner] = Tally()
            else:
                tally = tallies[owner]
                tally.idle -= 1
                tally._drop_idle(job_id, shape)
            tally.running += 1
            tally._ran = None
            run_shapes = tally.run_shapes
            run_shapes[shape] = run_shapes.get(shape, 0) + 1
            busy[name] = busy.get(name, 0) + 1
            free_static.discard(name)
            if start is not None and vacatable:  # a victim candidate
                if since is None or since < start:
                    since = start
                if tally._orders[0] is None and tally._orders[1] is None:
                    serial = tally._serial = tally._serial + 1
                    tally.candidates[job_id] = (serial, start, since)
                else:
                    tally.add_victim(job_id, start, since)
        self.stamp += told

    def put_slot(self, slot: Slot) -> None:
        """A slot was added or changed (a partitionable slot's unclaimed room, say)."""
        if self._taken is not None:
            self._settle()
        old = self.slots.get(slot.name)
        if old is not None:
            self._slot_out(old)
        self.slots[slot.name] = slot
        self._slot_in(slot)
        self.stamp += 1

    def drop_slot(self, name: str) -> None:
        if self._taken is not None:
            self._settle()
        old = self.slots.get(name)
        if old is not None:
            self._slot_out(old)
            del self.slots[name]
            self.stamp += 1

    def _job_in(self, job_id: JobId, row: Row) -> None:
        owner, state, _, name, _, _, shape, _ = row
        if state is _RUNNING:
            assert self.running_static is None, "a pool that counts its running jobs told one"
            tally = self.tallies.get(owner)
            if tally is None:
                tally = self.tallies[owner] = Tally()
            tally.running += 1
            tally._ran = None
            run_shapes = tally.run_shapes
            run_shapes[shape] = run_shapes.get(shape, 0) + 1
            self._run_on(job_id, row, tally, name)
        elif state is _IDLE:
            tally = self.tallies.get(owner)
            if tally is None:
                tally = self.tallies[owner] = Tally()
            tally.idle += 1
            tally._add_idle(job_id, shape)
        elif state is _VACATING:
            tally = self.tallies.get(owner)
            if tally is None:
                tally = self.tallies[owner] = Tally()
            tally.vacating += 1
            leaving = tally.leaving
            for k in range(4):
                leaving[k] += shape[k]
            if name is not None:
                self.leaving[name] = self.leaving.get(name, 0) + 1
                if self.running_static is None:  # (else the pool keeps the free slots)
                    self.free_static.discard(name)

    def _job_out(self, job_id: JobId, row: Row) -> None:
        owner, state, _, name, _, _, shape, _ = row
        if state is _RUNNING:
            tally = self.tallies[owner]
            tally.running -= 1
            tally._ran = None
            run_shapes = tally.run_shapes
            left = run_shapes[shape] - 1
            if left:
                run_shapes[shape] = left
            else:
                del run_shapes[shape]
            if name is None:
                self.unplaced -= 1
            else:
                if name not in self.static:
                    on = self.running_on[name]
                    if len(on) > 1:
                        on.discard(job_id)
                    else:
                        del self.running_on[name]
                slot = self.slots.get(name)
                if slot is None:
                    self.unplaced -= 1
                elif not slot.partitionable and slot.parent is None:
                    # A static slot: _unplaced and _refree, written out (the most common finish).
                    busy = self.busy
                    left = busy[name] - 1
                    if left:
                        busy[name] = left
                    else:
                        busy.pop(name)  # (Counter's del is a Python call)
                    if row[4] is not None and row[7]:
                        orders = tally._orders
                        if orders[0] is None and orders[1] is None:
                            del tally.candidates[job_id]
                        else:
                            tally.drop_victim(job_id)
                    if name in busy or name in self.leaving:
                        self.free_static.discard(name)
                    else:
                        self.free_static.add(name)
                else:
                    self._unplaced(job_id, row, tally, slot)
        elif state is _IDLE:
            tally = self.tallies[owner]
            tally.idle -= 1
            tally._drop_idle(job_id, shape)
        elif state is _VACATING:
            tally = self.tallies[owner]
            tally.vacating -= 1
            leaving = tally.leaving
            for k in range(4):
                leaving[k] -= shape[k]
            if name is not None:
                self.leaving[name] -= 1
                if not self.leaving[name]:
                    self.leaving.pop(name)
                self._refree(name)
        else:
            return
        if not (tally.running or tally.idle or tally.vacating):
            del self.tallies[owner]

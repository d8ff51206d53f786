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

# The states a view tells apart (a module's name is read several times faster than an enum's member).
_RUNNING, _IDLE, _VACATING = JobState.RUNNING, JobState.IDLE, JobState.VACATING


class ViewTold(ViewPlaces):
    """A pool view told its jobs and slots one by one."""

    # -- changes ----------------------------------------------------------------------------------

    def tell(self, changes: Iterable[tuple[JobId, Row | None]]) -> None:
        """Each job's change in turn, as its :data:`Row` now (None: it left the pool); a row the view
        has already changes nothing (a job read as a :class:`Job` stays that object). The view keeps
        the rows, and makes a :class:`Job` only when something reads it."""
        if self._taken is not None:
            self._settle()
        entries = self._entries
        told = 0
        for job_id, row in changes:
            old = entries.get(job_id)
            if old is not None and not isinstance(old, tuple):
                old = row_of(old)
            if row is None:  # gone
                if old is None:
                    continue
                del entries[job_id]
            elif old == row:
                continue
            else:
                entries[job_id] = row
            told += 1
            if old is not None:
                self._job_out(job_id, old)
            if row is not None:
                self._job_in(job_id, row)
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
            tally = self._tally(owner)
            tally.running += 1
            tally._ran = None
            run_shapes = tally.run_shapes
            run_shapes[shape] = run_shapes.get(shape, 0) + 1
            self._run_on(job_id, row, tally, name)
        elif state is _IDLE:
            tally = self._tally(owner)
            tally.idle += 1
            tally._add_idle(job_id, shape)
        elif state is _VACATING:
            tally = self._tally(owner)
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
                else:
                    self._unplaced(job_id, row, tally, slot)
                    self._refree(name)
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

"""How a simulated pool keeps the pool view its policy reads (:class:`ViewKeeping`, a base of
:class:`osep.sim.pool.SimulatedPool`).

The view is kept only in a run that enforces a policy. At each snapshot it is told what each job on
a slot changed since the last (field by field, no :class:`osep.core.model.Job` made) and, as counts
(:mod:`osep.sim.counts`), how many idle jobs of each shape the owners whose idle jobs changed have:
no entry per idle job, the first of a shape in queue order looked up in the owner's queue when a
decision asks. A snapshot's jobs therefore list the jobs on a slot only, as a live snapshot's do. A
pool of static slots only without periodic checkpoints counts its running jobs the same way (each
owner's in the order they started, the order a decision vacates them in) and marks its free static
slots in the view as they change; then a snapshot's jobs list only the vacating ones.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping

from osep.core.jobtable import Row
from osep.core.model import JobId, JobState, Slot
from osep.core.view import PoolView
from osep.sim.counts import JobCounts, RunningSlots
from osep.sim.parts import IdleQueue, SimJob, SimMachine, SimSlot
from osep.sim.specs import Checkpointing, PoolSettings

_IDLE, _RUNNING, _VACATING = JobState.IDLE, JobState.RUNNING, JobState.VACATING
_PERIODIC = Checkpointing.PERIODIC

# How many more changes than jobs the pool keeps for its view between two snapshots: past that (no
# snapshot for long), the view is told them at once, so that what is kept stays bounded by the jobs.
_CHANGES_OVER_JOBS = 4096


class ViewKeeping:
    """The part of a simulated pool that keeps its view up to date (the pool sets the fields)."""

    now: float
    settings: PoolSettings
    jobs: dict[JobId, SimJob]
    slots: dict[str, SimSlot]
    idle: dict[str, IdleQueue]
    unqueued: dict[str, dict[JobId, SimJob]]
    view: PoolView
    keeps_view: bool
    counted: JobCounts
    _static: list[SimSlot]
    _machines: list[SimMachine]
    _changed: dict[JobId, Row | None]
    _told: Mapping[JobId, object]
    _checkpoints: list[tuple[float, JobId, int]]
    _periodic: bool
    _counts_runs: bool
    _counting: bool

    def _keep_view(self) -> None:
        """Build the view of the pool as it is, and keep it from now on."""
        self.keeps_view = True
        self._counting = self._counts_runs
        view = self.view
        view.counted_by(self.counted.check)
        if self._counts_runs:  # (before the slots: the pool says which are free)
            view.count_static({place.spec.name for place in self._static if place.job is None},
                              RunningSlots(self.slots))
        for place in self._static:
            view.put_slot(place.spec.as_slot())
        for machine in self._machines:
            view.put_slot(machine_slot(machine))
        for slot in self.slots.values():
            if slot.parent is not None:  # a dynamic slot
                view.put_slot(slot.spec.as_slot(slot.parent.spec.name))
        self.counted.recount.update(self.idle)
        for owner, held in self.unqueued.items():
            self.counted.recount.add(owner)
            for job in held.values():
                self.counted.hold(owner, job.shape)
        running = []
        for job in self.jobs.values():
            if job.state is _IDLE:
                continue
            if job.state is _RUNNING and self._counts_runs:
                running.append(job)
                continue
            self._changed[job.spec.id] = self._row(job)
            if self._periodic and job.slot is not None:
                done = last_checkpoint(self.now - job.start, self.settings.checkpoint_interval)
                self._next_checkpoint(job, done + self.settings.checkpoint_interval)
        running.sort(key=lambda job: job.start)  # (equal starts: the view's reader orders them)
        for job in running:
            assert job.slot is not None
            self.counted.run(job, job.slot.spec.name)

    # -- the Pool interface -------------------------------------------------------------------

    def _checkpoint(self) -> None:
        """Show the running jobs whose last periodic checkpoint moved since they were last shown."""
        heap = self._checkpoints
        interval = self.settings.checkpoint_interval
        while heap and heap[0][0] <= self.now:
            _, job_id, run = heapq.heappop(heap)
            job = self.jobs.get(job_id)  # finished jobs are forgotten
            if job is None or job.run_id != run or job.state not in (_RUNNING,
                                                                     _VACATING):
                continue  # the run ended
            row = self.view.jobs.row(job_id)
            if row is None or row[5] != self._checkpoint_of(job):
                self._show(job)
            self._next_checkpoint(job, last_checkpoint(self.now - job.start, interval) + interval)

    def _next_checkpoint(self, job: SimJob, done: float) -> None:
        """Look at ``job`` again once its run has done ``done`` seconds (at the first snapshot
        after, should rounding put that instant before now)."""
        when = job.start + done
        if when <= self.now:
            when = math.nextafter(self.now, math.inf)
        heapq.heappush(self._checkpoints, (when, job.spec.id, job.run_id))

    def _shown(self, job_id: JobId, row: Row | None) -> None:
        """The job changed (None: it finished, or went back to the queue): the view is told ``row``
        at the next snapshot (a view is kept)."""
        changed = self._changed
        changed[job_id] = row
        if len(changed) > len(self.jobs) + _CHANGES_OVER_JOBS:  # no snapshot for long: told now
            self._tell_view()

    def _off_slot(self, job: SimJob) -> None:
        """``job`` left its slot for good (finished, or back in the queue, where it is counted): the
        view is told at the next snapshot if it has the job; one that started since the view was
        last told need not know of it."""
        job_id = job.spec.id
        if job_id in self._told:
            self._shown(job_id, None)
        else:
            self._changed.pop(job_id, None)

    def _row(self, job: SimJob) -> Row:
        """The row the view is told of ``job``, on a slot, as it is now (the fields :meth:`_view`
        gives: no :class:`Job` made)."""
        spec = job.spec
        slot = job.slot
        return (spec.owner, job.state, spec.submit, None if slot is None else slot.spec.name,
                job.start, self._checkpoint_of(job), job.shape, True)

    def _tell_view(self) -> None:
        """Bring the view up to date: each job changed since it last was is told its row, made
        when it changed, or as gone if it finished or is idle (idle jobs are told as counts: those
        of each owner whose counts changed)."""
        self.counted.tell(self.view)
        changed = self._changed
        if not changed:
            return
        if self._periodic:  # a running job's last checkpoint is the one by now: its row made now
            jobs = self.jobs
            self.view.tell([(job_id, None if row is None else self._row(jobs[job_id]))
                            for job_id, row in changed.items()])
        else:
            self.view.tell(changed.items())
        changed.clear()

    def _show(self, job: SimJob) -> None:
        """Show the view ``job`` as it is now, at once."""
        self.view.tell([(job.spec.id, self._row(job))])

    def _checkpoint_of(self, job: SimJob) -> float | None:
        """The last periodic checkpoint of the job's current run, if any (None: none yet)."""
        if self.settings.checkpointing is _PERIODIC:
            done = last_checkpoint(self.now - job.start, self.settings.checkpoint_interval)
            if done > 0:
                return job.start + done
        return None


def machine_slot(machine: SimMachine) -> Slot:
    """A partitionable slot as a snapshot shows it: with what it has unclaimed."""
    return Slot(machine.spec.name, *machine.free, partitionable=True)


def last_checkpoint(executed: float, interval: float) -> float:
    if interval <= 0:
        return 0.0
    return math.floor(executed / interval) * interval

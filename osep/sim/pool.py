"""The simulated pool's state, on virtual time, behind the same :class:`osep.core.pool.Pool` face as
the live pool.

What it models, and what it leaves out:

- static slots (cpus, memory, GPUs) that run one job each, and partitionable machines that carve a
  dynamic slot of exactly what each job asks for out of what they have unclaimed and get it back when
  the job leaves; a job fits by the one fit check of :mod:`osep.core.resources`;
- job arrivals at their submit time, and run times; a job's run lasts ``runtime - saved work``;
- a vacate: the job keeps its slot for ``vacate_delay`` seconds, then goes back to the queue (keeping
  its submit time, as HTCondor keeps QDate) and the slot is free for the next negotiation;
- reservations and holds, in the same book and under the same rules as the live pool
  (:mod:`osep.core.reservations`); the negotiator (:mod:`osep.sim.negotiator`) hands a reserved
  slot to its owner and respects the holds as a negotiator's submitter ceilings would;
- checkpointing: none (a vacated job starts over), at vacate time (all work done before the vacate
  signal is kept), or periodic every N seconds of a run (work since the last checkpoint is lost).

Not modelled: matchmaking by arbitrary Requirements, claim reuse between jobs of the same owner,
network transfer times and schedd limits.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.core.pool import Look
from osep.core.reservations import ReservationBook
from osep.core.resources import Room, Shape, add_room, fits, less
from osep.errors import PoolError
from osep.measure.records import JobRecord, Run
from osep.sim.fairshare import Accountant
from osep.sim.specs import Checkpointing, JobSpec, PoolSettings, SlotSpec


class SimJob:
    __slots__ = (
        "finish",
        "gain",
        "run_id",
        "runs",
        "saved",
        "seq",
        "slot",
        "spec",
        "start",
        "state",
        "vacate_sent",
    )

    def __init__(self, spec: JobSpec, seq: int) -> None:
        self.spec = spec
        self.seq = seq
        self.state = JobState.IDLE
        self.slot: SimSlot | None = None
        self.start = 0.0
        self.saved = 0.0
        self.runs: list[Run] = []
        self.finish: float | None = None
        self.run_id = 0
        self.vacate_sent: float | None = None
        self.gain = 0.0


class SimSlot:
    """A static slot, or a dynamic slot carved from ``parent``."""

    __slots__ = ("job", "parent", "spec")

    def __init__(self, spec: SlotSpec, parent: SimMachine | None = None) -> None:
        self.spec = spec
        self.job: SimJob | None = None
        self.parent = parent

    @property
    def room(self) -> Room:
        return self.spec.room


class SimMachine:
    """A partitionable slot: what it has unclaimed, and the dynamic slots carved from it."""

    __slots__ = ("carved", "free", "spec")

    def __init__(self, spec: SlotSpec) -> None:
        self.spec = spec
        self.free: Room = spec.room
        self.carved = 0

    def carve(self, shape: Shape) -> SimSlot:
        self.carved += 1
        self.free = less(self.free, shape)
        # What the dynamic slot holds: the request, in what the machine models.
        cpus, memory, gpus, disk = shape
        carved = SlotSpec(f"{self.spec.name}_{self.carved}", cpus,
                          None if self.spec.memory is None else memory, gpus,
                          None if self.spec.disk is None else disk)
        return SimSlot(carved, self)

    def give_back(self, slot: SimSlot) -> None:
        self.free = add_room(self.free, slot.room)


# What the pool asks its driver to do later: (time, kind, data).
Later = tuple[float, str, tuple[JobId, int]]


class SimulatedPool:
    """Slots, jobs and the reservation book; :mod:`osep.sim.driver` moves it through time."""

    def __init__(self, slots: Iterable[SlotSpec], settings: PoolSettings) -> None:
        self.now = 0.0
        self.settings = settings
        specs = list(slots)
        # Static and dynamic slots by name (dynamic ones come and go with their jobs), and machines.
        self.slots = {s.name: SimSlot(s) for s in specs if not s.partitionable}
        self.machines = {s.name: SimMachine(s) for s in specs if s.partitionable}
        self.capacity = sum(s.as_slot().slots for s in specs)
        self.jobs: dict[JobId, SimJob] = {}
        self.idle: dict[str, list[tuple[float, int, JobId]]] = defaultdict(list)
        self.book = ReservationBook(settings.reservation_lifetime)
        self.later: list[Later] = []  # collected by the driver after every call
        self.vacates = 0
        self.completed = 0
        self.running: dict[str, int] = defaultdict(int)  # owner -> slots its jobs occupy
        self.accountant = Accountant(settings.half_life, settings.initial_usage)
        # Told of every run that ends: (job, its start, vacated), at self.now.
        self.on_leave: Callable[[JobSpec, float, bool], None] | None = None

    # -- the Pool interface -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        jobs = tuple(self._view(j) for j in self.jobs.values() if j.finish is None)
        idle = {o: len(q) for o, q in self.idle.items() if q}
        running = {o: n for o, n in self.running.items() if n}
        self.book.expire(self.now, running, idle)
        slots = tuple(s.spec.as_slot(s.parent.spec.name if s.parent is not None else None)
                      for s in self.slots.values()) + tuple(
            Slot(m.spec.name, *m.free, partitionable=True) for m in self.machines.values())
        occupied = {s.spec.name for s in self.slots.values()
                    if s.job is not None and s.job.state is JobState.RUNNING}
        return Snapshot(time=self.now, slots=slots, jobs=jobs, kept=self.book.mark(slots, occupied))

    def job(self, job_id: JobId) -> Job | None:
        job = self.jobs.get(job_id)
        if job is None or job.finish is not None:
            return None
        return self._view(job)

    def look(self, job_ids: Iterable[JobId]) -> Look:
        return Look({i: j for i in job_ids if (j := self.job(i)) is not None})

    def vacate(self, job_id: JobId) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.state is not JobState.RUNNING:
            raise PoolError(f"job {job_id} is not running")
        executed = self.now - job.start
        mode = self.settings.checkpointing
        if mode is Checkpointing.ON_VACATE:
            job.gain = executed
        elif mode is Checkpointing.PERIODIC:
            job.gain = _last_checkpoint(executed, self.settings.checkpoint_interval)
        else:
            job.gain = 0.0
        job.state = JobState.VACATING
        job.vacate_sent = self.now
        self.later.append((self.now + self.settings.vacate_delay, "release",
                           (job.spec.id, job.run_id)))

    def reserve(self, slot: str, owner: str, shape: Shape) -> None:
        if slot not in self.slots and slot not in self.machines:
            raise PoolError(f"no slot {slot}")
        self.book.reserve(slot, owner, self.now, self.running.get(owner, 0), shape)

    def hold(self, holds: Mapping[str, int]) -> None:
        if self.settings.holds:
            self.book.hold(holds)

    # -- what happens to jobs -------------------------------------------------------------------

    def _view(self, job: SimJob) -> Job:
        spec = job.spec
        if job.state is JobState.IDLE:
            return Job(spec.id, spec.owner, JobState.IDLE, spec.submit, cpus=spec.cpus,
                       memory=spec.memory, gpus=spec.gpus, disk=spec.disk)
        checkpoint = None
        if self.settings.checkpointing is Checkpointing.PERIODIC:
            done = _last_checkpoint(self.now - job.start, self.settings.checkpoint_interval)
            if done > 0:
                checkpoint = job.start + done
        return Job(
            spec.id, spec.owner, job.state, spec.submit,
            slot=job.slot.spec.name if job.slot else None,
            start_time=job.start, checkpoint_time=checkpoint, cpus=spec.cpus, memory=spec.memory,
            gpus=spec.gpus, disk=spec.disk,
        )

    def arrive(self, spec: JobSpec, queued: bool = True) -> None:
        """``spec`` is submitted; it joins the queue the negotiator matches from now, or (not
        ``queued``) when :meth:`enqueue` says. Either way it is an idle job of the pool's."""
        if spec.id in self.jobs:
            raise PoolError(f"duplicate job id {spec.id}")
        job = SimJob(spec, len(self.jobs))
        self.jobs[spec.id] = job
        if queued:
            heapq.heappush(self.idle[spec.owner], (spec.submit, job.seq, spec.id))

    def enqueue(self, job_id: JobId) -> None:
        """A job submitted earlier joins the queue now, behind the jobs already in it."""
        job = self.jobs[job_id]
        heapq.heappush(self.idle[job.spec.owner], (self.now, job.seq, job_id))

    def start(self, job: SimJob, slot: SimSlot) -> None:
        self.accountant.accrue(self.now, self.running)
        job.state = JobState.RUNNING
        job.start = self.now
        job.slot = slot
        job.run_id += 1
        slot.job = job
        self.running[job.spec.owner] += 1
        self.later.append((self.now + job.spec.runtime - job.saved, "finish",
                           (job.spec.id, job.run_id)))

    def _leave(self, job: SimJob, vacated: bool) -> None:
        self.accountant.accrue(self.now, self.running)
        slot = job.slot
        assert slot is not None
        useful = job.gain if vacated else self.now - job.start
        job.runs.append(Run(slot.spec.name, job.start, self.now, vacated, useful, job.vacate_sent))
        if self.on_leave is not None:
            self.on_leave(job.spec, job.start, vacated)
        slot.job = None
        if slot.parent is not None:  # a dynamic slot goes back to its machine
            slot.parent.give_back(slot)
            del self.slots[slot.spec.name]
        job.slot = None
        job.vacate_sent = None
        self.running[job.spec.owner] -= 1

    def finish(self, job_id: JobId, run_id: int) -> None:
        job = self.jobs[job_id]
        if job.run_id != run_id or job.state not in (JobState.RUNNING, JobState.VACATING):
            return  # a stale event of an earlier run
        self._leave(job, vacated=False)
        job.state = JobState.COMPLETED
        job.finish = self.now
        self.completed += 1

    def release(self, job_id: JobId, run_id: int) -> None:
        job = self.jobs[job_id]
        if job.run_id != run_id or job.state is not JobState.VACATING:
            return  # finished during its vacate
        self._leave(job, vacated=True)
        job.saved += job.gain
        job.gain = 0.0
        job.state = JobState.IDLE
        heapq.heappush(self.idle[job.spec.owner], (job.spec.submit, job.seq, job.spec.id))
        self.vacates += 1

    def start_on(self, job: SimJob, machine: SimMachine) -> None:
        """Start ``job`` in a dynamic slot carved for it from ``machine``."""
        slot = machine.carve(job.spec.shape)
        self.slots[slot.spec.name] = slot
        self.start(job, slot)

    def pop_fitting(self, owner: str, room: Room, cpus: int | None = None) -> SimJob | None:
        """The owner's oldest idle job that fits ``room`` (and asks for no more than ``cpus``
        cores, if given), taken off its queue; None if none does."""
        queue = self.idle.get(owner)
        if not queue:
            return None
        passed = []
        found = None
        while queue:
            entry = heapq.heappop(queue)
            job = self.jobs[entry[2]]
            if fits(job.spec.shape, room) and (cpus is None or job.spec.cpus <= cpus):
                found = job
                break
            passed.append(entry)
        for entry in passed:
            heapq.heappush(queue, entry)
        return found

    def records(self) -> tuple[JobRecord, ...]:
        """Every job's record. A job still on a slot (the run stopped at a horizon) has its run so
        far, up to now: it held the slot until then, and is not counted as waiting for one."""
        return tuple(
            JobRecord(j.spec.id, j.spec.owner, j.spec.submit, j.spec.runtime, j.finish,
                      (*j.runs, Run(j.slot.spec.name, j.start, self.now, False, 0.0, j.vacate_sent))
                      if j.slot is not None and j.finish is None else tuple(j.runs))
            for j in self.jobs.values()
        )


def _last_checkpoint(executed: float, interval: float) -> float:
    if interval <= 0:
        return 0.0
    return math.floor(executed / interval) * interval

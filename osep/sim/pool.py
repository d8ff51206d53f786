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

What it keeps for the negotiator, so that a cycle looks only at what can change hands: each owner's
queued jobs by shape (:class:`IdleQueue`: the oldest job that fits a room is found at the heads of
the shapes' queues), the free static slots and the partitionable machines with cores unclaimed, in
the pool's order, and how many jobs are idle. It keeps no record of finished jobs: what happens to
each job is told, as it happens, to a :class:`Watch` (the run records of
:class:`osep.sim.watch.Recorder`, the meters of :class:`osep.sim.watch.Metering`), and a job that
finished is forgotten. The pool view the policy reads (:class:`osep.core.view.PoolView`) is kept
only in a run that enforces a policy, and told at each snapshot what each job on a slot changed
since the last (field by field, no :class:`osep.core.model.Job` made) and how many idle jobs of each
shape the owners whose idle jobs changed have (no entry per idle job: the first of a shape in queue
order is looked up in the owner's queue when a decision asks, as it seldom does). A snapshot's jobs
therefore list the jobs on a slot only, as a live snapshot's do. A pool of static slots only
without periodic checkpoints counts its running jobs the same way (:mod:`osep.sim.counts`): it keeps
each owner's running jobs in the order they started, which is the order a decision vacates them
in, and marks its free static slots in the view as they change; then a snapshot's jobs list only
the vacating ones. The fair-share usage is kept only for an order that ranks by it.

Not modelled: matchmaking by arbitrary Requirements, claim reuse between jobs of the same owner,
network transfer times and schedd limits.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Protocol

from osep.core.jobtable import Row
from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.core.pool import Look
from osep.core.reservations import ReservationBook
from osep.core.resources import Room, Shape, add_room, fits, less
from osep.core.view import PoolView
from osep.errors import PoolError
from osep.sim.counts import JobCounts, RunningSlots
from osep.sim.fairshare import Accountant
from osep.sim.specs import Checkpointing, JobSpec, PoolSettings, SlotSpec

# The job states and checkpointing modes the pool reads at every event (a module's name is read
# several times faster than an enum's member).
_IDLE, _RUNNING, _VACATING, _COMPLETED = (JobState.IDLE, JobState.RUNNING, JobState.VACATING,
                                          JobState.COMPLETED)
_PERIODIC, _ON_VACATE = Checkpointing.PERIODIC, Checkpointing.ON_VACATE

# How many more changes than jobs the pool keeps for its view between two snapshots: past that (no
# snapshot for long), the view is told them at once, so that what is kept stays bounded by the jobs.
_CHANGES_OVER_JOBS = 4096


class Watch(Protocol):
    """What a simulated pool tells as it happens, in time order (all at the pool's ``now``)."""

    def submit(self, t: float, spec: JobSpec) -> None:
        """The job was submitted."""

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        """A run of the job began on ``slot``."""

    def signal(self, t: float, spec: JobSpec) -> None:
        """The job was told to vacate (it keeps its slot until it releases it, or finishes)."""

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        """The run ended without the job finishing: ``vacated`` (it goes back to the queue, having
        kept ``useful`` seconds of work), or cut off where the simulation stopped."""

    def finish(self, t: float, spec: JobSpec) -> None:
        """The job's run ended with the job done."""


class Unwatched:
    """A :class:`Watch` that keeps nothing."""

    def submit(self, t: float, spec: JobSpec) -> None:
        pass

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        pass

    def signal(self, t: float, spec: JobSpec) -> None:
        pass

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        pass

    def finish(self, t: float, spec: JobSpec) -> None:
        pass


# A queued job: (the time it joined the queue, its arrival number, its id), oldest first.
Entry = tuple[float, int, JobId]


class IdleQueue:
    """One owner's queued jobs, oldest first, kept by shape: the oldest that fits a room is the
    oldest of the heads of the shapes that fit (an owner has a few shapes, and many jobs)."""

    __slots__ = ("_shapes", "count")

    def __init__(self) -> None:
        self._shapes: dict[Shape, list[Entry]] = {}
        self.count = 0  # how many jobs are queued (len, read straight where it is read often)

    def __len__(self) -> int:
        return self.count

    def push(self, entry: Entry, shape: Shape) -> None:
        heap = self._shapes.get(shape)
        if heap is None:
            heap = self._shapes[shape] = []
        heapq.heappush(heap, entry)
        self.count += 1

    def shapes(self) -> Mapping[Shape, list[Entry]]:
        """The queued jobs of each shape, in a heap (read, never change)."""
        return self._shapes

    def head(self) -> Entry:
        """The oldest job (the queue must not be empty)."""
        shapes = self._shapes
        if len(shapes) == 1:  # most owners' jobs have one shape
            for heap in shapes.values():
                return heap[0]
        return min(heap[0] for heap in shapes.values())

    def pop_fitting(self, room: Room, cpus: int | None = None) -> Entry | None:
        """The oldest job that fits ``room`` (and asks for at most ``cpus`` cores, if given), taken
        off the queue; None if none does."""
        best: Entry | None = None
        where: Shape | None = None
        for shape, heap in self._shapes.items():
            if (fits(shape, room) and (cpus is None or shape[0] <= cpus)
                    and (best is None or heap[0] < best)):
                best, where = heap[0], shape
        if where is None:
            return None
        heap = self._shapes[where]
        heapq.heappop(heap)
        if not heap:
            del self._shapes[where]
        self.count -= 1
        return best


class Places:
    """Places with room free (static slots without a job, machines with a core unclaimed), as
    their positions in the pool's order, and how many have each room."""

    __slots__ = ("positions", "rooms")

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.rooms: dict[Room, int] = {}

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, position: int, room: Room) -> None:
        bisect.insort(self.positions, position)
        self.rooms[room] = self.rooms.get(room, 0) + 1

    def remove(self, position: int, room: Room) -> None:
        del self.positions[bisect.bisect_left(self.positions, position)]
        left = self.rooms[room] - 1
        if left:
            self.rooms[room] = left
        else:
            del self.rooms[room]

    def walk(self) -> Iterator[int]:
        """The positions in order; the one given may be taken out (or changed) before the next is
        asked for."""
        k = 0
        positions = self.positions
        while k < len(positions):
            position = positions[k]
            yield position
            if k < len(positions) and positions[k] == position:
                k += 1


class SimJob:
    __slots__ = (
        "finish",
        "gain",
        "run_id",
        "saved",
        "seq",
        "shape",
        "slot",
        "spec",
        "start",
        "state",
        "vacate_sent",
    )

    def __init__(self, spec: JobSpec, seq: int, shape: Shape) -> None:
        self.spec = spec
        self.shape = shape  # spec.shape, one tuple shared by the pool's jobs of that shape
        self.seq = seq
        self.state = _IDLE
        self.slot: SimSlot | None = None
        self.start = 0.0
        self.saved = 0.0
        self.finish: float | None = None
        self.run_id = 0
        self.vacate_sent: float | None = None
        self.gain = 0.0


class SimSlot:
    """A static slot (``index``: its place in the pool's order), or a dynamic slot carved from
    ``parent``."""

    __slots__ = ("index", "job", "parent", "room", "spec")

    def __init__(self, spec: SlotSpec, parent: SimMachine | None = None, index: int = -1) -> None:
        self.spec = spec
        self.room: Room = spec.room
        self.job: SimJob | None = None
        self.parent = parent
        self.index = index


class SimMachine:
    """A partitionable slot: what it has unclaimed, and the dynamic slots carved from it
    (``index``: its place in the pool's order)."""

    __slots__ = ("carved", "free", "index", "spec")

    def __init__(self, spec: SlotSpec, index: int = -1) -> None:
        self.spec = spec
        self.free: Room = spec.room
        self.carved = 0
        self.index = index

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
    """Slots, jobs and the reservation book; :mod:`osep.sim.driver` moves it through time.

    ``keep_view``: keep the pool view (:attr:`view`) up to date from the start, as the policy reads
    it at every enforcement cycle; a run without enforcement does not need it, and without it the
    view is built at the first :meth:`snapshot` (if any) and kept from then on."""

    def __init__(self, slots: Iterable[SlotSpec], settings: PoolSettings,
                 keep_view: bool = True) -> None:
        self.now = 0.0
        self.settings = settings
        specs = list(slots)
        # Static and dynamic slots by name (dynamic ones come and go with their jobs), and machines.
        self.slots = {s.name: SimSlot(s) for s in specs if not s.partitionable}
        self.machines = {s.name: SimMachine(s) for s in specs if s.partitionable}
        static = list(self.slots.values())
        machines = list(self.machines.values())
        for k, place in enumerate(static):
            place.index = k
        for k, machine in enumerate(machines):
            machine.index = k
        self.capacity = sum(s.as_slot().slots for s in specs)
        self.jobs: dict[JobId, SimJob] = {}  # submitted and not finished
        # Owners with jobs queued (an owner whose queue empties is dropped).
        self.idle: dict[str, IdleQueue] = {}
        self.waiting = 0  # idle jobs, queued or not
        # The static slots and the machines in the pool's order, and which are free (static slots
        # without a job, machines with a core unclaimed), as sorted positions in those lists.
        self._static = static
        self._free = Places()
        for place in static:
            self._free.add(place.index, place.room)
        self._machines = machines
        self._open = Places()
        for machine in machines:
            if machine.free[0] > 0:
                self._open.add(machine.index, machine.free)
        self._arrived = 0
        self._shapes: dict[Shape, Shape] = {}  # every job shape met, each one tuple
        self.watch: Watch = Unwatched()
        self.book = ReservationBook(settings.reservation_lifetime)
        self.later: list[Later] = []  # collected by the driver after every call
        self.vacates = 0
        self.completed = 0
        self.running: dict[str, int] = defaultdict(int)  # owner -> slots its jobs occupy
        self.accountant = Accountant(settings.half_life, settings.initial_usage)
        # Whether the accountant is kept up to date (the negotiator's order reads it).
        self.accounts = True
        # Told of every run that ends: (job, its start, now, vacated).
        self.on_leave: Callable[[JobSpec, float, float, bool], None] | None = None
        # What the policy reads, kept up to date as jobs and slots change (osep.core.view), once
        # kept; with periodic checkpoints, when each running job's next checkpoint falls:
        # (time, job id, run) in a heap (kept with the view).
        self.view = PoolView()
        self.keeps_view = False
        # The jobs changed since the view was last brought up to date (at every snapshot), each
        # with its row as the view is to be told it (None: gone), made when the job changed: the
        # view is told each one's change since then, so that a job that comes and goes between two
        # snapshots costs it nothing, and one that arrives and starts costs it one change. (With
        # periodic checkpoints a row's checkpoint depends on the snapshot's time: made afresh then.)
        self._changed: dict[JobId, Row | None] = {}
        self._told = self.view.jobs.entries  # the jobs the view has (reached straight)
        # Idle jobs not in a queue yet (see enqueue), by owner.
        self.unqueued: dict[str, dict[JobId, SimJob]] = {}
        self._checkpoints: list[tuple[float, JobId, int]] = []
        self._periodic = (settings.checkpointing is _PERIODIC
                          and settings.checkpoint_interval > 0)
        # The idle jobs, counted for the view as they come and go (once it is kept); in a pool of
        # static slots only without periodic checkpoints, the running jobs too (their order as
        # victims is the order they started in, which the pool sees as it goes): the view is not
        # told them one by one: the pool marks its free static slots in the view as they change,
        # and the view reads which run a job from the pool's slots.
        self._counts_runs = not machines and not self._periodic
        self.counted = JobCounts(self.idle, self.unqueued, self._counts_runs, self._shapes,
                                 self._changed)
        self._recount = self.counted.recount  # (reached straight at every event)
        self._runs = self.counted.runs if self.counted.runs is not None else {}  # (the same)
        self._mixed = False  # whether the pool met jobs of more than one shape (counts kept)
        self._counting = False  # whether it counts its running jobs for a view it keeps
        if keep_view:
            self._keep_view()

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
            view.put_slot(_machine_slot(machine))
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
                done = _last_checkpoint(self.now - job.start, self.settings.checkpoint_interval)
                self._next_checkpoint(job, done + self.settings.checkpoint_interval)
        running.sort(key=lambda job: job.start)  # (equal starts: the view's reader orders them)
        for job in running:
            assert job.slot is not None
            self.counted.run(job, job.slot.spec.name)

    # -- the Pool interface -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The pool now, from the view kept as jobs changed (no job is looked at here but those
        whose periodic checkpoint fell since the last snapshot)."""
        if not self.keeps_view:
            self._keep_view()
        self._tell_view()
        self._checkpoint()
        idle = {o: q.count for o, q in self.idle.items()}  # (an owner's empty queue is dropped)
        running = {o: n for o, n in self.running.items() if n}
        self.book.expire(self.now, running, idle)
        view = self.view
        kept, _lost = self.book.mark(view)
        return view.snapshot(self.now, kept)

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
            self._next_checkpoint(job, _last_checkpoint(self.now - job.start, interval) + interval)

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
        last told need not know of it. (:meth:`_shown` written out: once per job, 191,303 calls
        fewer on the trace.)"""
        job_id = job.spec.id
        changed = self._changed
        if job_id in self._told:
            changed[job_id] = None
            if len(changed) > len(self.jobs) + _CHANGES_OVER_JOBS:
                self._tell_view()
        else:
            changed.pop(job_id, None)

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
        spec = job.spec
        self.view.change(spec.id, spec.owner, job.state, spec.submit,
                         job.slot.spec.name if job.slot else None, job.start,
                         self._checkpoint_of(job), job.shape)

    def _checkpoint_of(self, job: SimJob) -> float | None:
        """The last periodic checkpoint of the job's current run, if any (None: none yet)."""
        if self.settings.checkpointing is _PERIODIC:
            done = _last_checkpoint(self.now - job.start, self.settings.checkpoint_interval)
            if done > 0:
                return job.start + done
        return None

    def job(self, job_id: JobId) -> Job | None:
        job = self.jobs.get(job_id)
        if job is None or job.finish is not None:
            return None
        return self._view(job)

    def look(self, job_ids: Iterable[JobId]) -> Look:
        return Look({i: j for i in job_ids if (j := self.job(i)) is not None})

    def vacate(self, job_id: JobId) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.state is not _RUNNING:
            raise PoolError(f"job {job_id} is not running")
        executed = self.now - job.start
        mode = self.settings.checkpointing
        if mode is _ON_VACATE:
            job.gain = executed
        elif mode is _PERIODIC:
            job.gain = _last_checkpoint(executed, self.settings.checkpoint_interval)
        else:
            job.gain = 0.0
        if self._counting:
            self.counted.stop(job)
        job.state = _VACATING
        job.vacate_sent = self.now
        if self.keeps_view:
            self._shown(job_id, self._row(job))
        self.watch.signal(self.now, job.spec)
        self.later.append((self.now + self.settings.vacate_delay, "release",
                           (job.spec.id, job.run_id)))

    def reserve(self, slot: str, owner: str, shape: Shape) -> None:
        if slot not in self.slots and slot not in self.machines:
            raise PoolError(f"no slot {slot}")
        self.book.reserve(slot, owner, self.now, self.running.get(owner, 0), shape)

    def hold(self, holds: Mapping[str, int], leaving: Collection[JobId] = ()) -> None:
        """The simulated negotiator counts a held owner's allowance from what it runs when it
        negotiates, so the jobs ``leaving`` need no counting here."""
        if self.settings.holds:
            self.book.hold(holds)

    # -- what happens to jobs -------------------------------------------------------------------

    def _view(self, job: SimJob) -> Job:
        # (Positional arguments: a quarter cheaper than keywords.)
        spec = job.spec
        if job.state is _IDLE:
            return Job(spec.id, spec.owner, _IDLE, spec.submit, None, None, None, spec.cpus,
                       spec.memory, spec.gpus, spec.disk)
        return Job(spec.id, spec.owner, job.state, spec.submit,
                   job.slot.spec.name if job.slot else None, job.start, self._checkpoint_of(job),
                   spec.cpus, spec.memory, spec.gpus, spec.disk)

    def arrive(self, spec: JobSpec, queued: bool = True) -> None:
        """``spec`` is submitted; it joins the queue the negotiator matches from now, or (not
        ``queued``) when :meth:`enqueue` says. Either way it is an idle job of the pool's."""
        if spec.id in self.jobs:
            raise PoolError(f"duplicate job id {spec.id}")
        shape = spec.shape
        known = self._shapes.get(shape)
        if known is None:  # a shape not met before
            known = self._shapes[shape] = shape
            if len(self._shapes) > 1 and not self._mixed:
                self._mixed = True
                self.counted.mix()
        job = SimJob(spec, self._arrived, known)
        self._arrived += 1
        self.jobs[spec.id] = job
        self.waiting += 1
        self.watch.submit(self.now, spec)
        if queued:
            self._queue(job, spec.submit)
        else:
            self.unqueued.setdefault(spec.owner, {})[spec.id] = job
            if self.keeps_view:
                self.counted.hold(spec.owner, job.shape)
        if self.keeps_view:
            self._recount.add(spec.owner)

    def enqueue(self, job_id: JobId) -> None:
        """A job submitted earlier joins the queue now, behind the jobs already in it."""
        job = self.jobs[job_id]
        owner = job.spec.owner
        held = self.unqueued[owner]
        del held[job_id]
        if not held:
            del self.unqueued[owner]
        if self.keeps_view:
            self.counted.unhold(owner, job.shape)
        self._queue(job, self.now)

    def _queue(self, job: SimJob, since: float) -> None:
        spec = job.spec
        queue = self.idle.get(spec.owner)
        if queue is None:
            queue = self.idle[spec.owner] = IdleQueue()
        queue.push((since, job.seq, spec.id), job.shape)

    def start(self, job: SimJob, slot: SimSlot) -> None:
        spec, now = job.spec, self.now
        owner = spec.owner
        if self.accounts:
            self.accountant.occupy(now, owner, 1)
        if slot.parent is None:
            self._free.remove(slot.index, slot.room)
        self.waiting -= 1
        self.watch.start(now, spec, slot.spec.name)
        job.state = _RUNNING
        job.start = now
        job.slot = slot
        run = job.run_id = job.run_id + 1
        slot.job = job
        self.running[owner] += 1
        self.later.append((now + spec.runtime - job.saved, "finish", (spec.id, run)))
        if self._counting:  # (JobCounts.run written out: once per run)
            self._recount.add(owner)
            name = slot.spec.name
            runs = self._runs.get(owner)
            if runs is None:
                runs = self._runs[owner] = {}
            runs[spec.id] = (now, name, job.shape)
            if self._mixed:
                self.counted.count(owner, job.shape, 1)
            self.view.free_static.discard(name)
        elif self.keeps_view:
            self._recount.add(owner)
            # The job's row (_row written out, with no checkpoint yet: once per run, 191,303 calls
            # fewer on the trace).
            self._changed[spec.id] = (owner, _RUNNING, spec.submit, slot.spec.name, now, None,
                                      job.shape, True)
            if self._periodic:
                self._next_checkpoint(job, self.settings.checkpoint_interval)

    def _leave(self, job: SimJob, vacated: bool) -> None:
        owner = job.spec.owner
        if self.accounts:
            self.accountant.occupy(self.now, owner, -1)
        slot = job.slot
        assert slot is not None
        if vacated:
            self.watch.end(self.now, job.spec, True, job.gain)
        else:
            self.watch.finish(self.now, job.spec)
        if self.on_leave is not None:
            self.on_leave(job.spec, job.start, self.now, vacated)
        slot.job = None
        if slot.parent is not None:  # a dynamic slot goes back to its machine
            machine = slot.parent
            if machine.free[0] > 0:
                self._open.remove(machine.index, machine.free)
            machine.give_back(slot)
            if machine.free[0] > 0:
                self._open.add(machine.index, machine.free)
            del self.slots[slot.spec.name]
            if self.keeps_view:
                self.view.drop_slot(slot.spec.name)
                self.view.put_slot(_machine_slot(machine))
        else:
            self._free.add(slot.index, slot.room)
            if self._counting:
                if job.state is _RUNNING:  # (JobCounts.stop written out: the most common end)
                    del self._runs[owner][job.spec.id]
                    if self._mixed:
                        self.counted.count(owner, job.shape, -1)
                    self._recount.add(owner)
                self.view.free_static.add(slot.spec.name)
        job.slot = None
        job.vacate_sent = None
        self.running[job.spec.owner] -= 1

    def finish(self, job_id: JobId, run_id: int) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.run_id != run_id or job.state not in (_RUNNING,
                                                                    _VACATING):
            return  # a stale event of an earlier run
        told = job.state is _VACATING or not self._counting  # (a job counted running is not told)
        self._leave(job, vacated=False)
        job.state = _COMPLETED
        job.finish = self.now
        self.completed += 1
        del self.jobs[job_id]
        if told and self.keeps_view:
            self._off_slot(job)

    def release(self, job_id: JobId, run_id: int) -> None:
        job = self.jobs.get(job_id)
        if job is None or job.run_id != run_id or job.state is not _VACATING:
            return  # finished during its vacate
        self._leave(job, vacated=True)
        job.saved += job.gain
        job.gain = 0.0
        job.state = _IDLE
        self.waiting += 1
        self._queue(job, job.spec.submit)
        self.vacates += 1
        if self.keeps_view:
            self._recount.add(job.spec.owner)
            self._off_slot(job)

    def start_on(self, job: SimJob, machine: SimMachine) -> None:
        """Start ``job`` in a dynamic slot carved for it from ``machine``."""
        if machine.free[0] > 0:
            self._open.remove(machine.index, machine.free)
        slot = machine.carve(job.spec.shape)
        if machine.free[0] > 0:
            self._open.add(machine.index, machine.free)
        self.slots[slot.spec.name] = slot
        if self.keeps_view:
            self.view.put_slot(_machine_slot(machine))
            self.view.put_slot(slot.spec.as_slot(machine.spec.name))
        self.start(job, slot)

    # -- what the negotiator asks ---------------------------------------------------------------

    def pop_fitting(self, owner: str, room: Room, cpus: int | None = None) -> SimJob | None:
        """The owner's oldest queued job that fits ``room`` (and asks for no more than ``cpus``
        cores, if given), taken off its queue; None if none does."""
        queue = self.idle.get(owner)
        if queue is None:
            return None
        entry = queue.pop_fitting(room, cpus)
        if not queue:
            del self.idle[owner]
        return None if entry is None else self.jobs[entry[2]]

    def free_slots(self) -> Iterator[SimSlot]:
        """The static slots without a job, in the pool's order (a job may start on the one given
        before the next is asked for)."""
        return (self._static[k] for k in self._free.walk())

    def free_rooms(self) -> dict[Room, int]:
        """How many static slots without a job have each room."""
        return dict(self._free.rooms)

    def open_machines(self) -> Iterator[SimMachine]:
        """The partitionable machines with a core unclaimed, in the pool's order (jobs may start on
        the one given before the next is asked for)."""
        return (self._machines[k] for k in self._open.walk())

    def open_rooms(self) -> dict[Room, int]:
        """How many machines with a core unclaimed have each room unclaimed."""
        return dict(self._open.rooms)

    def can_match(self) -> bool:
        """Whether a negotiation now could hand something over: a static slot or a core of a
        machine is free, and some owner not held to nothing has a job queued, or room is kept for
        someone."""
        if not self._free and not self._open:
            return False
        book = self.book
        return book.pending() or book.may_match_any(self.idle)

    def running_jobs(self) -> list[SimJob]:
        """The jobs on a slot (running or vacating), in the order they arrived."""
        return [j for j in self.jobs.values() if j.slot is not None]


def _machine_slot(machine: SimMachine) -> Slot:
    """A partitionable slot as a snapshot shows it: with what it has unclaimed."""
    return Slot(machine.spec.name, *machine.free, partitionable=True)


def _last_checkpoint(executed: float, interval: float) -> float:
    if interval <= 0:
        return 0.0
    return math.floor(executed / interval) * interval

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
queued jobs by shape (:class:`osep.sim.parts.IdleQueue`: the oldest job that fits a room is found at
the heads of the shapes' queues), the free static slots and the partitionable machines with cores
unclaimed, in the pool's order, and how many jobs are idle. It keeps no record of finished jobs:
what happens to each job is told, as it happens, to a :class:`osep.sim.watch.Watch`, and a job that
finished is forgotten. The pool view the policy reads is kept as :mod:`osep.sim.keeping` says. The
fair-share usage is kept only for an order that ranks by it.

Not modelled: matchmaking by arbitrary Requirements, claim reuse between jobs of the same owner,
network transfer times and schedd limits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from osep.core.jobtable import Row
from osep.core.model import Job, JobId, JobState, Snapshot
from osep.core.pool import Look
from osep.core.reservations import ReservationBook
from osep.core.resources import Room, Shape
from osep.core.view import PoolView
from osep.errors import PoolError
from osep.fairshare.usage import Accountant
from osep.sim.counts import JobCounts
from osep.sim.keeping import ViewKeeping, last_checkpoint, machine_slot
from osep.sim.parts import IdleQueue, Places, SimJob, SimMachine, SimSlot
from osep.sim.specs import Checkpointing, JobSpec, PoolSettings, SlotSpec
from osep.sim.watch import Unwatched, Watch

# The job states and checkpointing modes the pool reads at every event (a module's name is read
# several times faster than an enum's member).
_IDLE, _RUNNING, _VACATING, _COMPLETED = (JobState.IDLE, JobState.RUNNING, JobState.VACATING,
                                          JobState.COMPLETED)
_PERIODIC, _ON_VACATE = Checkpointing.PERIODIC, Checkpointing.ON_VACATE

# What the pool asks its driver to do later: (time, kind, data).
Later = tuple[float, str, tuple[JobId, int]]


class SimulatedPool(ViewKeeping):
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
        self._counting = False  # whether it counts its running jobs for a view it keeps
        if keep_view:
            self._keep_view()


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
            job.gain = last_checkpoint(executed, self.settings.checkpoint_interval)
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
            if len(self._shapes) > 1:
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
        if self._counting:
            name = slot.spec.name
            self.counted.run(job, name)
            self.view.free_static.discard(name)
        elif self.keeps_view:
            self._recount.add(owner)
            self._shown(spec.id, self._row(job))
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
                self.view.put_slot(machine_slot(machine))
        else:
            self._free.add(slot.index, slot.room)
            if self._counting:
                if job.state is _RUNNING:
                    self.counted.stop(job)
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
            self.view.put_slot(machine_slot(machine))
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

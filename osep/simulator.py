"""A discrete-event simulation of an HTCondor pool on virtual time.

It implements :class:`osep.pool.Pool`, so the enforcement loop runs against it exactly as it will run
against a live pool. What it models, and what it leaves out:

- static slots (cpus, memory) that run one job each; a job fits a slot when its request fits;
- job arrivals at their submit time, and run times; a job's run lasts ``runtime - saved work``;
- a negotiation cycle every ``negotiation_interval`` seconds that matches idle jobs to free slots:
  first come first served (``fifo``), or by the Fair-Share priority factor (``fairshare``);
- a vacate: the job keeps its slot for ``vacate_delay`` seconds, then goes back to the queue (keeping
  its submit time, as HTCondor keeps QDate) and the slot is free for the next negotiation;
- reservations: a reserved free slot goes only to its owner's jobs at the next negotiation, and lapses
  after ``reservation_timeout`` seconds or as soon as the owner has no idle job that fits it;
- holds: an owner on hold is matched no more new slots than its allowance (what a negotiator ceiling
  does in a live pool);
- checkpointing: none (a vacated job starts over), at vacate time (all work done before the vacate
  signal is kept), or periodic every N seconds of a run (work since the last checkpoint is lost).

Not modelled: matchmaking by arbitrary Requirements, partitionable slots, claim reuse between jobs of
the same owner, network transfer times and schedd limits.
"""

from __future__ import annotations

import enum
import heapq
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from osep import fairshare
from osep.actuator import Actuator, Limits
from osep.errors import PoolError
from osep.history import JobRecord, Run
from osep.loop import Enforcer
from osep.model import Job, JobState, Slot, Snapshot
from osep.policy import PolicySettings


class Order(enum.Enum):
    """How the simulated negotiator ranks idle jobs for a free slot."""

    FIFO = "fifo"
    FAIRSHARE = "fairshare"


class Checkpointing(enum.Enum):
    NONE = "none"
    ON_VACATE = "on-vacate"
    PERIODIC = "periodic"


@dataclass(frozen=True, slots=True)
class SlotSpec:
    name: str
    cpus: int = 1
    memory: int | None = None


@dataclass(frozen=True, slots=True)
class JobSpec:
    id: str
    owner: str
    submit: float
    runtime: float
    cpus: int = 1
    memory: int = 0


@dataclass(frozen=True, slots=True)
class PoolSettings:
    negotiation_interval: float = 60.0
    vacate_delay: float = 10.0
    # None: vacate_delay plus two negotiation cycles, long enough for the slot to be handed over.
    reservation_timeout: float | None = None
    order: Order = Order.FIFO
    half_life: float = 86400.0
    initial_usage: Mapping[str, float] = field(default_factory=dict)
    checkpointing: Checkpointing = Checkpointing.NONE
    checkpoint_interval: float = 0.0
    # False: the pool ignores holds, as a pool whose negotiator has no submitter ceilings would.
    holds: bool = True
    # Stop here even if jobs remain (they are reported unfinished).
    horizon: float | None = None

    @property
    def reservation_lifetime(self) -> float:
        if self.reservation_timeout is not None:
            return self.reservation_timeout
        return self.vacate_delay + 2 * self.negotiation_interval


@dataclass(frozen=True, slots=True)
class SimResult:
    capacity: int
    jobs: tuple[JobRecord, ...]
    end: float
    cycles: int
    vacates: int


class _Event(enum.IntEnum):
    # Order of events that fall on the same instant: what ended is seen before what starts.
    FINISH = 0
    RELEASE = 1
    ARRIVE = 2
    ENFORCE = 3
    NEGOTIATE = 4


class _SimJob:
    __slots__ = ("spec", "seq", "state", "slot", "start", "saved", "runs", "finish", "run_id",
                 "vacate_sent", "gain")

    def __init__(self, spec: JobSpec, seq: int) -> None:
        self.spec = spec
        self.seq = seq
        self.state = JobState.IDLE
        self.slot: _SimSlot | None = None
        self.start = 0.0
        self.saved = 0.0
        self.runs: list[Run] = []
        self.finish: float | None = None
        self.run_id = 0
        self.vacate_sent: float | None = None
        self.gain = 0.0


class _SimSlot:
    __slots__ = ("spec", "job", "reserved_for", "reserved_until")

    def __init__(self, spec: SlotSpec) -> None:
        self.spec = spec
        self.job: _SimJob | None = None
        self.reserved_for: str | None = None
        self.reserved_until = 0.0

    def fits(self, spec: JobSpec) -> bool:
        return spec.cpus <= self.spec.cpus and (
            self.spec.memory is None or spec.memory <= self.spec.memory
        )


class SimulatedPool:
    """The pool's state and its reactions; :func:`simulate` drives it through time."""

    def __init__(
        self, slots: Iterable[SlotSpec], settings: PoolSettings, shares: Mapping[str, float]
    ) -> None:
        self.now = 0.0
        self.settings = settings
        self.shares = dict(shares)
        self.slots = {s.name: _SimSlot(s) for s in slots}
        self.jobs: dict[str, _SimJob] = {}
        self.idle: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
        self.events: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self.vacates = 0
        self.completed = 0
        self.occupied: dict[str, int] = defaultdict(int)  # slots occupied per owner, for usage
        self.usage: dict[str, float] = dict(settings.initial_usage)
        self._usage_at = 0.0
        self.held_owners: dict[str, int] = {}  # owner -> new slots it may still be given

    # -- the Pool interface -------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        now = self.now
        slots = tuple(
            Slot(
                name=s.spec.name,
                cpus=s.spec.cpus,
                memory=s.spec.memory,
                reserved_for=s.reserved_for if s.reserved_for and now <= s.reserved_until else None,
            )
            for s in self.slots.values()
        )
        jobs = tuple(self._view(j) for j in self.jobs.values() if j.finish is None)
        return Snapshot(time=now, slots=slots, jobs=jobs)

    def job(self, job_id: str) -> Job | None:
        job = self.jobs.get(job_id)
        if job is None or job.finish is not None:
            return None
        return self._view(job)

    def vacate(self, job_id: str) -> None:
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
        self.schedule(self.now + self.settings.vacate_delay, _Event.RELEASE, (job.spec.id, job.run_id))

    def reserve(self, slot: str, owner: str) -> None:
        target = self.slots.get(slot)
        if target is None:
            raise PoolError(f"no slot {slot}")
        target.reserved_for = owner
        target.reserved_until = self.now + self.settings.reservation_lifetime

    def hold(self, holds: Mapping[str, int]) -> None:
        if self.settings.holds:
            self.held_owners = dict(holds)

    # -- internals ----------------------------------------------------------------------------

    def _view(self, job: _SimJob) -> Job:
        spec = job.spec
        if job.state is JobState.IDLE:
            return Job(spec.id, spec.owner, JobState.IDLE, spec.submit, cpus=spec.cpus,
                       memory=spec.memory)
        checkpoint = None
        if self.settings.checkpointing is Checkpointing.PERIODIC:
            done = _last_checkpoint(self.now - job.start, self.settings.checkpoint_interval)
            if done > 0:
                checkpoint = job.start + done
        return Job(
            spec.id, spec.owner, job.state, spec.submit,
            slot=job.slot.spec.name if job.slot else None,
            start_time=job.start, checkpoint_time=checkpoint, cpus=spec.cpus, memory=spec.memory,
        )

    def schedule(self, time: float, kind: _Event, data: Any) -> None:
        self._seq += 1
        heapq.heappush(self.events, (time, int(kind), self._seq, data))

    def add(self, spec: JobSpec) -> None:
        self.schedule(spec.submit, _Event.ARRIVE, spec)

    def _accrue(self) -> None:
        """Bring decayed usage up to now (exact for the piecewise-constant occupancy)."""
        elapsed = self.now - self._usage_at
        if elapsed > 0:
            for owner in set(self.usage) | set(self.occupied):
                self.usage[owner] = fairshare.decayed(
                    self.usage.get(owner, 0.0), self.occupied.get(owner, 0), elapsed,
                    self.settings.half_life,
                )
            self._usage_at = self.now

    def arrive(self, spec: JobSpec) -> None:
        if spec.id in self.jobs:
            raise PoolError(f"duplicate job id {spec.id}")
        job = _SimJob(spec, len(self.jobs))
        self.jobs[spec.id] = job
        heapq.heappush(self.idle[spec.owner], (spec.submit, job.seq, spec.id))

    def _start(self, job: _SimJob, slot: _SimSlot) -> None:
        self._accrue()
        job.state = JobState.RUNNING
        job.start = self.now
        job.slot = slot
        job.run_id += 1
        slot.job = job
        slot.reserved_for = None
        self.occupied[job.spec.owner] += 1
        self.schedule(self.now + job.spec.runtime - job.saved, _Event.FINISH, (job.spec.id, job.run_id))

    def _leave(self, job: _SimJob, vacated: bool) -> None:
        self._accrue()
        slot = job.slot
        assert slot is not None
        useful = job.gain if vacated else self.now - job.start
        job.runs.append(Run(slot.spec.name, job.start, self.now, vacated, useful, job.vacate_sent))
        slot.job = None
        job.slot = None
        job.vacate_sent = None
        self.occupied[job.spec.owner] -= 1

    def finish(self, job_id: str, run_id: int) -> None:
        job = self.jobs[job_id]
        if job.run_id != run_id or job.state not in (JobState.RUNNING, JobState.VACATING):
            return  # a stale event of an earlier run
        self._leave(job, vacated=False)
        job.state = JobState.COMPLETED
        job.finish = self.now
        self.completed += 1

    def release(self, job_id: str, run_id: int) -> None:
        job = self.jobs[job_id]
        if job.run_id != run_id or job.state is not JobState.VACATING:
            return  # finished during its vacate
        self._leave(job, vacated=True)
        job.saved += job.gain
        job.gain = 0.0
        job.state = JobState.IDLE
        heapq.heappush(self.idle[job.spec.owner], (job.spec.submit, job.seq, job.spec.id))
        self.vacates += 1

    def _pop_fitting(self, owner: str, slot: _SimSlot) -> _SimJob | None:
        queue = self.idle.get(owner)
        if not queue:
            return None
        passed = []
        found = None
        while queue:
            entry = heapq.heappop(queue)
            job = self.jobs[entry[2]]
            if slot.fits(job.spec):
                found = job
                break
            passed.append(entry)
        for entry in passed:
            heapq.heappush(queue, entry)
        return found

    def negotiate(self) -> None:
        """One negotiation cycle: hand free slots to idle jobs."""
        self._accrue()
        ranked: list[str] = []
        if self.settings.order is Order.FAIRSHARE:
            prio = fairshare.factors(self.usage, self.shares)
            ranked = sorted(self.idle, key=lambda o: (-prio.get(o, 0.0), o))
        for slot in self.slots.values():
            if slot.job is not None:
                continue
            owner = slot.reserved_for
            if owner is not None:
                slot.reserved_for = None
                if self.now <= slot.reserved_until:
                    job = self._pop_fitting(owner, slot)
                    if job is not None:
                        self._start(job, slot)
                        continue
            if self.settings.order is Order.FIFO:
                # Oldest idle job first, whoever owns it: the owner whose queue head is oldest.
                ranked = [o for _, o in sorted((q[0], o) for o, q in self.idle.items() if q)]
            for candidate in ranked:
                allowed = self.held_owners.get(candidate)
                if allowed is not None and allowed <= 0:
                    continue
                job = self._pop_fitting(candidate, slot)
                if job is not None:
                    self._start(job, slot)
                    if allowed is not None:
                        self.held_owners[candidate] = allowed - 1
                    break

    def records(self) -> tuple[JobRecord, ...]:
        return tuple(
            JobRecord(j.spec.id, j.spec.owner, j.spec.submit, j.spec.runtime, j.finish,
                      tuple(j.runs))
            for j in self.jobs.values()
        )


def _last_checkpoint(executed: float, interval: float) -> float:
    if interval <= 0:
        return 0.0
    return math.floor(executed / interval) * interval


def simulate(
    slots: Iterable[SlotSpec],
    jobs: Iterable[JobSpec],
    settings: PoolSettings,
    shares: Mapping[str, float],
    policy: PolicySettings | None = None,
    limits: Limits = Limits(),
    logger: Any = None,
) -> SimResult:
    """Run the pool until every job has completed (or the horizon), enforcing ``policy`` if given.

    ``shares`` (resolved, in slots) feed the Fair-Share negotiator; the enforcement loop takes its own
    from ``policy``.
    """
    pool = SimulatedPool(slots, settings, shares)
    total = 0
    for spec in jobs:
        pool.add(spec)
        total += 1
    enforcer = Enforcer(policy, Actuator(pool, limits), logger) if policy is not None else None
    if enforcer is not None:
        pool.schedule(0.0, _Event.ENFORCE, None)
    pool.schedule(0.0, _Event.NEGOTIATE, None)
    horizon = settings.horizon if settings.horizon is not None else math.inf
    while pool.events and pool.completed < total:
        time, kind, _, data = heapq.heappop(pool.events)
        if time > horizon:
            break
        pool.now = time
        if kind == _Event.FINISH:
            pool.finish(*data)
        elif kind == _Event.RELEASE:
            pool.release(*data)
        elif kind == _Event.ARRIVE:
            pool.arrive(data)
        elif kind == _Event.ENFORCE:
            assert enforcer is not None and policy is not None
            enforcer.run_cycle(pool)
            pool.schedule(time + policy.interval, _Event.ENFORCE, None)
        else:
            pool.negotiate()
            pool.schedule(time + settings.negotiation_interval, _Event.NEGOTIATE, None)
    return SimResult(
        capacity=len(pool.slots),
        jobs=pool.records(),
        end=pool.now,
        cycles=enforcer.cycles if enforcer else 0,
        vacates=pool.vacates,
    )

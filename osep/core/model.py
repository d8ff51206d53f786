"""The project's own picture of a pool: jobs, slots and a snapshot of both.

These types are deliberately independent of HTCondor. The live adapter (:mod:`osep.htcondor`)
translates ClassAds into them and the simulator (:mod:`osep.sim`) builds them directly, so the policy
never learns where a snapshot came from.

A place a job can run is a static slot (one job at a time) or a partitionable slot, whose unclaimed
cpus, memory, GPUs and disk are carved into a dynamic slot per job. The snapshot shows a partitionable slot
with what it still has unclaimed and each dynamic slot with its ``parent``; what is counted and how
is in :mod:`osep.core.resources`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import FrozenInstanceError, dataclass
from typing import NamedTuple, Protocol

from osep.core.resources import EPS, ZERO, Room, Shape, Vec, fits, plus

__all__ = ["EPS", "Job", "JobId", "JobState", "Kept", "KeptView", "Shape", "Slot", "Snapshot"]


class JobId(NamedTuple):
    """Where a job lives: ``cluster.proc`` in the queue of ``schedd``, in the pool whose collector is
    ``pool`` ("" for the pool osep was pointed at). Ordered by schedd, then cluster and proc, as
    HTCondor numbers jobs; the simulator names each owner's jobs as if it had a schedd of its own.

    A named tuple: a pool has a million jobs, and a tuple of a string and integers is made, hashed
    and compared in C (a dataclass's ``__hash__`` and ``__eq__`` are Python calls). Its fields in
    this order are the order."""

    schedd: str
    cluster: int
    proc: int
    pool: str = ""

    @property
    def local(self) -> str:
        """``cluster.proc``: how the schedd and its event logs name the job."""
        return f"{self.cluster}.{self.proc}"

    @property
    def in_schedd(self) -> JobId:
        """The id without pool and schedd, as the schedd's own event logs give it."""
        return JobId("", self.cluster, self.proc)

    def __str__(self) -> str:
        where = f"{self.pool}/{self.schedd}" if self.pool else self.schedd
        return f"{where}#{self.local}" if where else self.local

    @classmethod
    def parse(cls, text: str) -> JobId:
        """The inverse of ``str()``: ``[[POOL/]SCHEDD#]CLUSTER.PROC`` (ValueError if it is not)."""
        where, sep, local = text.rpartition("#")
        cluster, dot, proc = local.partition(".")
        if not dot or (sep and not where):
            raise ValueError(f"not a job id: {text!r}")
        pool, slash, schedd = where.partition("/") if "/" in where else ("", "", where)
        return cls(schedd, int(cluster), int(proc), pool if slash else "")


class JobState(enum.Enum):
    """Job states the policy distinguishes; adapters map their own states onto these."""

    IDLE = "idle"
    RUNNING = "running"
    # A vacate was sent and the job still holds its slot; it will come back as IDLE.
    VACATING = "vacating"
    HELD = "held"
    COMPLETED = "completed"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class Job:
    """One job as the policy sees it.

    ``start_time`` is the start of the current run (HTCondor's JobCurrentStartDate), not of the first
    one: a job that was vacated and restarted has lost its earlier run from the policy's point of view.
    A running job that is not ``vacatable`` holds its slot and counts as running, but is never a
    victim (HTCondor: one transferring its output, or suspended).

    A negative request (or a NaN one), or a time that is not finite, is a ValueError: a programming
    error here, as every reader turns such input into its own one-line error or counted skip first.
    """

    id: JobId
    owner: str
    state: JobState
    submit_time: float = 0.0
    slot: str | None = None
    start_time: float | None = None
    checkpoint_time: float | None = None
    cpus: int = 1
    memory: int = 0
    gpus: int = 0
    disk: int = 0  # KiB
    vacatable: bool = True

    def __post_init__(self) -> None:
        # One test on the way in (every Job is made here, the view's included): ``not x >= 0``
        # holds for NaN too, and ``t - t == 0`` only for a finite t.
        start, checkpoint = self.start_time, self.checkpoint_time
        if not (self.cpus >= 0 and self.memory >= 0 and self.gpus >= 0 and self.disk >= 0
                and self.submit_time - self.submit_time == 0
                and (start is None or start - start == 0)
                and (checkpoint is None or checkpoint - checkpoint == 0)):
            raise ValueError(_bad_job(self))

    @property
    def shape(self) -> Shape:
        return (self.cpus, self.memory, self.gpus, self.disk)

    def run_time(self, now: float) -> float:
        """Wall clock of the current run; zero for a job that is not running."""
        if self.start_time is None:
            return 0.0
        return max(0.0, now - self.start_time)

    def lost_work(self, now: float) -> float:
        """Work a vacate now would throw away: time since the last checkpoint of this run, or since
        its start when it has none."""
        if self.start_time is None:
            return 0.0
        since = self.start_time
        if self.checkpoint_time is not None and self.checkpoint_time > since:
            since = self.checkpoint_time
        return max(0.0, now - since)


def _bad_job(job: Job) -> str:
    """Why ``job`` cannot be: its first negative request or time that is not finite."""
    for name in ("cpus", "memory", "gpus", "disk"):
        value = getattr(job, name)
        if not value >= 0:
            return f"job {job.id}: {name} must be at least 0, got {value!r}"
    for name in ("submit_time", "start_time", "checkpoint_time"):
        value = getattr(job, name)
        if value is not None and not math.isfinite(value):
            return f"job {job.id}: {name} must be a finite time, got {value!r}"
    return f"job {job.id}: bad values"  # not reached: __post_init__ found one of the above


@dataclass(frozen=True, slots=True)
class Slot:
    """A static slot, a partitionable slot or a dynamic slot carved from one.

    A static slot runs one job and is a place of its own. A partitionable slot (``partitionable``)
    shows what it still has unclaimed; each of its jobs runs in a dynamic slot naming it as
    ``parent``, and what a dynamic slot holds goes back to the parent when its job leaves. The
    partitionable slot is the place: room for a job there is its unclaimed part plus what leaving
    jobs give back.
    """

    name: str
    cpus: int = 1
    memory: int | None = None  # MiB; None: not modelled, any request fits
    gpus: int = 0
    disk: int | None = None  # KiB; None: not modelled, any request fits
    parent: str | None = None
    partitionable: bool = False

    @property
    def room(self) -> Room:
        return (self.cpus, self.memory, self.gpus, self.disk)

    @property
    def place(self) -> str:
        """The place this slot's resources belong to."""
        return self.parent if self.parent is not None else self.name

    def fits(self, shape: Shape) -> bool:
        """Whether a job asking for ``shape`` fits what this slot has, as far as the snapshot tells."""
        return fits(shape, self.room)

    @property
    def slots(self) -> int:
        """What this slot adds to the pool's capacity in slots: a partitionable slot's unclaimed
        cores count as one slot each (each could run a one-core job), like the dynamic slots carved
        already."""
        return self.cpus if self.partitionable else 1

    @property
    def amount(self) -> Vec:
        """What this slot adds to the pool's capacity in every resource."""
        return (float(self.slots), float(self.cpus), float(self.memory or 0), float(self.gpus),
                float(self.disk or 0))


@dataclass(frozen=True, slots=True)
class Kept:
    """Room kept for ``owner`` on ``place`` for a job of ``shape`` (a vacate made it, or it was free
    and claimed) until the next negotiation hands it over."""

    owner: str
    place: str
    shape: Shape


class KeptView(Protocol):
    """What a snapshot reads of the kept view it was taken from (:class:`osep.core.view.PoolView`):
    how many changes it has had, and its slots and jobs now."""

    @property
    def stamp(self) -> int: ...

    @property
    def slots(self) -> Mapping[str, Slot]: ...

    @property
    def jobs(self) -> Mapping[JobId, Job]: ...


class Snapshot:
    """A consistent view of the pool at ``time`` (seconds; epoch in a live pool, virtual in the
    simulator). The policy reads the time from here and never from a clock.

    ``view``: the :class:`osep.core.view.PoolView` an adapter keeps, when the snapshot was taken
    from one (then ``stamp`` is the view's stamp at that moment): a decision reads it instead of
    counting the jobs. It is not part of what the snapshot is: snapshots compare by their contents.

    Immutable, and compared, hashed and shown as a frozen dataclass of ``time``, ``slots``,
    ``jobs`` and ``kept`` would be. A snapshot taken from a kept view (:meth:`of_view`) makes its
    tuples of slots and jobs only when they are read, or when the view is about to change (the
    view tells it): a decision reads the view, and a pool of a million jobs is not copied per cycle.
    A view whose idle jobs a pool gave it as counts (the live pool's idle groups, the simulated
    pool's counts per owner and shape) lists no job for them: such a snapshot's jobs are those the
    view has one by one, and its idle jobs are counted in the view it carries.
    """

    __slots__ = ("__weakref__", "_jobs", "_slots", "kept", "stamp", "time", "view")

    time: float
    kept: tuple[Kept, ...]
    view: KeptView | None
    stamp: int
    _slots: tuple[Slot, ...] | None
    _jobs: tuple[Job, ...] | None

    def __init__(self, time: float, slots: tuple[Slot, ...], jobs: tuple[Job, ...],
                 kept: tuple[Kept, ...] = (), view: KeptView | None = None, stamp: int = 0) -> None:
        self._set(time, slots, jobs, kept, view, stamp)

    @classmethod
    def of_view(cls, view: KeptView, time: float, kept: tuple[Kept, ...] = ()) -> Snapshot:
        """The pool as ``view`` has it now; its slots and jobs copied out of the view when first
        read, or by :meth:`settle` before the view changes (the view calls it)."""
        snapshot = cls.__new__(cls)
        snapshot._set(time, None, None, kept, view, view.stamp)
        return snapshot

    def _set(self, time: float, slots: tuple[Slot, ...] | None, jobs: tuple[Job, ...] | None,
             kept: tuple[Kept, ...], view: KeptView | None, stamp: int) -> None:
        """The one place a new snapshot's fields are set (slots and jobs None: not copied out of
        ``view`` yet), past the frozen ``__setattr__`` by the slots' own setters."""
        _set_time(self, time)
        _set_slots(self, slots)
        _set_jobs(self, jobs)
        _set_kept(self, kept)
        _set_view(self, view)
        _set_stamp(self, stamp)

    def settle(self) -> None:
        """Copy the slots and jobs out of the view now (a no-op once done)."""
        if self._slots is None:
            view = self.view
            assert view is not None and view.stamp == self.stamp, "the view changed unseen"
            object.__setattr__(self, "_slots", tuple(view.slots.values()))
            object.__setattr__(self, "_jobs", tuple(view.jobs.values()))

    @property
    def slots(self) -> tuple[Slot, ...]:
        if self._slots is None:
            self.settle()
        assert self._slots is not None
        return self._slots

    @property
    def jobs(self) -> tuple[Job, ...]:
        if self._jobs is None:
            self.settle()
        assert self._jobs is not None
        return self._jobs

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _fields(self) -> tuple[object, ...]:
        return (self.time, self.slots, self.jobs, self.kept)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Snapshot)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"Snapshot(time={self.time!r}, slots={self.slots!r}, jobs={self.jobs!r}, "
                f"kept={self.kept!r})")

    def __reduce__(self) -> tuple[object, ...]:
        return (Snapshot, (self.time, self.slots, self.jobs, self.kept))

    @property
    def capacity(self) -> int:
        """Capacity in slots (see :attr:`Slot.amount`)."""
        return sum(s.slots for s in self.slots)

    def totals(self) -> Vec:
        """Capacity in every resource."""
        total = ZERO
        for s in self.slots:
            total = plus(total, s.amount)
        return total


# The setters of Snapshot's slots, which a new snapshot is filled by (Snapshot._set): they pass by its
# frozen __setattr__ as object.__setattr__ does, without looking each name up (of_view is on the
# simulator's hot path).
_set_time, _set_slots, _set_jobs, _set_kept, _set_view, _set_stamp = (
    Snapshot.__dict__[name].__set__ for name in ("time", "_slots", "_jobs", "kept", "view", "stamp"))

"""The project's own picture of a pool: jobs, slots and a snapshot of both.

These types are deliberately independent of HTCondor. The live adapter (:mod:`osep.htcondor`)
translates ClassAds into them and the simulator (:mod:`osep.sim`) builds them directly, so the policy
never learns where a snapshot came from.

Capacity is counted in slots: one running job holds one slot. Slots and jobs carry cpus and memory
already so that matching ("can this idle job use that freed slot?") is real, and so that shares in
cores or memory can be added later without changing the shape of a snapshot.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# Targets and shares can be fractional (percentages, the equal split of excess): compare with this.
EPS = 1e-9

Shape = tuple[int, int]  # what a job asks for: (cpus, memory in MiB)


def fits(shape: Shape, cpus: int, memory: int | None) -> bool:
    """The one fit check: whether a job asking for ``shape`` fits a place with ``cpus`` cores and
    ``memory`` MiB (None: memory is not modelled there, any request fits)."""
    want_cpus, want_memory = shape
    return want_cpus <= cpus and (memory is None or want_memory <= memory)


@dataclass(frozen=True, slots=True, order=True)
class JobId:
    """Where a job lives: ``cluster.proc`` in the queue of ``schedd``, in the pool whose collector is
    ``pool`` ("" for the pool osep was pointed at). Ordered by schedd, then cluster and proc, as
    HTCondor numbers jobs; the simulator names each owner's jobs as if it had a schedd of its own."""

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

    @property
    def shape(self) -> Shape:
        return (self.cpus, self.memory)

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


@dataclass(frozen=True, slots=True)
class Slot:
    """One execution slot.

    ``reserved_for`` names the owner a slot is being kept for (after a vacate, or a claim on a free
    slot); the policy counts such a slot as already belonging to that owner.
    """

    name: str
    cpus: int = 1
    memory: int | None = None  # MiB; None: not modelled, any job fits
    reserved_for: str | None = None

    def fits(self, shape: Shape) -> bool:
        """Whether a job asking for ``shape`` could run on this slot as far as the snapshot can tell."""
        return fits(shape, self.cpus, self.memory)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A consistent view of the pool at ``time`` (seconds; epoch in a live pool, virtual in the
    simulator). The policy reads the time from here and never from a clock."""

    time: float
    slots: tuple[Slot, ...]
    jobs: tuple[Job, ...]

    @property
    def capacity(self) -> int:
        return len(self.slots)

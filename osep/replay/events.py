"""Job events as osep sees them, whatever log they were read from.

:mod:`osep.htcondor.eventlog` maps HTCondor's job event log (its event type numbers and attribute names)
to these, and :mod:`osep.replay.history` rebuilds the pool's history from them without knowing about
HTCondor.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from typing import NamedTuple, TypeAlias

from osep.core.model import JobId


class EventKind(enum.Enum):
    SUBMIT = "submit"
    EXECUTE = "execute"  # a run starts on a slot
    EVICT = "evict"  # the run was stopped and the job goes back to idle (vacate, preemption)
    TERMINATE = "terminate"  # the job completed
    ABORT = "abort"  # the job was removed
    HOLD = "hold"  # the job was held (a running job loses its slot)
    RELEASE = "release"
    RUN_FAILED = "run_failed"  # the run ended abnormally (shadow exception, lost reconnect)


class LogEvent(NamedTuple):
    """A named tuple: a log of millions is read into as many of these, and a tuple is made fastest."""

    kind: EventKind
    job: JobId  # as the log names it: no schedd
    time: float  # seconds since the epoch
    source: str  # the file it came from
    position: int  # its number in that file, from 1
    slot: str | None = None  # EXECUTE: where the run is
    checkpointed: bool = False  # EVICT: the job checkpointed before leaving the slot
    owner: str | None = None  # from the job's attributes, when the log carries them
    account: str | None = None  # the whole accounting name (AccountingGroup), when logged

    @property
    def place(self) -> str:
        """Where it is in its file."""
        return f"event {self.position} (job {self.job})"

    @property
    def where(self) -> str:
        return f"{self.source}: {self.place}"


# At one instant, across logs: runs end before runs start (a slot freed and taken in the same
# second).
RANK = {kind: 0 if kind in (EventKind.EVICT, EventKind.TERMINATE, EventKind.ABORT, EventKind.HOLD,
                            EventKind.RUN_FAILED) else 1 for kind in EventKind}

# A job as replay keys it: an id with no schedd and no pool (what an event log names) as one
# integer, ``cluster << 31 | proc`` (a job number is at most 2**31 - 1, see osep.replay.damage), made,
# hashed and compared in C, one object where a tuple would be three; any other id as a plain tuple
# (schedd, cluster, proc, pool).
JOB_BITS = 31
JobKey: TypeAlias = int | tuple[str, int, int, str]

# An event as replay reads it, a plain tuple: (time, rank, the index of its file among those
# merged, position, kind, job, slot, checkpointed, owner, account). Its first four fields order
# the merged logs with no key function: by time, runs ending first within a second, then by file,
# each file in its own order. The rank is RANK's, or the rank of the row before it in its file
# when that is of the same second and higher: a file's rows then stay in their order, and merged
# as tuples they come in the order ``heapq.merge`` gives the events by (time, RANK) (a log's
# event of a second ending a run, after one of that second that does not, waits for it there).
Row: TypeAlias = tuple[float, int, int, int, EventKind, Hashable, str | None, bool, str | None,
                       str | None]


def key_of(job: JobId) -> JobKey:
    """The key of a job id (:data:`JobKey`)."""
    cluster, proc = job.cluster, job.proc
    if not job.schedd and not job.pool and 0 <= cluster < 1 << JOB_BITS and 0 <= proc < 1 << JOB_BITS:
        return cluster << JOB_BITS | proc
    return job.schedd, cluster, proc, job.pool


def job_of(key: JobKey) -> JobId:
    """The job id a key stands for."""
    if isinstance(key, int):
        return JobId("", key >> JOB_BITS, key & ((1 << JOB_BITS) - 1))
    return JobId(*key)

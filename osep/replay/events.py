"""Job events as osep sees them, whatever log they were read from.

:mod:`osep.htcondor.eventlog` maps HTCondor's job event log (its event type numbers and attribute names)
to these, and :mod:`osep.replay.history` rebuilds the pool's history from them without knowing about
HTCondor.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

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

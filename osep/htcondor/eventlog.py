"""HTCondor's job event logs, read through the bindings into :class:`osep.replay.events.LogEvent`.

The event type numbers map to the project's event kinds through the table below; everything after
this module (:mod:`osep.replay`) knows nothing of HTCondor.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import htcondor2 as htcondor

from osep.core.model import JobId
from osep.errors import LogError
from osep.htcondor.ads import owner_of
from osep.replay.events import EventKind, LogEvent

# ULogEventNumber -> the project's event kinds. Every other known type (image size, file transfer,
# disconnect, ...) says nothing about slots or demand and is skipped silently.
EVENT_KINDS: dict[int, EventKind] = {
    0: EventKind.SUBMIT,
    1: EventKind.EXECUTE,
    4: EventKind.EVICT,
    5: EventKind.TERMINATE,
    7: EventKind.RUN_FAILED,  # shadow exception
    9: EventKind.ABORT,
    12: EventKind.HOLD,
    13: EventKind.RELEASE,
    24: EventKind.RUN_FAILED,  # reconnect failed: the run is lost
}
AD_INFORMATION = 28  # carries job attributes (Owner, AcctGroup) after the event it follows
KNOWN_EVENT_TYPES = frozenset(int(t) for t in htcondor.JobEventType)
EVENT_HEADER = re.compile(rb"\n\d{3} \(\d+\.\d+\.\d+\) ")


def read_event_log(path: Path, warn: Callable[[str], None]) -> Iterator[LogEvent]:
    """The events of one HTCondor job event log, in file order.

    A log written with ``EVENT_LOG_JOB_AD_INFORMATION_ATTRS`` (or the submit command
    ``job_ad_information_attrs``) including ``Owner`` names each job's owner: the attributes in an ad
    information event go onto the event just before it. Unknown event types, unparseable text and a
    cut-off last event are passed to ``warn`` (with the file and position) and skipped; a file that
    cannot be opened raises :class:`LogError`.
    """
    name = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb"):
            pass
    except OSError as exc:
        raise LogError(f"cannot read the event log {name}: {exc.strerror or exc}") from None
    try:
        reader = htcondor.JobEventLog(name)
    except (htcondor.HTCondorException, OSError, ValueError) as exc:
        raise LogError(f"cannot read the event log {name}: {exc}") from None
    position = 0
    held: LogEvent | None = None  # the last event, until we know no ad information follows it
    held_id = JobId("", -1, -1)
    stuck_at = -1
    while True:
        events = reader.events(0)
        while True:
            try:
                raw = next(events)
            except StopIteration:
                break
            except htcondor.HTCondorException:  # an event it began but could not parse
                _, offset = reader.__getstate__()
                if offset <= stuck_at:
                    break  # it did not move past the bad text: skip ahead below
                stuck_at = offset
                position += 1
                warn(f"{name}: event {position}, before byte {offset}: not a readable event, "
                     "skipped")
                continue
            position += 1
            number = int(raw["EventTypeNumber"])
            if number == AD_INFORMATION:
                if held is not None and JobId("", raw.cluster, raw.proc) == held_id:
                    with contextlib.suppress(KeyError):
                        held = replace(held, owner=owner_of(raw, group_alone=True))
                continue
            if held is not None:
                yield held
                held = None
            kind = EVENT_KINDS.get(number)
            if kind is None:
                if number not in KNOWN_EVENT_TYPES:
                    warn(f"{name}: event {position}: unknown event type {number}, skipped")
                continue
            try:
                held_id = JobId("", raw.cluster, raw.proc)
                held = LogEvent(
                    kind=kind,
                    job=held_id,
                    time=_event_time(str(raw["EventTime"])),
                    source=name,
                    position=position,
                    slot=_slot_name(raw) if kind is EventKind.EXECUTE else None,
                    checkpointed=bool(raw.get("Checkpointed", False)) if kind is EventKind.EVICT
                    else False,
                )
            except (KeyError, ValueError, TypeError) as exc:
                warn(f"{name}: event {position}: unreadable {kind.value} event ({exc}), skipped")
        # The reader stops at the end of the file, or at text it cannot parse (silently or not).
        state, offset = reader.__getstate__()  # its pickling support exposes the byte offset
        if offset >= size:
            break
        resume = _next_header(path, offset + 1)
        if resume is None:
            warn(f"{name}: byte {offset}: the last {size - offset} bytes are not a complete event "
                 "(cut off?), ignored")
            break
        warn(f"{name}: near byte {offset}: text that is not an event, skipped to byte {resume}")
        reader = htcondor.JobEventLog.__new__(htcondor.JobEventLog)
        reader.__setstate__((state, resume))
    if held is not None:
        yield held
    reader.close()


def _event_time(text: str) -> float:
    """Seconds since the epoch. Logs are written in local time unless told to use UTC (a trailing Z);
    sub-second times keep their fraction."""
    when = datetime.datetime.fromisoformat(text)
    return when.timestamp()


def _slot_name(raw: Any) -> str:
    for key in ("SlotName", "ExecuteHost"):
        if key in raw:
            return str(raw[key])
    return "?"


def _next_header(path: Path, start: int) -> int | None:
    """Byte offset of the next line that begins an event, at or after ``start`` (>= 1)."""
    with path.open("rb") as handle:
        handle.seek(start - 1)  # from the byte before, so that a header right at start is found
        base, text = start - 1, b""
        while True:
            data = handle.read(1 << 20)
            if not data:
                return None
            text += data
            found = EVENT_HEADER.search(text)
            if found is not None:
                return base + found.start() + 1
            keep = text[-40:]
            base += len(text) - len(keep)
            text = keep

"""One event of an HTCondor job event log, read from its text the careful way: what the fast paths of
:mod:`osep.htcondor.eventlog` must agree with, and what reads every event they do not.

The event type numbers map to the project's event kinds through the table below; everything after
the event log's reader (:mod:`osep.replay`) knows nothing of HTCondor. An event is read the way
HTCondor's own reader does (``condor_utils/condor_event.cpp``): its header line (``NNN
(CLUSTER.PROC.SUBPROC) DATE TIME text``), an execute event's slot, an evict event's checkpoint flag
and an ad information event's ``Owner`` and ``AcctGroup``; every value is checked against the bounds
in :mod:`osep.replay.damage`, and what is wrong is counted there under one of the fixed texts below.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from dataclasses import dataclass

from osep.core.model import JobId
from osep.replay.damage import MAX_JOB_NUMBER, MAX_RECORD_BYTES, Damage, log_time, name_ok
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
# The event type numbers HTCondor defines (the bindings' JobEventType, which
# tests/replay/test_fast_reader.py checks this against; the bindings are not imported here, which
# would take longer than reading a small log).
KNOWN_EVENT_TYPES = frozenset(range(48)) | frozenset(range(100, 112))

# The header line as HTCondor writes it: "%03d (%03d.%03d.%03d) " and the date, either MM/DD (no
# year: the current one is taken, as HTCondor's reader does) or YYYY-MM-DD (ISO_DATE), then the
# time, with milliseconds (SUB_SECOND) and a Z (UTC) if the log was written with those options.
HEADER = re.compile(
    rb"(\d{3}) \((-?\d{1,10})\.(-?\d{1,10})\.-?\d{1,10}\) "
    rb"(?:(\d\d)/(\d\d) |(\d{4})-(\d\d)-(\d\d)[ T])(\d\d):(\d\d):(\d\d)(\.\d{1,9})?(Z)?(?: (.*))?"
)
HEADER_START = re.compile(rb"^\d{3} \(", re.MULTILINE)  # where an event begins, found or not
EXECUTE_HOST = b"Job executing on host: "
SLOT_NAME = b"\tSlotName:"
CHECKPOINT = re.compile(rb"\t\((-?\d{1,10})\) ")  # an evict event's first body line: "(1) Job was..."
AD_NAME = re.compile(rb"^(Owner|AcctGroup|AccountingGroup) = (.*)$", re.MULTILINE | re.IGNORECASE)
AD_ATTRS = {b"owner": "Owner", b"acctgroup": "AcctGroup", b"accountinggroup": "AccountingGroup"}
STRING = re.compile(rb'"([^"\\]*)"')  # a ClassAd string with nothing escaped: what names are

# Damage, as counted (see osep.replay.damage): fixed texts; the place says which event.
UNREADABLE = "not a readable event (its first line is not an event header), skipped"
NOT_EVENTS = "text that is not an event, skipped"
NO_SYNC = "an event not ended by a '...' line (read all the same)"
CUT_OFF = "not a complete event at the end (cut off?), ignored"
TOO_LONG = f"an event longer than {MAX_RECORD_BYTES >> 20} MiB, skipped"
UNKNOWN_TYPE = "unknown event type, skipped"
BAD_OWNER = "job ad information with an Owner or AcctGroup that is not a name, ignored"
BAD_SLOT = "execute event with a slot that is not a name, skipped"


@dataclass(slots=True)
class Count:
    position: int = 0  # events met, readable or not
    readable: int = 0


def minute_time(text: bytes) -> float | None:
    """Seconds since the epoch at the start of a minute given as local "YYYY-MM-DD HH:MM", or None
    when it is not a time within the bounds (its seconds are added to it: no clock is changed
    within a minute)."""
    try:
        when = datetime.datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]),
                                 int(text[11:13]), int(text[14:16])).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return when if log_time(when) is not None and log_time(when + 59) is not None else None


def read_record(text: bytes, start: int, end: int, whole: bool, name: str, year: int, damage: Damage,
            count: Count) -> Iterator[LogEvent | tuple[JobId | None, str, str]]:
    """One event's text the careful way (the text up to its "..." line; ``whole`` false for the
    text after the last one): what it gives, with anything wrong counted in ``damage``."""
    heads = [m.start() for m in HEADER_START.finditer(text)]
    if not heads:
        stripped = text.lstrip()
        if stripped:  # the start of a header cut off, or no event at all
            cut = not whole and stripped[:1].isdigit() and len(stripped) < 40
            damage.add(name, f"bytes {start} to {end}", CUT_OFF if cut else NOT_EVENTS)
        return
    if heads[0] > 0 and text[: heads[0]].strip():
        damage.add(name, f"bytes {start} to {start + heads[0]}", NOT_EVENTS)
    # Several headers: the "..." lines between those events are lost; each is read.
    for head, tail in zip(heads, [*heads[1:], None], strict=True):
        if tail is None and not whole:
            damage.add(name, f"bytes {start + head} to {end}", CUT_OFF)
            return
        count.position += 1
        position = count.position
        if tail is not None:
            damage.add(name, f"event {position}", NO_SYNC)
        found = read_event(text[head:tail], year, name, position)
        if isinstance(found, str):
            where = (f"event {position} (type {int(text[head:head + 3])})"
                     if found == UNKNOWN_TYPE else f"event {position}, byte {start + head}")
            damage.add(name, where, found)
            continue
        count.readable += 1
        if found is None:
            continue  # a known type replay has no use for
        if not isinstance(found, LogEvent):  # ad information: (job, owner or None, account, bad)
            job, owner, account, bad = found
            if bad:
                damage.add(name, f"event {position}", BAD_OWNER)
            elif owner is not None and account is not None:
                yield job, owner, account
            continue
        yield found


def read_event(text: bytes, year: int, name: str, position: int
           ) -> LogEvent | tuple[JobId | None, str | None, str | None, bool] | str | None:
    """One event's text (from its header line on): the event; for ad information, the job, the
    owner and accounting name it gives and whether they were not names; None for a known type replay does not use;
    or what is wrong with it."""
    line_end = text.find(b"\n")
    if line_end == -1:
        line_end = len(text)
    header = HEADER.fullmatch(text[:line_end].rstrip(b"\r"))
    if header is None:
        return UNREADABLE
    number = int(header[1])
    body = text[line_end + 1:]
    if number == AD_INFORMATION:
        return _ad_information(header, body)
    kind = EVENT_KINDS.get(number)
    if kind is None:
        return None if number in KNOWN_EVENT_TYPES else UNKNOWN_TYPE
    job = _job(header)
    if job is None:
        return f"{kind.value} event with a job id out of bounds, skipped"
    when = _clock(header, year)
    if when is None:
        return f"{kind.value} event with a date out of bounds, skipped"
    slot = None
    if kind is EventKind.EXECUTE:
        slot = slot_of(header[14] or b"", body)
        if slot is None:
            return BAD_SLOT
    checkpointed = False
    if kind is EventKind.EVICT:
        flag = CHECKPOINT.match(body)
        checkpointed = flag is not None and int(flag[1]) != 0
    return LogEvent(kind=kind, job=job, time=when, source=name, position=position, slot=slot,
                    checkpointed=checkpointed)


def _job(header: re.Match[bytes]) -> JobId | None:
    cluster, proc = int(header[2]), int(header[3])
    if not (0 <= cluster <= MAX_JOB_NUMBER and 0 <= proc <= MAX_JOB_NUMBER):
        return None
    return JobId("", cluster, proc)


def _clock(header: re.Match[bytes], year: int) -> float | None:
    """Seconds since the epoch, within the bounds, or None. Logs are written in local time unless
    told to use UTC (a trailing Z); HTCondor keeps milliseconds of a sub-second time."""
    if header[4] is not None:
        y, month, day = year, int(header[4]), int(header[5])
    else:
        y, month, day = int(header[6]), int(header[7]), int(header[8])
    millis = int((header[12] or b".0")[1:4].ljust(3, b"0"))
    try:
        when = datetime.datetime(y, month, day, int(header[9]), int(header[10]), int(header[11]),
                                 millis * 1000, tzinfo=datetime.UTC if header[13] else None)
        return log_time(when.timestamp())
    except (ValueError, OverflowError, OSError):
        return None


def slot_of(text: bytes, body: bytes) -> str | None:
    """Where the run is: the body's SlotName line (first), else the host the header names; "?" when
    the event names neither; None when what it names is not a name."""
    raw: bytes | None = None
    if body.startswith(SLOT_NAME):
        raw = body[len(SLOT_NAME): body.find(b"\n")].strip().strip(b'"')
    elif text.startswith(EXECUTE_HOST):
        raw = text[len(EXECUTE_HOST):].rstrip(b"\r")
    if raw is None:
        return "?"
    slot = _text(raw)
    return slot if slot is not None and name_ok(slot) else None


def _ad_information(header: re.Match[bytes], body: bytes
                    ) -> tuple[JobId | None, str | None, str | None, bool]:
    """The job, the owner the event names (as :func:`osep.htcondor.job_ads.owner_of` finds it, taking
    an AcctGroup alone as the group, since logs often record no AccountingGroup), the whole
    accounting name an owner tree places the job by (its AccountingGroup where logged, else that
    owner), and whether what it names is not a name."""
    from osep.htcondor.job_ads import owner_of  # with the ClassAd bindings: only for logs that need it

    raw = {AD_ATTRS[m[1].lower()]: m[2] for m in AD_NAME.finditer(body)}
    if not raw:
        return _job(header), None, None, False
    # A group that is not a string (undefined) is no group; an Owner that is not one is damage.
    values = {attr: text for attr, value in raw.items() if (text := _string(value)) is not None}
    try:
        owner = owner_of(values, group_alone=True)
    except KeyError:
        return _job(header), None, None, "Owner" in raw
    account = values.get("AccountingGroup") or owner
    if not name_ok(owner) or not name_ok(account):
        return _job(header), None, None, True
    return _job(header), owner, account, False


def _string(raw: bytes | None) -> str | None:
    """A ClassAd string literal with nothing escaped in it (as names are written), else None."""
    literal = STRING.fullmatch(raw.strip()) if raw is not None else None
    return _text(literal[1]) if literal is not None else None


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None

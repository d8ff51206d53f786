"""HTCondor's job event logs, read into :class:`osep.replay.events.LogEvent`.

The event type numbers map to the project's event kinds through the table below; everything after
this module (:mod:`osep.replay`) knows nothing of HTCondor.

The log is parsed here, not by the bindings' ``JobEventLog``: their reader sleeps a second on every
event it cannot parse (so that a writer can finish it), holds a whole line in memory however long it
is, and raises ``UnicodeDecodeError`` on a byte that is not UTF-8, which a damaged log of a million
events turns into hours, gigabytes or a traceback. What replay needs of an event is its header line
(``NNN (CLUSTER.PROC.SUBPROC) DATE TIME text``), an execute event's slot, an evict event's checkpoint
flag and an ad information event's ``Owner`` and ``AcctGroup``; this module reads those the way
HTCondor's own reader does (``condor_utils/condor_event.cpp``), and checks every value against the
bounds in :mod:`osep.replay.damage`. An event is the text up to a ``...`` line; one longer than
:data:`osep.replay.damage.MAX_RECORD_BYTES` is passed over without being held.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import add, and_, eq, itemgetter, lshift, lt, or_
from pathlib import Path
from typing import BinaryIO, cast

from osep.core.model import JobId
from osep.errors import LogError
from osep.replay.damage import (
    MAX_JOB_NUMBER,
    MAX_RECORD_BYTES,
    Damage,
    brief,
    log_time,
    name_ok,
    regular_file,
)
from osep.replay.events import JOB_BITS, RANK, EventKind, JobKey, LogEvent, Row, job_of, key_of

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
TAIL = 6  # bytes at the end of what is read that may hold the start of a "\n...\r\n" line
BLOCK = 64 << 10  # bytes read at a time (each log being merged holds about this much)

# Damage, as counted (see osep.replay.damage): fixed texts; the place says which event.
UNREADABLE = "not a readable event (its first line is not an event header), skipped"
NOT_EVENTS = "text that is not an event, skipped"
NO_SYNC = "an event not ended by a '...' line (read all the same)"
CUT_OFF = "not a complete event at the end (cut off?), ignored"
TOO_LONG = f"an event longer than {MAX_RECORD_BYTES >> 20} MiB, skipped"
UNKNOWN_TYPE = "unknown event type, skipped"
BAD_OWNER = "job ad information with an Owner or AcctGroup that is not a name, ignored"
BAD_SLOT = "execute event with a slot that is not a name, skipped"


def read_event_log(path: Path, warn: Callable[[str], None], *, block: int = BLOCK,
                   limit: int = MAX_RECORD_BYTES) -> Iterator[LogEvent]:
    """The events of one HTCondor job event log, in file order.

    A log written with ``EVENT_LOG_JOB_AD_INFORMATION_ATTRS`` (or the submit command
    ``job_ad_information_attrs``) including ``Owner`` names each job's owner: the attributes in an ad
    information event go onto the event just before it. Unknown event types, text that is not an
    event, an event too long to read, values out of bounds and a cut-off last event are skipped and
    counted; when the file is done, ``warn`` gets one line per kind of damage. A file that cannot be
    read, or that holds damage and not one readable event, raises :class:`LogError`.
    """
    name = str(path)
    for rows in read_event_rows(path, warn, block=block, limit=limit):
        for t, _, _, position, kind, key, slot, checkpointed, owner, account in rows:
            yield LogEvent(kind, job_of(cast(JobKey, key)), t, name, position, slot, checkpointed,
                           owner, account)


def read_event_rows(path: Path, warn: Callable[[str], None], index: int = 0, *, block: int = BLOCK,
                    limit: int = MAX_RECORD_BYTES) -> Iterator[list[Row]]:
    """What :func:`read_event_log` reads, as rows (:data:`osep.replay.events.Row`, with ``index``
    standing for the file) in lists of a block's events: what replay merges and reads, without a
    Python call or object per event beyond the row."""
    name = str(path)
    regular_file(path, "event log")
    damage = Damage(warn)
    count = _Count()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise LogError(f"{name}: cannot read the event log: {exc.strerror or exc}") from None
    with handle:
        yield from _events(handle, name, damage, count, block, limit, index)
    if count.readable == 0 and damage.total:
        where, problem = damage.first(name) or ("byte 0", "")
        raise LogError(f"{name}: {where}: not an HTCondor job event log ({brief(problem)})")
    damage.report()


@dataclass(slots=True)
class _Count:
    position: int = 0  # events met, readable or not
    readable: int = 0


# An event as the schedd writes it most of the time, after the newline that ends the line before it:
# an ISO date, whole seconds, "\n" line ends and no line of its body that could be taken for a
# header. Whatever else is read by the careful path (_record), which this one must agree with.
# COMMON matches the header line (its text up to the line end); the rest of the event is its body,
# in the common form when it holds no "\r" and no line that HEADER_LINE finds (the two searches run
# at C speed, jumping from newline to newline, where one pattern for the whole event would step
# through every byte of the body).
COMMON = re.compile(
    rb"\n(\d{3}) \((\d{1,10})\.(\d{1,10})\.\d{1,10}\) (\d{4}-\d\d-\d\d \d\d:\d\d):([0-5]\d)"
    rb"(?: ([^\r\n]*))?"
)
HEADER_LINE = re.compile(rb"\n\d{3} \(")  # a body line that could be taken for a header
# COMMON for a block of events with no "\r" in them (_common_block): the header up to its seconds,
# which must end the line or be followed by a space; the rest of the line and the line after it
# are not taken (copied) but for the events that need them (an execute event's slot, an evict
# event's checkpoint flag), from where the match ends.
WHOLE = re.compile(
    rb"\n(\d{3}) \((\d{1,10})\.(\d{1,10})\.\d{1,10}\) (\d{4}-\d\d-\d\d \d\d:\d\d):([0-5]\d)"
    rb"(?=[ \n]|\Z)"
)
# Where an event ends: the newline before a "..." line (its own newline is not taken, so that a
# "..." line right after another still ends an empty event).
SPLIT = re.compile(rb"\n\.\.\.(?=\r?\n)")
SPLIT_TAKES = 4  # the bytes a match of SPLIT stands for
MINUTES = 1 << 12  # minutes remembered, at most (the logs merged move through time together)
SLOTS = 1 << 13  # slot names remembered, at most, shared by the logs being merged
# The slot each execute event's header text and first body line (None: no body) name, for the
# logs being merged (a pool's slots are the same in every owner's log).
_SLOTS: dict[tuple[bytes | None, bytes | None], str] = {}
# The same for the block path, by the bytes from the end of the header's seconds to the end of the
# line after the header (both lines as they are: the key tells the one from the other).
_BLOCK_SLOTS: dict[bytes, str] = {}
# The local time of each minute met, per time zone, shared by the logs being merged.
_MINUTES: dict[tuple[object, ...], dict[bytes, float | None]] = {}
SKIPPED = KNOWN_EVENT_TYPES - set(EVENT_KINDS) - {AD_INFORMATION}
# The same, by the three digits COMMON reads (no int() or enum hashing per event).
_FAST_KINDS = {b"%03d" % n: (kind, RANK[kind]) for n, kind in EVENT_KINDS.items()}
_FAST_SKIPPED = frozenset(b"%03d" % n for n in SKIPPED if n < 1000)
# The block path's table of the seconds.
_SECONDS = {b"%02d" % n: n for n in range(60)}
_EXECUTE, _EVICT = (next(b"%03d" % n for n, k in EVENT_KINDS.items() if k is kind)
                    for kind in (EventKind.EXECUTE, EventKind.EVICT))


def _events(handle: BinaryIO, name: str, damage: Damage, count: _Count,
            block: int = BLOCK, limit: int = MAX_RECORD_BYTES, index: int = 0
            ) -> Iterator[list[Row]]:
    """The file's events as rows, a list per block read: the block is cut into events at C speed
    (SPLIT) and each event in the common form is read with one match (COMMON); any other goes
    through :func:`_record`, as every event did before, so that damage is found and counted the
    same way. Ad information goes onto the event just before it: the last row of a block is held
    back until the next block has been read. Holds a block, its events and at most ``limit`` of one
    event."""
    year = time.localtime().tm_year
    minutes = _MINUTES.setdefault((time.timezone, time.altzone, *time.tzname), {})
    slots = _SLOTS
    pending = b"\n"  # the newline before the next event, and what of it is read
    offset = -1  # of pending[0] in the file
    skipping: int | None = None  # the start of an event too long to keep, being read past
    eof = False
    out: list[Row] = []  # this block's rows, and the one held back from the block before
    while not eof:
        if len(out) > 1:
            held = out.pop()
            yield out
            out = [held]
        data = handle.read(block)
        eof = not data
        if skipping is not None:
            pending += data
            sync = SPLIT.search(pending)
            if sync is None and eof and pending.endswith(b"\n..."):
                found_end = len(pending)
            elif sync is None:
                if eof:
                    damage.add(name, f"bytes {skipping} to {offset + len(pending)}", TOO_LONG)
                    break
                offset += max(0, len(pending) - TAIL)
                pending = pending[-TAIL:]
                continue
            else:
                found_end = sync.start() + SPLIT_TAKES
            damage.add(name, f"bytes {skipping} to {offset + found_end + _newline(pending, found_end)}",
                       TOO_LONG)
            skipping = None
            offset += found_end
            pending = pending[found_end:]
            data = b""
        region = pending + data if data else pending
        parts = SPLIT.split(region)
        last = parts.pop()
        span = len(region) - len(last)  # the parts' bytes, with the "\n..." after each
        if eof and last.endswith(b"\n...") and len(last) > 3:  # "..." ends the file
            parts.append(last[:-SPLIT_TAKES])
            last = b"\n"
            tail_sync = True
        else:
            tail_sync = False
        # Where each part begins in the file, worked out (at C speed) when the careful path
        # needs it.
        starts: list[int] | None = None
        position, readable = count.position, count.readable
        match, header_line, kinds, skipped, execute, evict = (
            COMMON.match, HEADER_LINE.search, _FAST_KINDS, _FAST_SKIPPED, EventKind.EXECUTE,
            EventKind.EVICT)
        add = out.append
        # The last row's time and rank: a row of the same second keeps at least that rank, so that
        # a log's rows stay in their own order (see osep.replay.events.Row).
        last_when, last_rank = (out[-1][0], out[-1][1]) if out else (-1.0, 0)
        rows = _common_block(region, span, parts, index, position, last_when, last_rank, minutes,
                             limit)
        if rows is not None:  # every event in the common form: read a column at a time
            out += rows
            position += len(parts)
            readable += len(parts)
        for at_part, part in enumerate(parts if rows is None else ()):
            common = match(part) if len(part) <= limit else None
            if common is not None:
                head_end = common.end()
                if head_end < len(part) and (part[head_end] != 10 or b"\r" in part
                                             or header_line(part, head_end) is not None):
                    common = None  # not the common form: the careful path reads it
            if common is not None:
                number, cluster, proc, minute, second, rest = common.groups()
                found = kinds.get(number)
                if found is None:
                    if number in skipped:  # a known type replay has no use for
                        position += 1
                        readable += 1
                        continue
                else:
                    kind, rank = found
                    base = minutes.get(minute, -1.0)  # -1: not seen yet
                    if base == -1.0:
                        base = minutes[minute] = _minute(minute)
                    job = None
                    c, p = int(cluster), int(proc)
                    if c <= MAX_JOB_NUMBER and p <= MAX_JOB_NUMBER:
                        job = c << JOB_BITS | p  # key_of(JobId("", c, p))
                    slot: str | None = None
                    checkpointed = False
                    if kind is execute:
                        line = None  # the first line after the header: the careful path reads no more
                        if head_end < len(part):
                            cut = part.find(b"\n", head_end + 1)
                            line = part[head_end + 1:cut if cut >= 0 else len(part)]
                        slot = slots.get((rest, line))
                        if slot is None:
                            slot = _slot(rest or b"", line + b"\n" if line is not None else b"")
                            if slot is not None and len(slots) < SLOTS:
                                slots[(rest, line)] = slot
                    elif kind is evict:
                        flag = CHECKPOINT.match(part, head_end + 1) if head_end < len(part) else None
                        checkpointed = flag is not None and int(flag[1]) != 0
                    if base is not None and job is not None and (slot is not None or
                                                                  kind is not execute):
                        position += 1
                        readable += 1
                        when = base + int(second)
                        if rank < last_rank and when == last_when:
                            rank = last_rank
                        last_when, last_rank = when, rank
                        add((when, rank, index, position, kind, job, slot, checkpointed, None,
                             None))
                        continue
            # The careful path: where the event begins and ends (after the newline of its "..."
            # line), and what it gives.
            count.position, count.readable = position, readable
            if starts is None:
                starts = list(accumulate(map(len, parts), initial=0))
            at = offset + starts[at_part] + SPLIT_TAKES * at_part
            strip = 2 if part[:1] == b"\r" else 1
            size = len(part)
            following = parts[at_part + 1] if at_part + 1 < len(parts) else last
            end = at + size + SPLIT_TAKES
            if not (tail_sync and at_part == len(parts) - 1):
                end += 2 if following[:1] == b"\r" else 1
            start = at + strip
            if size - strip + 1 > limit:
                damage.add(name, f"bytes {start} to {end}", TOO_LONG)
            else:
                _take(out, _record(part[strip:] + b"\n", start, end, True, name, year, damage,
                                   count), index)
                if out:
                    last_when, last_rank = out[-1][0], out[-1][1]
            position, readable = count.position, count.readable
        count.position, count.readable = position, readable
        at = offset + sum(map(len, parts)) + SPLIT_TAKES * len(parts)
        offset = at
        pending = last
        if eof:
            text = last[2 if last[:1] == b"\r" else 1:]
            if text:
                start = offset + len(last) - len(text)
                if len(text) > limit:
                    damage.add(name, f"bytes {start} to {offset + len(last)}", TOO_LONG)
                else:
                    _take(out, _record(text, start, offset + len(last), False, name, year,
                                       damage, count), index)
        elif len(last) > limit + TAIL:
            skipping = offset + (2 if last[:1] == b"\r" else 1)
            offset += len(last) - TAIL
            pending = last[-TAIL:]
        if len(minutes) > MINUTES:
            minutes.clear()
        if len(_MINUTES) > 16:
            _MINUTES.clear()
    if out:
        yield out


def _common_block(region: bytes, span: int, parts: list[bytes], index: int, position: int,
                  last_when: float, last_rank: int, minutes: dict[bytes, float | None], limit: int
                  ) -> list[Row] | None:
    """The rows of a block's events (``parts``, the first ``span`` bytes of ``region``) when every
    one is in the common form and gives a row or is of a type replay skips: what the loop in
    :func:`_events` makes of them one at a time (``position`` is the last event's number before
    them; ``last_when`` and ``last_rank`` the last row's), made a column at a time by calls that
    run in C. None when any event is not, for that loop to read them."""
    if not parts or max(map(len, parts)) > limit or region.find(b"\r", 0, span) >= 0:
        return None
    found = list(map(WHOLE.match, parts))
    # Each event's first line is a header: any other line that could be taken for one is in a body.
    if None in found or len(HEADER_LINE.findall(region, 0, span)) != len(parts):
        return None
    matches = cast(list[re.Match[bytes]], found)
    numbers, clusters, procs, minute_texts, seconds = zip(*map(re.Match.groups, matches),
                                                          strict=True)
    kinds = list(map(_FAST_KINDS.get, numbers))
    skips = None in kinds
    if skips and not all(n in _FAST_SKIPPED for n, k in zip(numbers, kinds, strict=True)
                         if k is None):
        return None
    bases = list(map(minutes.get, minute_texts, repeat(-1.0)))  # -1: not seen yet
    if -1.0 in bases:
        for at, base in enumerate(bases):
            if base == -1.0:
                text = minute_texts[at]
                got = minutes.get(text, -1.0)
                bases[at] = minutes[text] = _minute(text) if got == -1.0 else got
    cluster_numbers = list(map(int, clusters))
    proc_numbers = list(map(int, procs))
    if max(cluster_numbers) > MAX_JOB_NUMBER or max(proc_numbers) > MAX_JOB_NUMBER:
        return None
    try:
        times = list(map(add, bases, map(_SECONDS.__getitem__, seconds)))
    except TypeError:  # a minute out of bounds (None)
        return None
    slots = _BLOCK_SLOTS
    found_slots: list[str | None] = [None] * len(parts)
    for at in _indices(numbers, _EXECUTE):
        part, head_end = parts[at], matches[at].end()
        cut = part.find(b"\n", head_end)  # the header line's end, then the next line's
        tail = part[head_end:] if cut < 0 else part[head_end:_line_end(part, cut + 1)]
        slot = slots.get(tail)
        if slot is None:
            rest, _, line = tail.partition(b"\n")
            slot = _slot(rest[1:], line + b"\n" if cut >= 0 else b"")
            if slot is None:
                return None
            if len(slots) < SLOTS:
                slots[tail] = slot
        found_slots[at] = slot
    checkpointed = [False] * len(parts)
    for at in _indices(numbers, _EVICT):
        part = parts[at]
        cut = part.find(b"\n", matches[at].end())
        flag = CHECKPOINT.match(part, cut + 1) if cut >= 0 else None
        checkpointed[at] = flag is not None and int(flag[1]) != 0
    jobs = list(map(or_, map(lshift, cluster_numbers, repeat(JOB_BITS)), proc_numbers))  # key_of
    positions: Iterable[int] = range(position + 1, position + len(parts) + 1)
    slot_column: Iterable[str | None] = found_slots
    flags: Iterable[bool] = checkpointed
    if skips:  # the rows of the events replay reads
        positions, times, jobs, slot_column, flags = (
            list(compress(column, kinds))
            for column in (positions, times, jobs, slot_column, flags))
    read = cast(list[tuple[EventKind, int]], [k for k in kinds if k is not None] if skips else kinds)
    kind_column = list(map(itemgetter(0), read))
    ranks = list(map(itemgetter(1), read))
    # A row of the same second as the row before it keeps at least that row's rank: from where
    # the rank drops within a second, it is carried on while the second lasts and it is lower.
    drops = list(compress(range(1, len(times)), map(and_, map(eq, times[1:], times),
                                                     map(lt, ranks[1:], ranks))))
    if times and times[0] == last_when and ranks[0] < last_rank:
        ranks[0] = last_rank
        drops.insert(0, 1)
    for start in drops:
        at = start
        while at < len(times) and ranks[at] < ranks[at - 1] and times[at] == times[at - 1]:
            ranks[at] = ranks[at - 1]
            at += 1
    return list(zip(times, ranks, repeat(index), positions, kind_column, jobs, slot_column, flags,
                    repeat(None), repeat(None), strict=False))


def _indices(items: Sequence[object], value: object) -> Iterator[int]:
    """Where ``value`` is in ``items``, in order (found in C)."""
    at = -1
    find = items.index
    while True:
        try:
            at = find(value, at + 1)
        except ValueError:
            return
        yield at


def _take(out: list[Row], found: Iterator[LogEvent | tuple[JobId | None, str, str]],
          index: int) -> None:
    """What the careful path found, onto ``out``: events as rows, ad information onto the row
    before it when that is the same job's."""
    for item in found:
        if isinstance(item, LogEvent):
            rank = RANK[item.kind]
            if out and out[-1][0] == item.time:
                rank = max(rank, out[-1][1])
            out.append((item.time, rank, index, item.position, item.kind,
                        key_of(item.job), item.slot, item.checkpointed, item.owner, item.account))
            continue
        job, owner, account = item
        if out and job is not None and out[-1][5] == key_of(job):
            out[-1] = (*out[-1][:8], owner, account)


def _line_end(text: bytes, start: int) -> int:
    """Where the line that begins at ``start`` ends (its newline, or the end of the text)."""
    end = text.find(b"\n", start)
    return end if end >= 0 else len(text)


def _newline(data: bytes, at: int) -> int:
    """The length of the line end at ``at`` (none at the end of the file)."""
    return 2 if data[at:at + 1] == b"\r" else (1 if at < len(data) else 0)


def _minute(text: bytes) -> float | None:
    """Seconds since the epoch at the start of a minute given as local "YYYY-MM-DD HH:MM", or None
    when it is not a time within the bounds (its seconds are added to it: no clock is changed
    within a minute)."""
    try:
        when = datetime.datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]),
                                 int(text[11:13]), int(text[14:16])).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return when if log_time(when) is not None and log_time(when + 59) is not None else None


def _record(text: bytes, start: int, end: int, whole: bool, name: str, year: int, damage: Damage,
            count: _Count) -> Iterator[LogEvent | tuple[JobId | None, str, str]]:
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
        found = _event(text[head:tail], year, name, position)
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


def _event(text: bytes, year: int, name: str, position: int
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
        slot = _slot(header[14] or b"", body)
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


def _slot(text: bytes, body: bytes) -> str | None:
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
    """The job, the owner the event names (as :func:`osep.htcondor.ads.owner_of` finds it, taking
    an AcctGroup alone as the group, since logs often record no AccountingGroup), the whole
    accounting name an owner tree places the job by (its AccountingGroup where logged, else that
    owner), and whether what it names is not a name."""
    from osep.htcondor.ads import owner_of  # with the ClassAd bindings: only for logs that need it

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

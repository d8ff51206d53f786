"""HTCondor's job event logs, read into :class:`osep.replay.events.LogEvent` or into rows a block at a
time.

The log is parsed here, not by the bindings' ``JobEventLog``: their reader sleeps a second on every
event it cannot parse (so that a writer can finish it), holds a whole line in memory however long it
is, and raises ``UnicodeDecodeError`` on a byte that is not UTF-8, which a damaged log of a million
events turns into hours, gigabytes or a traceback. An event is the text up to a ``...`` line; one
longer than :data:`osep.replay.damage.MAX_RECORD_BYTES` is passed over without being held. Events in
the form the schedd writes most of the time are read here with one match each (a block of them a
column at a time); any other is read by :mod:`osep.htcondor.event_text`, which says what each event
gives.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, compress, repeat
from operator import add, and_, eq, itemgetter, lshift, lt, or_
from pathlib import Path
from typing import BinaryIO, cast

from osep.core.model import JobId
from osep.errors import LogError
from osep.htcondor.event_text import (
    AD_INFORMATION,
    CHECKPOINT,
    EVENT_KINDS,
    KNOWN_EVENT_TYPES,
    TOO_LONG,
    Count,
    minute_time,
    read_record,
    slot_of,
)
from osep.replay.damage import MAX_JOB_NUMBER, MAX_RECORD_BYTES, Damage, brief, regular_file
from osep.replay.events import JOB_BITS, RANK, EventKind, JobKey, LogEvent, Row, job_of, key_of

TAIL = 6  # bytes at the end of what is read that may hold the start of a "\n...\r\n" line
BLOCK = 64 << 10  # bytes read at a time (each log being merged holds about this much)


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
    count = Count()
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




# An event as the schedd writes it most of the time, after the newline that ends the line before it:
# an ISO date, whole seconds, "\n" line ends and no line of its body that could be taken for a
# header. Whatever else is read by the careful path (event_text.read_record), which this one must agree with.
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


def _events(handle: BinaryIO, name: str, damage: Damage, count: Count,
            block: int = BLOCK, limit: int = MAX_RECORD_BYTES, index: int = 0
            ) -> Iterator[list[Row]]:
    """The file's events as rows, a list per block read: the block is cut into events at C speed
    (SPLIT) and each event in the common form is read with one match (COMMON); any other goes
    through :func:`osep.htcondor.event_text.read_record`, where damage is found and counted. Ad
    information goes onto the event just before it: the last row of a block is held
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
                        base = minutes[minute] = minute_time(minute)
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
                            slot = slot_of(rest or b"", line + b"\n" if line is not None else b"")
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
                _take(out, read_record(part[strip:] + b"\n", start, end, True, name, year, damage,
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
                    _take(out, read_record(text, start, offset + len(last), False, name, year,
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
                bases[at] = minutes[text] = minute_time(text) if got == -1.0 else got
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
            slot = slot_of(rest[1:], line + b"\n" if cut >= 0 else b"")
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

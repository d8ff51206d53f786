"""The event-log reader as it was before it read blocks at C speed: every event framed one at a
time (``records``) and read the careful way. Kept as the oracle the fast reader
(:func:`osep.htcondor.eventlog.read_event_log`) is checked against; not part of osep."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from osep.errors import LogError
from osep.htcondor.event_text import (
    BAD_OWNER,
    CUT_OFF,
    HEADER_START,
    NO_SYNC,
    NOT_EVENTS,
    TOO_LONG,
    UNKNOWN_TYPE,
    read_event,
)
from osep.htcondor.eventlog import TAIL
from osep.replay.damage import MAX_RECORD_BYTES, Damage, brief, regular_file
from osep.replay.events import LogEvent

BLOCK = 64 << 10
SYNC = b"\n..."  # the start of the line that ends an event ("...", then "\n" or "\r\n")


def careful_read(path: Path, warn: Callable[[str], None], block: int = BLOCK,
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
    regular_file(path, "event log")
    damage = Damage(warn)
    year = time.localtime().tm_year
    position = readable = 0  # events met, readable or not; readable ones
    held: LogEvent | None = None  # the last event, until we know no ad information follows it
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise LogError(f"{name}: cannot read the event log: {exc.strerror or exc}") from None
    with handle:
        for start, end, text, whole in records(handle, block, limit):
            if text is None:
                damage.add(name, f"bytes {start} to {end}", TOO_LONG)
                continue
            heads = [m.start() for m in HEADER_START.finditer(text)]
            if not heads:
                stripped = text.lstrip()
                if stripped:  # the start of a header cut off, or no event at all
                    cut = not whole and stripped[:1].isdigit() and len(stripped) < 40
                    damage.add(name, f"bytes {start} to {end}", CUT_OFF if cut else NOT_EVENTS)
                continue
            if heads[0] > 0 and text[: heads[0]].strip():
                damage.add(name, f"bytes {start} to {start + heads[0]}", NOT_EVENTS)
            # Several headers: the "..." lines between those events are lost; each is read.
            for head, tail in zip(heads, [*heads[1:], None], strict=True):
                if tail is None and not whole:
                    damage.add(name, f"bytes {start + head} to {end}", CUT_OFF)
                    break
                position += 1
                if tail is not None:
                    damage.add(name, f"event {position}", NO_SYNC)
                found = read_event(text[head:tail], year, name, position)
                if isinstance(found, str):
                    where = (f"event {position} (type {int(text[head:head + 3])})"
                             if found == UNKNOWN_TYPE else f"event {position}, byte {start + head}")
                    damage.add(name, where, found)
                    continue
                readable += 1
                if found is None:
                    continue  # a known type replay has no use for
                if not isinstance(found, LogEvent):  # ad information: (job, owner or None, account, bad)
                    job, owner, account, bad = found
                    if bad:
                        damage.add(name, f"event {position}", BAD_OWNER)
                    elif owner is not None and held is not None and held.job == job:
                        held = held._replace(owner=owner, account=account)
                    continue
                if held is not None:
                    yield held
                held = found
    if held is not None:
        yield held
    if readable == 0 and damage.total:
        where, problem = damage.first(name) or ("byte 0", "")
        raise LogError(f"{name}: {where}: not an HTCondor job event log ({brief(problem)})")
    damage.report()


def records(handle: BinaryIO, block: int = BLOCK, limit: int = MAX_RECORD_BYTES
             ) -> Iterator[tuple[int, int, bytes | None, bool]]:
    """(start, end, text, whole) of each event in the file, in order: its bytes up to the ``...``
    line that ends it (not included); ``text`` is None for one longer than ``limit``, which is
    read past rather than kept. The text after the last ``...`` line, if any, comes last with
    ``whole`` false. Holds one event and a ``block`` at most; every byte is looked at once."""
    buffer = bytearray(b"\n")  # a newline before the file, so that every event begins after one
    base = -1  # file offset of buffer[0]
    pos = 1  # where the current event begins, in buffer
    seek = 0  # where to look for the line that ends it: what is before was looked at
    too_long_from: int | None = None  # file offset of an event being read past
    eof = False
    while True:
        at = buffer.find(SYNC, seek)
        while at != -1:
            after = at + len(SYNC)
            if after + 2 > len(buffer) and not eof:
                break  # the end of the line is not read yet
            if buffer[after:after + 1] == b"\n":
                end = after + 1
            elif buffer[after:after + 2] == b"\r\n":
                end = after + 2
            elif after == len(buffer):  # "..." ends the file
                end = after
            else:  # "...." or "...text": not the end of the event
                at = buffer.find(SYNC, at + 1)
                continue
            if too_long_from is not None:
                yield too_long_from, base + end, None, True
                too_long_from = None
            elif at + 1 - pos > limit:
                yield base + pos, base + end, None, True
            else:
                yield base + pos, base + end, bytes(buffer[pos:at + 1]), True
            pos = end
            at = buffer.find(SYNC, pos - 1)
        if eof:
            break
        # Whatever ends the event begins in the last TAIL bytes at the earliest: before them, it
        # is more than limit long already, and nothing before them needs looking at again.
        seek = max(pos - 1, len(buffer) - TAIL)
        if too_long_from is None and len(buffer) - pos > limit + TAIL:
            too_long_from = base + pos
        # Drop what is done with; of an event being read past, all but those last bytes.
        keep = pos - 1 if too_long_from is None else seek
        del buffer[:keep]
        base, pos, seek = base + keep, max(pos - keep, 1), seek - keep
        data = handle.read(block)
        if data:
            buffer += data
        else:
            eof = True
    if too_long_from is not None or len(buffer) - pos > limit:
        yield too_long_from if too_long_from is not None else base + pos, base + len(buffer), None, True
    elif len(buffer) > pos:
        yield base + pos, base + len(buffer), bytes(buffer[pos:]), False

"""The event-log reader against the careful one it replaced (tests/replay/careful_reader.py): on
logs made of well-formed events, damaged ones and garbage, in any block size, the same events and
the same damage lines."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from osep.errors import LogError
from osep.htcondor.event_text import KNOWN_EVENT_TYPES, minute_time
from osep.htcondor.eventlog import read_event_log
from tests.replay.careful_reader import careful_read

PIECES = [
    b"000 (001.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n",
    b"001 (001.000.000) 2026-11-22 07:00:05 Job executing on host: <127.0.0.1:9618>\n"
    b"\tSlotName: slot1@wn1\n...\n",
    b"001 (001.001.000) 2026-11-22 07:00:05 Job executing on host: <10.0.0.2:9618>\n...\n",
    b"001 (002.000.000) 2026-11-22 07:00:06 Job executing on host: <x>\n\tSlotName: \"\xff\"\n...\n",
    b"004 (001.000.000) 2026-11-22 07:01:00 Job was evicted.\n\t(1) Job was checkpointed.\n...\n",
    b"004 (001.000.000) 2026-11-22 07:01:00 Job was evicted.\n\t(0) CPU times\n...\n",
    b"005 (001.000.000) 2026-11-22 07:02:00 Job terminated.\n\t(1) Normal termination\n...\n",
    b"006 (001.000.000) 2026-11-22 07:02:00 Image size of job updated: 4\n...\n",
    b"028 (001.000.000) 2026-11-22 07:02:00 Job ad information event triggered.\n"
    b"Owner = \"bob\"\nAcctGroup = \"physics\"\n...\n",
    b"012 (001.000.000) 11/22 07:03:00 Job was held.\n...\n",
    b"013 (001.000.000) 2026-11-22T07:04:00.250Z Job was released.\n...\n",
    b"009 (3000000000.000.000) 2026-11-22 07:05:00 Job was aborted.\n...\n",
    b"009 (001.000.000) 2026-13-40 07:05:00 Job was aborted.\n...\n",
    b"099 (001.000.000) 2026-11-22 07:05:00 Who knows.\n...\n",
    b"000 (001.002.000) 2026-11-22 07:06:00 Job submitted\r\n...\r\n",
    b"000 (001.003.000) 2026-11-22 07:06:00 no sync\n",
    b"005 (001.003.000) 2026-11-22 07:06:61 bad second\n...\n",
    b"garbage line\n", b"...\n", b"....\n", b"\n", b"\r\n", b"...", b"000 (00", b"x" * 50,
]


def read_all(reader: Iterator, warnings: list[str]) -> tuple[list, list[str] | str]:
    try:
        return list(reader), warnings
    except LogError as exc:  # the same error from both, or none
        return [], f"{type(exc).__name__}: {exc}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.integers(1, 300), st.integers(8, 400))
def test_the_same_events_and_damage_as_the_careful_reader(tmp_path, pieces, block, limit):
    path = tmp_path / "log"
    path.write_bytes(b"".join(pieces))
    mine: list[str] = []
    theirs: list[str] = []
    got = read_all(read_event_log(path, mine.append, block=block, limit=limit), mine)
    want = read_all(careful_read(path, theirs.append, block=64, limit=limit), theirs)
    assert got == want


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"])
def test_a_minute_and_its_seconds_are_the_careful_local_time(zone):
    """The fast path dates an event by its minute plus its seconds: the same as the whole time
    through datetime, around the clock changes too."""
    import datetime

    old = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        for day in ("2026-03-08", "2026-03-29", "2026-04-05", "2026-10-04", "2026-10-25",
                    "2026-11-01"):
            for hour in range(4):
                for minute in (0, 1, 29, 30, 59):
                    text = f"{day} {hour:02d}:{minute:02d}".encode()
                    base = minute_time(text)
                    for second in (0, 1, 30, 59):
                        whole = datetime.datetime(int(day[:4]), int(day[5:7]), int(day[8:]), hour,
                                                  minute, second).timestamp()
                        assert base is not None and base + second == whole, (text, second)
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_a_log_of_well_formed_events_reads_the_same_in_any_block(tmp_path: Path):
    path = tmp_path / "log"
    path.write_bytes(b"".join(PIECES[:9]) * 50)
    whole = list(read_event_log(path, print))
    assert len(whole) == 50 * 6
    for block in (7, 100, 4096):
        assert list(read_event_log(path, print, block=block)) == whole


def test_the_known_event_types_are_the_bindings():
    """The reader keeps HTCondor's event type numbers itself (importing the bindings takes longer
    than reading a small log); they must be the bindings' own."""
    import htcondor2

    assert {int(t) for t in htcondor2.JobEventType} == KNOWN_EVENT_TYPES


# Well-formed events only, of few seconds and jobs, so that whole blocks are read a column at a
# time: rows of one second whose rank drops (a run ending after a submit), skipped types, slots by
# name or by host, evictions with and without a checkpoint, the minute changing.
WELL_FORMED = st.tuples(
    st.sampled_from([
        b"000 (%s) 2026-11-22 07:%s Job submitted from host: <127.0.0.1:9618>\n",
        b"001 (%s) 2026-11-22 07:%s Job executing on host: <10.0.0.2:9618>\n\tSlotName: slot2@wn1\n",
        b"001 (%s) 2026-11-22 07:%s Job executing on host: <10.0.0.3:9618>\n",
        b"004 (%s) 2026-11-22 07:%s Job was evicted.\n\t(1) Job was checkpointed.\n",
        b"004 (%s) 2026-11-22 07:%s Job was evicted.\n\t(0) CPU times\n",
        b"005 (%s) 2026-11-22 07:%s Job terminated.\n\t(1) Normal termination\n\t\tUsr 0\n",
        b"006 (%s) 2026-11-22 07:%s Image size of job updated: 4\n",
        b"009 (%s) 2026-11-22 07:%s\n",
        b"012 (%s) 2026-11-22 07:%s Job was held.\n",
        b"013 (%s) 2026-11-22 07:%s Job was released.\n",
    ]),
    st.sampled_from([b"001.000.000", b"001.001.000", b"1234.005.000"]),
    st.sampled_from([b"00:00", b"00:01", b"00:59", b"01:00"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(WELL_FORMED, max_size=60), st.integers(40, 2000), st.booleans())
def test_well_formed_blocks_read_as_the_careful_reader_does(tmp_path, events, block, garbage):
    text = [template % (job, clock) + b"...\n" for template, job, clock in events]
    if garbage and text:  # one block not in the common form, the rest read as columns
        text.insert(len(text) // 2, b"not an event\n...\n")
    path = tmp_path / "log"
    path.write_bytes(b"".join(text))
    mine: list[str] = []
    theirs: list[str] = []
    got = read_all(read_event_log(path, mine.append, block=block), mine)
    want = read_all(careful_read(path, theirs.append, block=64), theirs)
    assert got == want

"""Merging logs by time: events, and rows a list at a time as ``heapq.merge`` would give them."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from osep.replay.events import EventKind, LogEvent
from osep.replay.merging import merge, merge_rows

K = EventKind


def ev(kind: EventKind, job: str, time: float, source: str) -> LogEvent:
    return LogEvent(kind, job, time, source, 0, owner="a")


def test_logs_are_merged_by_time():
    one = [ev(K.SUBMIT, "1.0", 0, source="1"), ev(K.TERMINATE, "1.0", 30, source="1")]
    two = [ev(K.SUBMIT, "2.0", 10, source="2"), ev(K.TERMINATE, "2.0", 20, source="2")]
    assert [e.time for e in merge([iter(one), iter(two)])] == [0, 10, 20, 30]


# A log as lists of rows (only the four fields that order them): times mostly rising, sometimes
# falling (a damaged log), cut into lists of any length, empty ones too.
logs = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from([0, 0, 1, 2, 5, -3]), st.integers(0, 1)), max_size=30),
        st.lists(st.integers(0, 7), min_size=1, max_size=40),
    ),
    max_size=5,
)


@settings(max_examples=500, deadline=None)
@given(logs)
def test_rows_merge_as_heapq_merges_events_by_time_and_rank(spec):
    """Rows ranked as the reader ranks them (an event of a second no lower than the one before it
    in its file), merged as tuples, come in the order heapq.merge gives (time, rank) keys."""
    streams: list[list[list[tuple[float, int, int, int]]]] = []
    events: list[list[tuple[float, int, int, int]]] = []  # with their own rank
    for index, (steps, cuts) in enumerate(spec):
        t, rows, real = 0.0, [], []
        for position, (step, own) in enumerate(steps, start=1):
            t += step
            real.append((t, own, index, position))
            rank = max(own, rows[-1][1]) if rows and rows[-1][0] == t else own
            rows.append((t, rank, index, position))
        lists, at = [], 0
        for cut in cuts * (len(rows) + 1):
            if at >= len(rows):
                break
            lists.append(rows[at:at + cut])
            at += cut
        streams.append([*lists, rows[at:]])
        events.append(real)
    want = [(e[2], e[3]) for e in heapq.merge(*map(iter, events), key=lambda e: (e[0], e[1]))]
    got = [(r[2], r[3]) for r in merge_rows([iter(s) for s in streams])]  # type: ignore[arg-type]
    assert got == want

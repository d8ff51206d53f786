"""Rebuilding history from events: the pure part of replay, on hand-made event streams."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.replay.events import EventKind, LogEvent
from osep.replay.history import UNKNOWN_OWNER, _rows, replay, replay_rows
from osep.replay.merging import merge

K = EventKind


def ev(kind: EventKind, job: str, time: float, owner: str | None = "a", slot: str | None = None,
       source: str = "log", checkpointed: bool = False, position: int = 0) -> LogEvent:
    return LogEvent(kind, job, time, source, position, slot=slot, owner=owner,
                    checkpointed=checkpointed)


def run(events, shares=None, capacity=2, **kwargs):
    warnings: list[str] = []
    result = replay(events, shares or {"a": 1, "b": 1}, capacity, warn=warnings.append, **kwargs)
    return result, warnings


def test_an_osep_vacate_is_dated_by_the_decision_log():
    events = [
        ev(K.SUBMIT, "1.0", 0),
        ev(K.EXECUTE, "1.0", 0, slot="s1"),
        ev(K.SUBMIT, "2.0", 50, owner="b"),
        ev(K.EVICT, "1.0", 64),
        ev(K.EXECUTE, "2.0", 70, owner="b", slot="s1"),
        ev(K.TERMINATE, "2.0", 80, owner="b"),
        ev(K.EXECUTE, "1.0", 80, slot="s1"),
        ev(K.TERMINATE, "1.0", 180),
    ]
    result, warnings = run(events, capacity=1, signals={"1.0": [60.0]})
    m = result.metrics
    assert warnings == []
    assert (m.lost_work, m.vacate_time, m.cost) == (60, 4, 64)
    assert m.capacity_loss == 6  # s1 idle from 64 to 70
    assert result.osep_evictions == {"a": 1}
    assert result.unfinished == 0


def test_evictions_osep_did_not_ask_for_are_not_its_own():
    events = [ev(K.SUBMIT, "1.0", 0), ev(K.EXECUTE, "1.0", 0, slot="s"), ev(K.EVICT, "1.0", 30)]
    # A vacate sent for an earlier run of the job does not explain this eviction.
    result, _ = run(events, signals={"1.0": [-100.0]})
    assert result.osep_evictions == {}
    assert result.metrics.vacates == 1


def test_a_checkpointed_eviction_saves_the_run():
    events = [
        ev(K.SUBMIT, "1.0", 0),
        ev(K.EXECUTE, "1.0", 0, slot="s"),
        ev(K.EVICT, "1.0", 30, checkpointed=True),
        ev(K.EXECUTE, "1.0", 40, slot="s"),
        ev(K.TERMINATE, "1.0", 50),
    ]
    result, _ = run(events, workload=True)
    assert result.metrics.saved_work == 30
    assert result.metrics.lost_work == 0
    assert result.workload[0].runtime == 40  # 30 kept + the 10 s of the last run


def test_owners_come_from_events_then_from_the_file_then_unknown():
    events = [
        ev(K.SUBMIT, "1.0", 0, owner="a", source="x"),
        ev(K.SUBMIT, "2.0", 0, owner=None, source="bobs.log"),
        ev(K.SUBMIT, "3.0", 0, owner=None, source="who.log"),
        ev(K.SUBMIT, "4.0", 0, owner=None, source="who.log"),
    ]
    result, warnings = run(events, owners={"bobs.log": "b"})
    jobs = {o.owner: o.jobs for o in result.metrics.owners}
    assert jobs == {"a": 1, "b": 1, UNKNOWN_OWNER: 2}
    assert len(warnings) == 1 and "who.log" in warnings[0] and "OWNER=FILE" in warnings[0]


@pytest.mark.parametrize(
    "events, warning, jobs, running",
    [
        # A job whose submission is not in the log counts from its first execute...
        ([ev(K.EXECUTE, "9.0", 5, slot="s")], "no submit event", 1, 1),
        # ...but its other events alone are ignored (the job left before the log began).
        ([ev(K.TERMINATE, "9.0", 5)], None, 0, 0),
        # A second submit of a queued job is a damaged log.
        ([ev(K.SUBMIT, "1.0", 0), ev(K.SUBMIT, "1.0", 1)], "submitted again", 1, 0),
        # Two executes in a row: the first run ends at the second.
        ([ev(K.SUBMIT, "1.0", 0), ev(K.EXECUTE, "1.0", 1, slot="s"),
          ev(K.EXECUTE, "1.0", 5, slot="t")], "runs again", 1, 1),
    ],
)
def test_damaged_histories_warn_and_go_on(events, warning, jobs, running):
    result, warnings = run(events)
    if warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warning in warnings[0]
        assert "log: event 0 (job" in warnings[0]  # the file and position
    assert sum(o.jobs for o in result.metrics.owners) == jobs
    assert result.unfinished == jobs


def test_an_event_out_of_order_is_taken_as_happening_now():
    events = [ev(K.SUBMIT, "1.0", 10, source="x"), ev(K.SUBMIT, "2.0", 5, source="x")]
    result, warnings = run(events)
    assert "earlier than an event already replayed" in warnings[0]
    assert result.metrics.owners[0].jobs == 2


def test_progress_is_reported_every_n_events():
    calls: list[tuple[int, float]] = []
    events = [ev(K.SUBMIT, f"{k}.0", float(k)) for k in range(10)]
    run(events, progress=lambda n, t: calls.append((n, t)), every=4)
    assert calls == [(4, 3.0), (8, 7.0)]


def test_a_slot_freed_and_taken_in_one_second_across_logs_is_no_loss():
    """Per-user logs each keep their own order; between them, the run that ends comes first, and a
    start already on the slot keeps the eviction from opening an idle gap."""
    alice = [ev(K.SUBMIT, "1.0", 0, source="a"), ev(K.EXECUTE, "1.0", 0, slot="s", source="a"),
             ev(K.EVICT, "1.0", 10, source="a"), ev(K.EXECUTE, "1.0", 50, slot="s", source="a")]
    bob = [ev(K.SUBMIT, "2.0", 5, owner="b", source="b"),
           ev(K.EXECUTE, "2.0", 10, owner="b", slot="s", source="b"),
           ev(K.TERMINATE, "2.0", 50, owner="b", source="b")]
    merged = list(merge([iter(bob), iter(alice)]))
    assert [(e.job, e.kind) for e in merged if e.time == 10] == [("1.0", K.EVICT), ("2.0", K.EXECUTE)]
    result, _ = run(merged, capacity=1)
    assert result.metrics.capacity_loss == 0


def test_an_eviction_reported_after_the_next_start_opens_no_gap():
    from osep.measure.meter import Meter

    m = Meter({}, 1)
    m.submit(0, "x", "a")
    m.submit(0, "y", "a")
    m.start(0, "x", "s")
    m.start(10, "y", "s")  # y's start arrived before x's eviction, in the same second
    m.end(10, "x", evicted=True)
    m.finish(20, "y")
    m.start(30, "x", "s")
    assert m.result().capacity_loss == 0


def test_odd_events_are_counted_one_line_per_file_and_kind():
    events = [ev(K.SUBMIT, f"{k}.0", 0, source="x") for k in range(100)]
    events += [ev(K.SUBMIT, f"{k}.0", 1, source="x", position=k) for k in range(100)]
    result, warnings = run(events)
    assert warnings == ["x: 100 times: submitted again while still in the queue, skipped "
                        "(event 0 (job 0.0); event 1 (job 1.0); event 2 (job 2.0); ...)"]
    assert result.warnings == 100


def test_a_job_id_that_finishes_twice_is_one_job_of_the_what_if_workload():
    events = [ev(K.SUBMIT, "1.0", 0), ev(K.EXECUTE, "1.0", 0, slot="s"), ev(K.TERMINATE, "1.0", 10),
              ev(K.SUBMIT, "1.0", 20), ev(K.EXECUTE, "1.0", 20, slot="s"),
              ev(K.TERMINATE, "1.0", 50, position=6)]
    result, warnings = run(events, workload=True)
    assert [(r.submit, r.runtime) for r in result.workload] == [(0, 10)]
    assert warnings == ["log: event 6 (job 1.0): the same job id finished again; left out of the "
                        "what-if runs"]


# Histories of four jobs with evictions, and vacates sent for them (and for a job never seen).
histories = st.lists(
    st.tuples(st.sampled_from([K.SUBMIT, K.EXECUTE, K.EVICT, K.EXECUTE, K.EVICT, K.TERMINATE,
                               K.ABORT]),
              st.sampled_from(["1.0", "2.0", "3.0", "4.0"]), st.sampled_from([0, 0, 1, 2, 5])),
    max_size=40,
)
vacates = st.lists(st.tuples(st.integers(0, 120), st.sampled_from(["1.0", "2.0", "3.0", "9.0"])),
                   max_size=12)


@settings(max_examples=300, deadline=None)
@given(histories, vacates)
def test_vacates_streamed_in_time_order_date_evictions_as_the_whole_list_does(history, sent):
    events, t = [], 0.0
    for kind, job, step in history:
        t += step
        events.append(ev(kind, job, t, slot="s1" if kind is K.EXECUTE else None))
    signals: dict[str, list[float]] = {}
    for when, job in sorted(sent):
        signals.setdefault(job, []).append(float(when))
    whole, _ = run(events, signals=signals)
    sources: list[str] = []
    streamed = replay_rows(_rows(events, sources), sources, {"a": 1, "b": 1}, 2, warn=lambda _: None,
                           vacates=[(float(when), job) for when, job in sorted(sent)])
    assert streamed == whole

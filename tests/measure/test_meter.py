"""The streaming meter: each metric worked out by hand on a few events, and its invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.measure.meter import Meter
from osep.measure.metrics import MeterError
from osep.measure.series import MAX_BINS


def test_violation_is_the_shortfall_against_the_feasible_share():
    # 2 slots, a owns 1, b owns 1. a runs 2 jobs from 0; b submits at 10 and gets a slot at 15
    # (a's second job ends then). b is owed 1 slot from 10 to 15: PV 5, all b's.
    m = Meter({"a": 1, "b": 1}, 2)
    m.submit(0, "a1", "a")
    m.submit(0, "a2", "a")
    m.start(0, "a1", "s1")
    m.start(0, "a2", "s2")
    m.submit(10, "b1", "b")
    m.finish(15, "a2")
    m.start(15, "b1", "s2")
    m.finish(20, "b1")
    m.finish(30, "a1")
    r = m.result()
    assert r.violation == 5
    assert {o.owner: o.violation for o in r.owners} == {"a": 0, "b": 5}
    # b: ran 5 s of the 10 s it waited for; a2: 15 of 15; a1: 30 of 30.
    sat = {o.owner: o.satisfaction for o in r.owners}
    assert sat["b"] == pytest.approx(50.0)
    assert sat["a"] == pytest.approx(100.0)
    assert r.makespan == 30


@pytest.mark.parametrize(
    "signal, saved, lost, vacate_time, kept",
    [
        (None, 0.0, 40.0, 0.0, 0.0),  # no signal known: the eviction is the signal
        (35.0, 0.0, 25.0, 5.0, 0.0),  # 25 s of work lost, 5 s between signal and release
        (35.0, math.inf, 0.0, 5.0, 25.0),  # a checkpoint kept all the work up to the signal
        (35.0, 10.0, 15.0, 5.0, 10.0),  # it kept 10 s of it
    ],
)
def test_eviction_splits_work_into_redone_and_saved(signal, saved, lost, vacate_time, kept):
    m = Meter({"a": 1}, 1)
    m.submit(0, "j", "a")
    m.start(10, "j", "s")
    if signal is not None:
        m.signal(signal, "j")
    m.end(50 if signal is None else 40, "j", evicted=True, saved=saved)
    r = m.result()
    assert (r.lost_work, r.vacate_time, r.saved_work) == (lost, vacate_time, kept)
    assert r.cost == lost + vacate_time
    assert r.vacates == 1


def test_finished_job_run_time_adds_what_checkpoints_saved():
    m = Meter({"a": 1}, 1)
    m.submit(0, "j", "a")
    m.start(0, "j", "s")
    m.end(30, "j", evicted=True, saved=math.inf)  # 30 s kept
    m.start(40, "j", "s")
    assert m.finish(60, "j") == 50  # 30 saved + 20 of its last run
    assert m.result().owners[0].satisfaction == pytest.approx(100 * 50 / 60)


def test_capacity_loss_is_the_idle_gap_after_an_eviction_only():
    m = Meter({}, 2)
    for job in ("x", "y", "z"):
        m.submit(0, job, "a")
    m.start(0, "x", "s1")
    m.start(0, "y", "s2")
    m.end(10, "x", evicted=True)  # s1 then idle until 14: 4
    m.finish(12, "y")  # s2 freed by a completion: not the policy's loss
    m.start(14, "z", "s1")
    m.start(20, "x", "s2")
    r = m.result()
    assert r.capacity_loss == 4


def test_capacity_loss_is_counted_for_the_owner_whose_job_was_vacated():
    m = Meter({"a": 1, "b": 1}, 2)
    m.submit(0, "a1", "a")
    m.submit(0, "b1", "b")
    m.submit(0, "b2", "b")
    m.start(0, "a1", "s1")
    m.start(0, "b1", "s2")
    m.end(10, "a1", evicted=True)  # s1 idle 10 to 13, after a's job: a's 3
    m.start(13, "b2", "s1")
    m.end(20, "b1", evicted=True)  # s2 idle 20 to 27, after b's job: b's 7 (a's job starts there)
    m.start(27, "a1", "s2")
    r = m.result()
    by_owner = {o.owner: o.capacity_loss for o in r.owners}
    assert by_owner == {"a": 3, "b": 7}
    assert r.capacity_loss == 10
    assert {o.owner: o.lost_work for o in r.owners} == {"a": 10, "b": 20}  # no signals: all redone
    assert sum(o.lost_work + o.vacate_time for o in r.owners) == r.cost


def test_held_and_removed_jobs_are_not_demand():
    m = Meter({"a": 1, "b": 1}, 2)
    m.submit(0, "a1", "a")
    m.submit(0, "b1", "b")
    m.hold(0, "b1", True)  # b owes nothing while held...
    m.hold(10, "b1", False)  # ...and is owed its slot from 10
    m.withdraw(15, "b1")
    m.finish(20, "a1")
    r = {o.owner: o for o in m.result().owners}
    assert r["b"].violation == 5
    assert r["b"].finished == 0 and r["b"].satisfaction is None
    assert r["a"].violation == 20  # one job: owed 1 slot for 20 s and never ran
    assert m.result().violation == 25


def test_time_running_backwards_is_an_error():
    m = Meter({}, 1)
    m.submit(10, "j", "a")
    with pytest.raises(MeterError, match="time ran backwards"):
        m.start(5, "j", "s")


def test_a_job_cannot_start_twice_or_unsubmitted():
    m = Meter({}, 1)
    with pytest.raises(MeterError, match="never submitted"):
        m.start(0, "j", "s")
    m.submit(0, "j", "a")
    m.start(0, "j", "s")
    with pytest.raises(MeterError, match="while running"):
        m.start(1, "j", "t")


def test_in_flight_counts_jobs_not_yet_gone():
    m = Meter({}, 1)
    m.submit(0, "j", "a")
    m.submit(0, "k", "a")
    m.finish(5, "j")
    assert m.in_flight == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 50_000), st.floats(1, 20_000)), min_size=1, max_size=40))
def test_series_keeps_the_area_and_stays_bounded(jobs):
    """However long the run, the series has at most MAX_BINS bins and its area is the area of the
    real curve (what the bins lose is resolution, never slot-time)."""
    m = Meter({"a": 2}, 64, curves=True)
    events = []
    for k, (start, length) in enumerate(jobs):
        events.append((start, 0, k))
        events.append((start + length, 1, k))
    events.sort()
    m.advance(0.0)
    for t, kind, k in events:
        if kind == 0:
            m.submit(t, str(k), "a")
            m.start(t, str(k), f"s{k}")
        else:
            m.finish(t, str(k))
    series = m.series()
    assert series is not None
    assert len(series.evictions) <= MAX_BINS
    area = sum(v * series.width for v in series.real["a"])
    assert area == pytest.approx(sum(length for _, length in jobs), rel=1e-9, abs=1e-6)


def test_the_totals_are_the_correctly_rounded_sums_of_the_owners_parts():
    # Ten owners each owed a slot for 0.1 s: PV is 1.0 exactly, as math.fsum adds, whichever Python
    # runs it (built-in sum() gave 0.9999999999999999 before Python 3.12, 1.0 after).
    owners = {f"o{k}": 1 for k in range(10)}
    m = Meter(owners, 10)
    for k in range(10):
        m.submit(0, f"j{k}", f"o{k}")
    for k in range(10):
        m.start(0.1, f"j{k}", f"s{k}")
    for k in range(10):
        m.finish(1, f"j{k}")
    r = m.result()
    parts = [o.violation for o in r.owners]
    assert r.violation == math.fsum(parts)
    assert all(p == pytest.approx(0.1) for p in parts)

"""Metrics on run records built by hand (as replay will build them), against a hand calculation.

Two slots, shares a = b = 1.
  a.0: submitted 0, 100 s, runs on s1 from 0 to 100.
  a.1: submitted 0, 100 s, runs on s2 from 0; vacate sent at 20, slot released at 30, nothing kept;
       runs again on s2 from 90 to 190.
  b.0: submitted 10, 50 s, runs on s2 from 40 to 90.
Feasible shares: a = 2 until b appears at 10, then 1 and 1 until b finishes at 90, then a = 2, and
a = 1 once a.0 is done at 100.
  PV: b is owed 1 slot from 10 to 40 = 30 slot-s; a never holds less than its feasible share.
  LC: s2 idle from its release at 30 until b.0 starts at 40 = 10 slot-s.
  PC: the vacated run lasted 30 s and kept nothing = 30 (20 lost work + 10 vacating).
      Check: real area 100 + 30 + 100 + 50 = 280, ideal area 100 + 100 + 50 = 250.
  US: a.0 100%, a.1 100/190, b.0 50/80.
"""

import pytest

from osep.measure.records import JobRecord, Run, compute, curves

RECORDS = [
    JobRecord("a.0", "a", 0, 100, 100, (Run("s1", 0, 100, False, 100),)),
    JobRecord("a.1", "a", 0, 100, 190, (Run("s2", 0, 30, True, 0, 20), Run("s2", 90, 190, False, 100))),
    JobRecord("b.0", "b", 10, 50, 90, (Run("s2", 40, 90, False, 50),)),
]
SHARES = {"a": 1.0, "b": 1.0}


def test_hand_calculation():
    m = compute(RECORDS, 2, SHARES)
    assert m.violation == pytest.approx(30)
    assert m.capacity_loss == pytest.approx(10)
    assert m.cost == pytest.approx(30)
    assert (m.lost_work, m.vacate_time, m.vacates) == (20, 10, 1)
    assert m.makespan == 190
    owners = {o.owner: o for o in m.owners}
    assert owners["a"].satisfaction == pytest.approx((100 + 100 * 100 / 190) / 2)
    assert owners["b"].satisfaction == pytest.approx(62.5)
    assert owners["b"].violation == pytest.approx(30) and owners["a"].violation == 0
    assert (owners["a"].vacated, owners["a"].lost_work) == (1, 20)


def test_policy_cost_is_real_area_minus_ideal_area():
    c = curves(RECORDS, 2, SHARES)
    real = sum(
        sum(c.real[o][k] * (c.times[k + 1] - c.times[k]) for k in range(len(c.times) - 1))
        for o in c.real
    )
    ideal = sum(r.runtime for r in RECORDS)
    assert real - ideal == pytest.approx(compute(RECORDS, 2, SHARES).cost)


def test_curves():
    c = curves(RECORDS, 2, SHARES)
    assert c.times == (0, 10, 30, 40, 90, 100, 190)
    assert c.real["a"] == (2, 2, 1, 1, 2, 1, 0)  # a.1 restarts at 90 while a.0 still runs
    assert c.real["b"] == (0, 0, 0, 1, 0, 0, 0)
    assert c.ideal["a"] == pytest.approx((2, 1, 1, 1, 2, 1, 0))
    assert c.ideal["b"] == pytest.approx((0, 1, 1, 1, 0, 0, 0))


def test_unfinished_jobs_have_no_satisfaction_and_still_count_as_demand():
    records = [JobRecord("x.0", "x", 0, 100, None, ())]
    m = compute(records, 1, {"x": 1.0})
    (x,) = m.owners
    assert x.satisfaction is None and x.finished == 0
    assert m.violation == 0  # no later event: the curve has no width to integrate


def test_owner_without_jobs_is_still_reported():
    m = compute(RECORDS, 2, {**SHARES, "idle-owner": 0.0})
    assert "idle-owner" in {o.owner for o in m.owners}


def test_zero_length_runs_and_instant_starts_keep_each_jobs_order():
    """A job that starts the instant it is submitted and runs for no time, and a slot evicted and
    taken again in the same second, are fed in an order the meter accepts."""
    records = [
        JobRecord("z", "a", 5.0, 0.0, 5.0, (Run("s1", 5.0, 5.0, False, 0.0),)),
        JobRecord("v", "a", 0.0, 10.0, 30.0, (Run("s2", 0.0, 8.0, True, 0.0, vacate_sent=8.0),
                                              Run("s2", 20.0, 30.0, False, 10.0))),
        JobRecord("w", "b", 8.0, 4.0, 12.0, (Run("s2", 8.0, 12.0, False, 4.0),)),
    ]
    m = compute(records, 2, {"a": 1, "b": 1})
    assert m.vacates == 1 and m.capacity_loss == 0  # s2 was taken again at once
    assert {o.owner: o.finished for o in m.owners} == {"a": 2, "b": 1}

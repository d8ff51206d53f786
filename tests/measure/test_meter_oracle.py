"""The incremental meter against the straightforward one (tests/measure/straight_meter.py) on random
event sequences: the same metrics, series and step curves, up to rounding."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.resources import Unit, measure
from osep.core.shares import feasible_shares
from osep.core.tree import ROOT, ShareTree, TreeNode
from osep.measure.meter import Meter
from osep.measure.metrics import Metrics
from osep.measure.series import Series
from osep.measure.trees import tree_ideal
from tests.measure.straight_meter import StraightMeter

OWNERS = ("a", "b", "c", "d", "e")

# One step: how far time moves (often not at all), what happens, to which job, with which owner,
# weight and checkpoint.
steps = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.0, 0.5, 1.0, 3.0, 7.25, 100.0]),
        st.sampled_from(["submit", "submit", "start", "start", "end", "evict", "finish",
                         "withdraw", "hold", "release", "signal"]),
        st.integers(0, 11),
        st.sampled_from(OWNERS),
        st.sampled_from([1.0, 1.0, 2.0, 0.5, 3.0]),
    ),
    max_size=80,
)
pools = st.tuples(
    st.dictionaries(st.sampled_from(OWNERS[:4]), st.sampled_from([0.5, 1.0, 2.0, 3.0, 4.5])),
    st.sampled_from([0.0, 1.0, 3.0, 4.0, 7.5, 12.0]),
)


def play(meters: list[Any], plan: list[tuple[float, str, int, str, float]]) -> None:
    """Feed the same valid events to every meter."""
    t = 0.0
    queued: dict[int, bool] = {}  # job -> running
    held: set[int] = set()
    slot = 0
    for dt, kind, job, owner, weight in plan:
        t += dt
        if kind == "submit" and job not in queued:
            queued[job] = False
            for m in meters:
                m.submit(t, job, owner, weight, (weight, weight, 0.0, 0.0, 0.0))
        elif job not in queued:
            continue
        elif kind == "start" and not queued[job] and job not in held:
            queued[job] = True
            slot += 1
            for m in meters:
                m.start(t, job, f"s{slot % 5}")
        elif kind in ("end", "evict") and queued[job]:
            queued[job] = False
            for m in meters:
                m.end(t, job, evicted=kind == "evict", saved=weight)
        elif kind == "signal":
            for m in meters:
                m.signal(t, job)
        elif kind == "finish":
            del queued[job]
            held.discard(job)
            for m in meters:
                m.finish(t, job)
        elif kind == "withdraw":
            del queued[job]
            held.discard(job)
            for m in meters:
                m.withdraw(t, job)
        elif kind in ("hold", "release"):
            (held.add if kind == "hold" else held.discard)(job)
            for m in meters:
                m.hold(t, job, kind == "hold")
    for m in meters:
        m.advance(t + 5.0)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def same_metrics(got: Metrics, want: Metrics) -> None:
    assert [o.owner for o in got.owners] == [o.owner for o in want.owners]
    for mine, theirs in zip(got.owners, want.owners, strict=True):
        assert close(mine.violation, theirs.violation), (mine, theirs)
        assert (mine.jobs, mine.finished, mine.vacated) == (theirs.jobs, theirs.finished,
                                                            theirs.vacated)
        assert close(mine.lost_work, theirs.lost_work) and close(mine.saved_work, theirs.saved_work)
        assert mine.capacity_loss == theirs.capacity_loss
        assert close(mine.vacate_time, theirs.vacate_time)
        assert (mine.satisfaction is None) == (theirs.satisfaction is None)
        assert mine.satisfaction is None or close(mine.satisfaction, theirs.satisfaction or 0.0)
    assert close(got.violation, want.violation)
    assert close(math.fsum(o.capacity_loss for o in got.owners), got.capacity_loss)
    assert close(math.fsum(o.lost_work + o.vacate_time for o in got.owners), got.cost)
    assert (got.capacity_loss, got.cost, got.vacates, got.makespan) == (
        want.capacity_loss, want.cost, want.vacates, want.makespan)


def same_series(got: Series | None, want: Series | None) -> None:
    assert got is not None and want is not None
    assert (got.start, got.width, got.evictions) == (want.start, want.width, want.evictions)
    for table, other in ((got.real, want.real), (got.ideal, want.ideal)):
        assert set(table) == set(other)
        for owner, values in table.items():
            assert all(close(x, y) for x, y in zip(values, other[owner], strict=True)), owner


@settings(max_examples=400, deadline=None)
@given(pools, steps)
def test_the_flat_water_filling_gives_the_straightforward_results(pool, plan):
    shares, capacity = pool
    if sum(shares.values()) > capacity:  # resolved shares fit the pool...
        capacity = sum(shares.values()) + (1.0 if capacity > 5 else 0.0)
    meters = [Meter(shares, capacity, curves=True), StraightMeter(shares, capacity, curves=True)]
    play(meters, plan)
    same_metrics(meters[0].result(), meters[1].result())
    same_series(meters[0].series(), meters[1].series())


@settings(max_examples=150, deadline=None)
@given(pools, steps)
def test_shares_larger_than_the_pool_and_the_step_curves(pool, plan):
    """Unresolved shares may add up to more than the pool (the level is then 0)."""
    shares, capacity = pool
    meters = [Meter(shares, capacity, steps=True), StraightMeter(shares, capacity, steps=True)]
    play(meters, plan)
    same_metrics(meters[0].result(), meters[1].result())
    got, want = meters[0].steps(), meters[1].steps()
    assert got.times == want.times
    for owner in want.real:
        assert got.real[owner] == want.real[owner]
        assert all(close(x, y) for x, y in zip(got.ideal[owner], want.ideal[owner], strict=True))


def halves(demand: Mapping[str, float], capacity: float) -> Mapping[str, float]:
    """An ideal that is not the meter's own water-filling (as an owner tree's is not)."""
    return feasible_shares({"a": capacity / 2, "c": capacity / 4}, demand, capacity)


@settings(max_examples=150, deadline=None)
@given(pools, steps)
def test_another_ideal_and_dominant_measures_give_the_straightforward_results(pool, plan):
    shares, capacity = pool
    meters = [Meter(shares, capacity, ideal=halves, curves=True),
              StraightMeter(shares, capacity, ideal=halves, curves=True)]
    play(meters, plan)
    same_metrics(meters[0].result(), meters[1].result())
    same_series(meters[0].series(), meters[1].series())
    cap = (capacity, capacity, 0.0, 0.0, 0.0)
    measures = {o: measure(Unit.CPUS, {"cpus": s}, cap)[0] for o, s in shares.items()}
    other = measure(Unit.CPUS, {}, cap)[0]
    meters = [Meter(shares, capacity, dominant=(measures, other)),
              StraightMeter(shares, capacity, dominant=(measures, other))]
    play(meters, plan)
    same_metrics(meters[0].result(), meters[1].result())


def _tree() -> ShareTree:
    """a and the group g (b and c in it, and any owner the tree does not list); d is not listed."""
    nodes = {"a": TreeNode("a", ROOT, 2.0, False, ()),
             "g": TreeNode("g", ROOT, 1.0, False, ("b", "c")),
             "b": TreeNode("b", "g", 1.0, False, ()),
             "c": TreeNode("c", "g", 3.0, False, ())}
    return ShareTree(nodes, "slots", ("a", "g"))


@settings(max_examples=150, deadline=None)
@given(pools, steps)
def test_a_trees_ideal_told_only_what_moved_gives_the_straightforward_results(pool, plan):
    """The meter asks an owner tree's ideal (osep.measure.trees) for the shares that changed with
    the owners whose demand moved; the straightforward meter asks it for every share each time."""
    shares, capacity = pool
    tree = _tree()
    told, whole = tree_ideal(tree), tree_ideal(tree)
    assert told is not None and whole is not None and hasattr(told, "update")
    meters = [Meter(shares, capacity, ideal=told, curves=True),
              StraightMeter(shares, capacity, ideal=whole, curves=True)]
    play(meters, plan)
    same_metrics(meters[0].result(), meters[1].result())
    same_series(meters[0].series(), meters[1].series())


def test_a_result_midway_changes_nothing():
    """Asking for the results integrates what is pending; the run goes on as if it had not."""
    def run(meter: Meter, ask: bool) -> float:
        calls = [lambda: meter.submit(0, 1, "a"), lambda: meter.submit(0, 2, "b"),
                 lambda: meter.start(1, 1, "s1"), lambda: meter.submit(3, 3, "b"),
                 lambda: meter.start(4, 2, "s2"), lambda: meter.finish(8, 1),
                 lambda: meter.advance(10)]
        for call in calls:
            call()
            if ask:
                meter.result()
        return meter.result().violation

    # a: owed 1 from 0 to 1; b: 1 from 0 to 4 (its first job waits), 1 from 8 to 10 (a's slot idle).
    assert run(Meter({"a": 1.0}, 2.0), True) == run(Meter({"a": 1.0}, 2.0), False) == 7.0

"""Elmroth and Gardfjäll's target-deviation priority (seed 001)."""

import pytest

from osep.fairshare import grid
from osep.fairshare.hierarchy import Hierarchy

# The paper's simulation policy (Figure 4 as the text gives it): VO-A 30%, VO-B 70% of the resource;
# VO-B's project P-B1 split between users U-B11, U-B12, U-B13 (U-B12 has 30% of P-B1). The other
# numbers the figure held are not in the text: these are placeholders adding up to 100.
PARENTS = {"VO-A": "", "VO-A.P-A1": "VO-A", "VO-A.P-A2": "VO-A", "VO-A.P-A3": "VO-A",
           "VO-B": "", "VO-B.P-B1": "VO-B", "VO-B.P-B2": "VO-B",
           "VO-B.P-B1.U-B11": "VO-B.P-B1", "VO-B.P-B1.U-B12": "VO-B.P-B1", "VO-B.P-B1.U-B13": "VO-B.P-B1"}
SHARES = {"VO-A": 30, "VO-A.P-A1": 50, "VO-A.P-A2": 30, "VO-A.P-A3": 20,
          "VO-B": 70, "VO-B.P-B1": 60, "VO-B.P-B2": 40,
          "VO-B.P-B1.U-B11": 35, "VO-B.P-B1.U-B12": 30, "VO-B.P-B1.U-B13": 35}
TREE = Hierarchy(PARENTS, SHARES)


def test_targets_are_percent_of_the_parent():
    t = grid.targets(TREE)
    assert t["VO-A"] == pytest.approx(30)
    assert t["VO-B.P-B1.U-B12"] == pytest.approx(30)
    # absolute shares become the same proportions
    t2 = grid.targets(Hierarchy({"a": "", "b": ""}, {"a": 1, "b": 3}))
    assert t2 == {"a": 25.0, "b": 75.0}
    # percentages are the targets as written, even when they leave part of the parent unassigned
    t3 = grid.targets(Hierarchy({"a": "", "b": ""}, {"a": 30, "b": 40}, percent=frozenset({"a", "b"})))
    assert t3 == {"a": 30.0, "b": 40.0}


def test_deviation_is_target_minus_actual_of_the_parents_usage():
    usage = {"VO-A.P-A1": 40.0, "VO-B.P-B1.U-B11": 30.0, "VO-B.P-B1.U-B13": 30.0}
    rows = grid.report(TREE, usage)
    assert rows["VO-A"].actual == pytest.approx(40)
    assert rows["VO-A"].deviation == pytest.approx(30 - 40)
    assert rows["VO-B.P-B1"].actual == pytest.approx(100)
    assert rows["VO-B.P-B1.U-B12"].deviation == pytest.approx(30)
    assert rows["VO-A.P-A2"].deviation == pytest.approx(30)


def test_the_tuple_is_padded_to_the_depth_and_read_in_base_200():
    usage = {"VO-A.P-A1": 40.0, "VO-B.P-B1.U-B11": 30.0, "VO-B.P-B1.U-B13": 30.0}
    rows = grid.report(TREE, usage)
    a2 = rows["VO-A.P-A2"]
    assert a2.deviations == (-10.0, 30.0, 0.0)
    assert a2.priority == pytest.approx(90 * 200**2 + 130 * 200 + 100)


@pytest.mark.parametrize(("tup", "number"), [
    ((0.0,), 100), ((-100.0, -100.0), 0), ((99.0, 99.0), 199 * 200 + 199),
    ((0.0, 0.0, 0.0), 100 * 40000 + 100 * 200 + 100),
])
def test_priority_is_the_base_200_number(tup, number):
    assert grid.priority(tup) == pytest.approx(number)


def test_real_deviations_can_overflow_a_digit():
    # the documented caveat: +100 is digit 200, which carries into the level above
    assert grid.priority((0.0, 100.0)) == grid.priority((1.0, -100.0))


def test_the_least_favoured_user_of_the_least_favoured_group_comes_first():
    usage = {"VO-A.P-A1": 20.0, "VO-A.P-A2": 10.0, "VO-B.P-B1.U-B11": 50.0, "VO-B.P-B2": 20.0}
    rows = grid.report(TREE, usage)
    leaves = TREE.leaves()
    first = max(leaves, key=lambda n: rows[n].priority)
    # VO-A used 30 of 100 (its target: dev 0), VO-B 70 (dev 0); within VO-A, P-A3 used nothing
    assert first == "VO-A.P-A3"


def test_usage_modes():
    finished = {"a": 10.0}
    running = [grid.RunningJob("a", 5.0, 8.0), grid.RunningJob("b", 1.0, 4.0)]
    assert grid.job_usage(grid.UsageMode.HISTORICAL, finished, running) == {"a": 10.0}
    assert grid.job_usage(grid.UsageMode.ACTIVE, finished, running) == {"a": 15.0, "b": 1.0}
    assert grid.job_usage(grid.UsageMode.PREDICTIVE, finished, running) == {"a": 18.0, "b": 4.0}


def test_global_usage_measures_the_children_of_global_nodes():
    # locally P-A2 got nothing on this resource; Grid-wide it got its 30% of VO-A's
    local = {"VO-A.P-A1": 30.0, "VO-B.P-B2": 70.0}
    world = {"VO-A.P-A1": 150.0, "VO-A.P-A2": 90.0, "VO-A.P-A3": 60.0, "VO-B.P-B2": 700.0}
    rows = grid.report(TREE, local, global_usage=world, global_below={"VO-A", "VO-B"})
    assert rows["VO-A"].deviation == pytest.approx(0)  # the first level: local usage
    assert rows["VO-A.P-A2"].actual == pytest.approx(30)
    assert rows["VO-A.P-A2"].deviation == pytest.approx(0)
    local_only = grid.report(TREE, local)
    assert local_only["VO-A.P-A2"].deviation == pytest.approx(30)


def test_global_below_without_global_usage_is_refused():
    with pytest.raises(ValueError, match="global_usage"):
        grid.report(TREE, {}, global_below={"VO-A"})


def test_an_idle_members_share_is_split_evenly_among_its_active_siblings():
    """The paper's Figure 13: jobs always go to the highest priority among the members with work;
    with one member idle, the other two end up with equal surpluses over their targets."""
    tree = Hierarchy({"p": "", "p.a": "p", "p.idle": "p", "p.b": "p"},
                     {"p": 100, "p.a": 50, "p.idle": 30, "p.b": 20})
    usage = {"p.a": 0.0, "p.b": 0.0}
    for _ in range(2000):
        rows = grid.report(tree, usage)
        chosen = max(usage, key=lambda n: rows[n].priority)
        usage[chosen] += 1.0
    rows = grid.report(tree, usage)
    assert rows["p.a"].actual == pytest.approx(50 + 15, abs=0.1)
    assert rows["p.b"].actual == pytest.approx(20 + 15, abs=0.1)

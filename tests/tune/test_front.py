"""The front of PV against cost, and the recommendation rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.tune.front import Pick, Rule, front, recommend
from osep.tune.sweep import Figures


def fig(pv, cost, worst=50.0, unfinished=0, vacates=0):
    return Figures(pv, cost, 0.0, vacates, 0.0, 0.0, worst, "o", unfinished, 100.0)


ROWS = [fig(100, 10), fig(105, 4, worst=80), fig(90, 50, worst=20), fig(200, 1), fig(120, 20), fig(80, 5, unfinished=3)]


def test_the_front_is_the_candidates_no_other_beats_on_both():
    assert front(ROWS) == {0, 1, 2, 3}  # 4 is beaten by 0; 5 left jobs unfinished


def test_equal_candidates_are_on_the_front_together():
    assert front([fig(1, 1), fig(1, 1), fig(1, 2)]) == {0, 1}


@pytest.mark.parametrize(("pick", "chosen"), [
    (Pick(Rule.CHEAPEST, 0.10), 2),  # only 2 (PV 90) is within 99
    (Pick(Rule.CHEAPEST, 0.12), 0),  # 0 (PV 100) is too, and cheaper
    (Pick(Rule.CHEAPEST, 0.20), 1),  # 105 is within 20% of 90, and cheaper
    (Pick(Rule.CHEAPEST, 2.0), 3),
    (Pick(Rule.LOWEST_PV, 0.0), 2),
    (Pick(Rule.FAIREST, 0.20), 1),
    (Pick(Rule.FAIREST, 0.0), 2),
])
def test_rules(pick, chosen):
    assert recommend(ROWS, pick) == chosen


def test_a_tie_goes_to_the_fewest_changes_from_the_policy_files_settings():
    rows = [fig(10, 5), fig(10, 5), fig(10, 5), fig(9, 50)]
    pick = Pick(Rule.CHEAPEST, 0.2)
    assert recommend(rows, pick, [2, 0, 1, 3]) == 1
    assert recommend(rows, pick, [2, 1, 1, 3]) == 1
    assert recommend(rows, pick) == 0


def test_no_recommendation_when_no_run_measured_the_whole_workload():
    assert recommend([fig(1, 1, unfinished=1)], Pick()) is None


figures = st.builds(fig, st.integers(0, 50), st.integers(0, 50), st.one_of(st.none(), st.floats(0, 100)),
                    st.sampled_from([0, 0, 0, 1]))


@given(st.lists(figures, min_size=1, max_size=30))
def test_the_front_beats_every_candidate_off_it(rows):
    on = front(rows)
    for k, row in enumerate(rows):
        beaten = any(o.pv <= row.pv and o.cost <= row.cost and (o.pv, o.cost) != (row.pv, row.cost)
                     for j, o in enumerate(rows) if not o.unfinished and j != k)
        assert (k in on) == (not row.unfinished and not beaten)


@given(st.lists(figures, min_size=1, max_size=30), st.sampled_from(Rule), st.floats(0, 1))
def test_the_recommendation_is_within_the_bound_and_on_the_front_when_cheapest(rows, rule, within):
    chosen = recommend(rows, Pick(rule, within))
    finished = [r for r in rows if not r.unfinished]
    if not finished:
        assert chosen is None
        return
    lowest = min(r.pv for r in finished)
    assert rows[chosen].unfinished == 0
    if rule is not Rule.LOWEST_PV:
        assert rows[chosen].pv <= lowest * (1 + within) + 1e-9 * max(1, lowest)
    if rule is Rule.CHEAPEST and within == 0:
        assert chosen in front(rows)

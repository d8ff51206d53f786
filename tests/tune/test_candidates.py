"""The candidate settings: the values an option lists, and the grid they make."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.core.plan import Target, VictimOrder
from osep.errors import ConfigError
from osep.sim.specs import Order
from osep.tune.candidates import MAX_CANDIDATES, Candidate, grid, parse_values

BASE = Candidate(None, 300.0, VictimOrder.WALLCLOCK, Target.OWNER, 0.0, Order.FAIRSHARE)


@pytest.mark.parametrize(("name", "text", "values"), [
    ("max_vacates", "1,2,4", [1, 2, 4]),
    ("max_vacates", "1..64x2", [1, 2, 4, 8, 16, 32, 64]),
    ("max_vacates", "auto, 3 ,3", [None, 3]),
    ("max_vacates", "0..3", [0, 1, 2, 3]),
    ("interval", "60..300:60", [60.0, 120.0, 180.0, 240.0, 300.0]),
    ("interval", "60..100:60", [60.0]),
    ("min_run_time", "0.5..2x2", [0.5, 1.0, 2.0]),
    ("min_run_time", "0,600", [0.0, 600.0]),
    ("victim_order", "lost-work,wallclock", [VictimOrder.LOST_WORK, VictimOrder.WALLCLOCK]),
    ("target", "feasible", [Target.FEASIBLE]),
    ("excess", "greedy,slurm", [Order.GREEDY, Order.SLURM]),
    ("excess", "", []),
])
def test_values(name, text, values):
    assert parse_values(name, text) == values


@pytest.mark.parametrize(("name", "text", "says"), [
    ("max_vacates", "1.5", "--max-vacates: '1.5': each value must be a whole number from 0 to"),
    ("max_vacates", "-1", "must be a whole number"),
    ("max_vacates", "lots", "--max-vacates: 'lots' is not a number"),
    ("interval", "0", "--interval: '0': each value must be a number from"),
    ("interval", "nan", "'nan' is not a number"),
    ("interval", "inf", "'inf' is not a number"),
    ("interval", "300..60", "a range goes up from a start"),
    ("interval", "60..600:0", "the step after : must be more than 0"),
    ("max_vacates", "0..8x2", "a range goes up from a start above 0"),
    ("max_vacates", "1..8x1", "the factor after x must be more than 1"),
    ("interval", "1..1e9:1", "more than 1,000 values"),
    ("victim_order", "newest", "--victim-order: 'newest' is not one of wallclock, lost-work"),
    ("excess", "none", "--excess: 'none' is not one of greedy, fairshare"),
])
def test_bad_values_are_one_line_errors_naming_the_option(name, text, says):
    with pytest.raises(ConfigError) as caught:
        parse_values(name, text)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_the_policy_files_settings_are_always_a_candidate():
    candidates = grid({"max_vacates": "1,2", "interval": "60", "victim_order": "wallclock",
                       "target": "owner", "min_run_time": "0", "excess": "fairshare"}, BASE)
    assert BASE in candidates
    assert len(candidates) == 3  # p 1 and 2 at t 60, and the policy file's p auto at t 300


def test_a_setting_not_given_is_swept_over_its_defaults_and_the_policy_files():
    candidates = grid({}, BASE)
    assert {c.max_vacates for c in candidates} == {1, 2, 4, 8, 16, None}
    assert {c.interval for c in candidates} == {60.0, 300.0, 900.0}
    assert {c.target for c in candidates} == {Target.OWNER}
    assert len(candidates) == 6 * 3 * 2 * 2


def test_combinations_no_policy_file_may_hold_are_left_out():
    candidates = grid({"target": "owner,feasible", "excess": "fairshare,greedy"}, BASE)
    assert all(c.valid for c in candidates)
    assert not any(c.target is Target.FEASIBLE and c.excess is Order.GREEDY for c in candidates)
    assert any(c.target is Target.FEASIBLE for c in candidates)


def test_a_grid_too_large_is_refused_before_anything_runs():
    with pytest.raises(ConfigError, match=f"at most {MAX_CANDIDATES:,} are tried"):
        grid({"max_vacates": "0..999", "interval": "60..1000:60"}, BASE)


@given(st.builds(Candidate, st.one_of(st.none(), st.integers(0, 1000)), st.floats(1, 86400),
                 st.sampled_from(VictimOrder), st.sampled_from(Target), st.floats(0, 1e6), st.sampled_from(Order)))
def test_a_candidate_reads_back_as_it_was_written(candidate):
    assert Candidate.from_dict(candidate.as_dict()) == candidate


@given(st.sampled_from(["max_vacates", "interval", "victim_order", "target", "min_run_time", "excess"]),
       st.text(max_size=60))
def test_any_text_is_values_or_a_one_line_error(name, text):
    try:
        values = parse_values(name, text)
    except ConfigError as exc:
        assert str(exc).startswith("<options>: --") and "\n" not in str(exc)
    else:
        assert len(values) <= 1000

"""Counting damage in logs, and the bounds on every number a log gives."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.replay.damage import (
    LATEST,
    Damage,
    brief,
    log_time,
    name_ok,
    number_in,
    whole_in,
)


def test_one_line_per_file_and_problem_with_the_first_places():
    lines: list[str] = []
    damage = Damage(lines.append)
    for k in range(1, 6):
        damage.add("a.log", f"line {k}", "not JSON, skipped")
    damage.add("a.log", "line 9", "too long, skipped")
    damage.add("b.log", "line 2", "not JSON, skipped")
    damage.add("a.log", "line 7", "not JSON, skipped")
    assert damage.total == 8
    assert damage.first("a.log") == ("line 1", "not JSON, skipped")
    assert damage.first("c.log") is None
    damage.report()
    assert lines == [
        "a.log: 6 times: not JSON, skipped (line 1; line 2; line 3; ...)",
        "a.log: line 9: too long, skipped",
        "b.log: line 2: not JSON, skipped",
    ]
    damage.report()  # reported once
    assert len(lines) == 3


def test_a_million_bad_records_are_still_one_line():
    lines: list[str] = []
    damage = Damage(lines.append)
    for k in range(1_000_000):
        damage.add("big.log", f"event {k}", "unknown event type, skipped")
    damage.report()
    assert lines == ["big.log: 1000000 times: unknown event type, skipped "
                     "(event 0; event 1; event 2; ...)"]


@pytest.mark.parametrize("value, expected", [
    (0, 0.0),
    (1795331988, 1795331988.0),
    (1795331988.5, 1795331988.5),
    (LATEST - 1, LATEST - 1),
    (LATEST, None),  # 2100-01-01: not included
    (-1, None),
    (-1e-9, None),
    (math.nan, None),
    (math.inf, None),
    (-math.inf, None),
    (1e300, None),
    (10**400, None),  # compared as an int: no OverflowError
    (True, None),
    ("1795331988", None),
    (None, None),
    ([1], None),
])
def test_log_times_are_finite_and_between_1970_and_2100(value, expected):
    assert log_time(value) == expected


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                 st.booleans(), st.text(max_size=5), st.none()))
def test_a_number_is_in_its_bounds_or_none(value):
    got = number_in(value, 0, 100)
    assert got is None or (isinstance(got, float) and 0 <= got <= 100 and math.isfinite(got))
    whole = whole_in(value, 0, 100)
    assert whole is None or (type(whole) is int and 0 <= whole <= 100)


@pytest.mark.parametrize("value, ok", [
    ("alice", True),
    ("group_physics.alice", True),
    ("slot1@vm", True),
    ("x" * 1024, True),
    ("x" * 1025, False),
    ("", False),
    ("a\nb", False),
    ("a\x1b[31mb", False),  # a terminal escape
    (5, False),
    (None, False),
])
def test_names_are_short_printable_strings(value, ok):
    assert name_ok(value) is ok


def test_brief_drops_what_was_done():
    assert brief("not UTF-8 text, skipped") == "not UTF-8 text"
    assert brief("not a complete event at the end (cut off?), ignored") == (
        "not a complete event at the end (cut off?)")

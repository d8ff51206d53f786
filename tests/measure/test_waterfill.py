"""The water-filling's sorted keys: an owner's key moved in place or out and back in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.measure.waterfill import rekey

A, B, C = (1.0, "a"), (2.0, "b"), (3.0, "c")


@pytest.mark.parametrize(("keys", "at", "old", "new", "after", "where"), [
    pytest.param([], 0, None, A, [A], (-1, 0), id="the first key"),
    pytest.param([A, B, C], 1, B, None, [A, C], (1, -1), id="taken out"),
    pytest.param([A, B, C], 1, B, (2.5, "b"), [A, (2.5, "b"), C], (1, 1), id="keeps its place"),
    pytest.param([A, B, C], 1, B, (4.0, "b"), [A, C, (4.0, "b")], (1, 2), id="moves past another"),
    pytest.param([A, B, C], 0, B, (0.5, "b"), [(0.5, "b"), A, C], (1, 0), id="a stale hint"),
    pytest.param([A, B, C], 7, C, (3.0, "a"), [A, B, (3.0, "a")], (2, 2), id="a hint past the end"),
    pytest.param([A, C], -1, None, None, [A, C], (-1, -1), id="neither"),
])
def test_rekey(keys, at, old, new, after, where):
    assert rekey(keys, at, old, new) == where
    assert keys == after


keys_st = st.lists(st.tuples(st.integers(0, 9).map(float), st.sampled_from("abcdefgh")),
                   unique=True).map(sorted)


@given(keys_st, st.data())
def test_rekey_keeps_the_keys_sorted_and_says_where(keys, data):
    old = data.draw(st.one_of(st.none(), st.sampled_from(keys)) if keys else st.none())
    others = [k for k in keys if k != old]
    new = data.draw(st.one_of(st.none(), st.tuples(st.integers(0, 9).map(float), st.just("z"))))
    if new in others:
        new = None
    at = data.draw(st.integers(-2, len(keys) + 2))
    before = list(keys)
    was, now = rekey(keys, at, old, new)
    expected = sorted(others + ([new] if new is not None else []))
    assert keys == expected
    assert was == (before.index(old) if old is not None else -1)
    assert now == (keys.index(new) if new is not None else -1)

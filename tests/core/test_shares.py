import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.core.shares import ShareTable, feasible_shares


@pytest.mark.parametrize(
    "shares, demand, capacity, expected",
    [
        pytest.param({}, {}, 10, {}, id="nobody"),
        pytest.param({"a": 5, "b": 5}, {"a": 10, "b": 10}, 10, {"a": 5, "b": 5}, id="paper-example"),
        pytest.param({"a": 5, "b": 5}, {"a": 10}, 10, {"a": 10, "b": 0}, id="owner-away"),
        pytest.param({"a": 5, "b": 5}, {"a": 10, "b": 2}, 10, {"a": 8, "b": 2}, id="demand-below-share"),
        pytest.param({"a": 5, "b": 5}, {"a": 3, "b": 2}, 10, {"a": 3, "b": 2}, id="pool-not-full"),
        # Excess split equally between the two hungry owners, whatever their shares.
        pytest.param({"a": 4, "b": 2, "c": 4}, {"a": 9, "b": 9, "c": 0}, 10,
                     {"a": 6, "b": 4, "c": 0}, id="excess-equal-split"),
        # The equal level is 3 for x and y, but x only needs 1 more, so y gets the rest.
        pytest.param({"x": 2, "y": 2, "z": 6}, {"x": 3, "y": 9, "z": 0}, 10,
                     {"x": 3, "y": 7, "z": 0}, id="water-filling"),
        pytest.param({"a": 10}, {"a": 4, "guest": 9}, 10, {"a": 4, "guest": 6}, id="non-owner-gets-excess"),
        pytest.param({"a": 0, "b": 0}, {"a": 10, "b": 10}, 10, {"a": 5, "b": 5}, id="zero-shares"),
        pytest.param({"a": 3, "b": 3}, {"a": 1, "b": 1, "c": 1}, 9, {"a": 1, "b": 1, "c": 1}, id="all-satisfied"),
    ],
)
def test_feasible_shares(shares, demand, capacity, expected):
    got = feasible_shares(shares, demand, capacity)
    assert got == pytest.approx(expected)
    assert sum(got.values()) == pytest.approx(min(capacity, sum(demand.values())))


def test_fractional_excess_is_shared_exactly():
    got = feasible_shares({"a": 1, "b": 1, "c": 1}, {"a": 9, "b": 9, "c": 9}, 4)
    assert got == pytest.approx({"a": 4 / 3, "b": 4 / 3, "c": 4 / 3})


@pytest.mark.parametrize(
    "table, capacity, expected",
    [
        (ShareTable({"a": 6, "b": 4}), 10, {"a": 6, "b": 4}),
        (ShareTable({"a": 6, "b": 4}), 20, {"a": 6, "b": 4}),  # unowned capacity stays unowned
        (ShareTable({"a": 6, "b": 4}), 5, {"a": 3, "b": 2}),  # machines down: scale down
        (ShareTable({"a": 30, "b": 40, "c": 15, "d": 15}, percent=True), 20,
         {"a": 6, "b": 8, "c": 3, "d": 3}),
        (ShareTable({"a": 50}, percent=True), 9, {"a": 4.5}),
        (ShareTable({}), 10, {}),
    ],
)
def test_resolve(table, capacity, expected):
    assert table.resolve(capacity) == pytest.approx(expected)


def test_largest_share_is_the_default_p():
    assert ShareTable({"a": 30, "b": 40}, percent=True).largest(20) == pytest.approx(8)
    assert ShareTable({}).largest(20) == 0


def _water_fill(shares, demand, capacity):
    """The water-filling as first written (a full sort, one owner at a time): what the faster
    :func:`feasible_shares` must give to the bit, over the same owners in the same order."""
    owners = dict.fromkeys([*shares, *demand])
    fes = {o: min(shares.get(o, 0.0), float(demand.get(o, 0))) for o in owners}
    left = capacity - math.fsum(fes.values())
    if left <= 0:
        return fes
    hungry = sorted((demand.get(o, 0) - fes[o], o) for o in owners if demand.get(o, 0) > fes[o])
    remaining = len(hungry)
    for index, (need, owner) in enumerate(hungry):
        level = left / remaining
        if need <= level:
            fes[owner] += need
            left -= need
            remaining -= 1
            continue
        for _, rest in hungry[index:]:
            fes[rest] += level
        break
    return fes


amounts = st.one_of(st.integers(0, 9), st.floats(0, 20, allow_nan=False), st.just(1 / 3))


@given(st.dictionaries(st.sampled_from("abcdefgh"), amounts),
       st.dictionaries(st.sampled_from("abcdefghij"), amounts),
       st.one_of(st.integers(0, 60), st.floats(0, 100, allow_nan=False)))
def test_feasible_shares_are_the_plain_water_filling_to_the_bit(shares, demand, capacity):
    expected = _water_fill(shares, demand, capacity)
    got = feasible_shares(shares, demand, capacity)
    assert list(got) == list(expected)
    assert [repr(v) for v in got.values()] == [repr(v) for v in expected.values()]


@given(st.dictionaries(st.sampled_from("abcdefgh"), amounts),
       st.dictionaries(st.sampled_from("abcdefghij"), amounts),
       st.one_of(st.integers(0, 60), st.floats(0, 100, allow_nan=False)), st.randoms())
def test_feasible_shares_do_not_depend_on_the_owners_order_to_the_bit(shares, demand, capacity, rng):
    """The owners' order (a set's, which moves with PYTHONHASHSEED) changes no figure's last bit."""
    got = feasible_shares(shares, demand, capacity)
    mixed = [dict(rng.sample(sorted(table.items()), len(table))) for table in (shares, demand)]
    again = feasible_shares(*mixed, capacity)
    assert {o: repr(v) for o, v in got.items()} == {o: repr(v) for o, v in again.items()}


def test_what_is_left_is_summed_exactly_whatever_the_order():
    # 0.1 + 0.2 + 0.3 is 0.6000000000000001 in this order and 0.6 in the other: summed as they
    # come, d's figure would move with the order of the owners.
    forward = feasible_shares({"a": 0.1, "b": 0.2, "c": 0.3}, {"a": 0.1, "b": 0.2, "c": 0.3, "d": 5}, 1)
    backward = feasible_shares({"c": 0.3, "b": 0.2, "a": 0.1}, {"d": 5, "c": 0.3, "b": 0.2, "a": 0.1}, 1)
    assert forward["d"] == backward["d"] == 0.4

import pytest

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

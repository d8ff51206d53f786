"""The ledger a plan updates (osep.core.ledger): no owner, and no group the beneficiary is not in,
may lose below its target; what is given and taken moves the groups' holdings too."""

from __future__ import annotations

from osep.core.ledger import Groups, Ledger
from osep.core.resources import ZERO, Vec, held, plus

ONE = held((1, 128, 0, 0))  # what a one-core job holds


def jobs(n: int) -> Vec:
    total = ZERO
    for _ in range(n):
        total = plus(total, ONE)
    return total


def slots(vec: Vec) -> float:
    return vec[0]


def flat(holding: dict[str, int], targets: dict[str, float]) -> Ledger:
    return Ledger({o: jobs(n) for o, n in holding.items()}, {}, targets, None, 0)


def test_an_owner_may_lose_only_down_to_its_target():
    ledger = flat({"a": 5}, {"a": 3.0})
    assert ledger.may_lose("a", jobs(2))
    assert not ledger.may_lose("a", jobs(3))
    assert ledger.gap("a") == -2.0 and ledger.over("a") == (-2.0,) and ledger.owed("a") == (2.0,)


def test_give_and_take_move_what_an_owner_holds():
    ledger = flat({"a": 1}, {"a": 3.0, "b": 0.0})
    ledger.give("b", ONE)
    ledger.take("a", ONE)
    assert (ledger.active("a"), ledger.active("b")) == (0.0, 1.0)
    assert list(ledger.gaps_of(["a", "b"])) == [3.0, -1.0]


def tree() -> Ledger:
    """a and b in group g (target 4, holding 5); c outside it."""
    groups = Groups({"a": ("g",), "b": ("g",)}, {"g": 4.0}, {"g": jobs(5)}, slots)
    every = dict.fromkeys("abc", slots)
    return Ledger({"a": jobs(3), "b": jobs(2)}, every, {"a": 1.0, "b": 1.0, "c": 5.0}, groups)


def test_a_group_loses_to_an_outsider_only_down_to_its_target():
    ledger = tree()
    assert ledger.may_lose("a", jobs(1), "c", ONE)
    assert not ledger.may_lose("a", jobs(2), "c", ONE)
    assert not ledger.may_lose_all({"a": jobs(1), "b": jobs(1)}, "c", ONE)


def test_moving_capacity_within_a_group_never_hurts_it():
    assert tree().may_lose("a", jobs(2), "b", jobs(2))


def test_a_group_ranks_before_its_members():
    ledger = tree()
    ledger.give("a", ONE)
    assert ledger.over("a") == (-2.0, -3.0) and ledger.owed("b") == (2.0, 1.0)

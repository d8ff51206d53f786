"""Slurm's classic fair share against the manual's worked example (seed 002), digit for digit."""

import math

import pytest

from osep.fairshare import slurm
from osep.fairshare.hierarchy import Hierarchy

# The manual's Figure 3: accounts A (40) and D (60); B (30) and C (10) in A; E (25) and F (35) in D;
# user1 in B, user2 and user3 (one share each) in C, user4 in E, user5 in F. Usage as a fraction of
# the machine: user1 0.2, user2 0.25, user4 0.25 (0.7 in all: the machine's total is 1).
PARENTS = {
    "A": "", "A.B": "A", "A.B.user1": "A.B", "A.C": "A", "A.C.user2": "A.C", "A.C.user3": "A.C",
    "D": "", "D.E": "D", "D.E.user4": "D.E", "D.F": "D", "D.F.user5": "D.F",
}
SHARES = {"A": 40, "A.B": 30, "A.B.user1": 1, "A.C": 10, "A.C.user2": 1, "A.C.user3": 1,
          "D": 60, "D.E": 25, "D.E.user4": 1, "D.F": 35, "D.F.user5": 1}
USAGE = {"A.B.user1": 0.2, "A.C.user2": 0.25, "D.E.user4": 0.25}
TREE = Hierarchy(PARENTS, SHARES)


@pytest.fixture(scope="module")
def rows():
    return slurm.classic(TREE, USAGE, total=1.0)


@pytest.mark.parametrize(("node", "share"), [
    ("A", 0.4), ("A.B", 0.3), ("A.B.user1", 0.3), ("A.C.user2", 0.05), ("A.C.user3", 0.05),
    ("D.E.user4", 0.25), ("D.F.user5", 0.35),
])
def test_normalized_shares_are_the_manuals(rows, node, share):
    assert rows[node].share == pytest.approx(share, abs=1e-12)


def test_with_four_shares_user2_would_have_008():
    shares = dict(SHARES, **{"A.C.user2": 4})
    assert slurm.normalized_shares(Hierarchy(PARENTS, shares))["A.C.user2"] == pytest.approx(0.08)


@pytest.mark.parametrize(("node", "effective", "digits"), [
    ("A", 0.45, 12), ("D", 0.25, 12),  # the top level: actual usage
    ("A.B", 0.3875, 12), ("A.C", 0.3, 12), ("D.E", 0.25, 12), ("D.F", 0.1458, 4),
    ("A.B.user1", 0.3875, 12), ("A.C.user2", 0.275, 12), ("A.C.user3", 0.15, 12),
    ("D.E.user4", 0.25, 12), ("D.F.user5", 0.1458, 4),
])
def test_effective_usages_are_the_manuals(rows, node, effective, digits):
    assert round(rows[node].effective, digits) == pytest.approx(effective, abs=10.0**-(digits + 2))


@pytest.mark.parametrize(("user", "printed"), [
    ("A.B.user1", "0.408479"), ("A.C.user2", "0.022097"), ("A.C.user3", "0.125000"),
    ("D.E.user4", "0.500000"), ("D.F.user5", "0.749154"),
])
def test_factors_are_the_manuals_printed_digits(rows, user, printed):
    assert f"{rows[user].factor:.6f}" == printed


def test_user5_is_served_first_and_user2_last(rows):
    users = [n for n in PARENTS if TREE.is_leaf(n)]
    ranked = sorted(users, key=lambda u: rows[u].factor, reverse=True)
    assert ranked[0] == "D.F.user5"
    assert ranked[-1] == "A.C.user2"


def test_usage_is_normalized_by_the_leaves_sum_without_a_total():
    rows = slurm.classic(TREE, USAGE)
    assert rows["A.B.user1"].usage == pytest.approx(0.2 / 0.7)


def test_a_total_below_the_leaves_sum_is_refused():
    with pytest.raises(ValueError, match="at least the sum"):
        slurm.classic(TREE, USAGE, total=0.5)


def test_dampening_divides_the_exponent():
    rows = slurm.classic(TREE, USAGE, total=1.0, dampening=2.0)
    assert rows["A.C.user3"].factor == pytest.approx(2 ** (-0.15 / 0.05 / 2))


def test_fairshare_parent_users_all_get_their_accounts_factor():
    rows = slurm.classic(TREE, USAGE, total=1.0, use_parent={"A.C.user2", "A.C.user3"})
    for user in ("A.C.user2", "A.C.user3"):
        assert rows[user].share == pytest.approx(0.1)
        assert rows[user].effective == pytest.approx(0.3)
        assert rows[user].factor == pytest.approx(rows["A.C"].factor)


def test_the_decay_factor_halves_usage_over_a_half_life():
    assert slurm.period_decay(300, 300) == pytest.approx(0.5)
    d = slurm.period_decay(300, 7 * 86400)
    assert d ** (7 * 86400 / 300) == pytest.approx(0.5)


def test_a_node_without_shares_gets_factor_zero():
    tree = Hierarchy({"a": "", "b": ""}, {"a": 1, "b": 0})
    rows = slurm.classic(tree, {"a": 1.0})
    assert rows["b"].share == 0 and rows["b"].factor == 0
    assert not math.isnan(rows["a"].factor)

"""Hazel's Cambridge scheme (seed 003): the unit price, its bounds, and U, W, V through a job."""

import math

import pytest

from osep.fairshare import cambridge
from osep.fairshare.cambridge import Project
from osep.fairshare.hierarchy import Hierarchy


def test_the_price_solves_the_implicit_formula():
    p = Project(shares=40, usage=3000.0, outstanding=200.0)
    demand, estimate = 25_000.0, 60.0
    price = cambridge.unit_price(p, demand, estimate)
    implicit = (p.usage + p.outstanding + price * estimate + cambridge.K * p.shares) * demand / (100_000 * p.shares)
    assert price == pytest.approx(implicit)


def test_an_idle_project_pays_k_times_the_demand_over_100000_for_a_tiny_job():
    price = cambridge.unit_price(Project(shares=10), 40_000.0, estimate=1e-9)
    assert price == pytest.approx(50 * 40_000 / 100_000)


def test_the_price_is_at_least_one():
    assert cambridge.unit_price(Project(shares=100), 100.0, 5.0) == 1.0


def test_a_job_too_large_for_any_price():
    assert cambridge.unit_price(Project(shares=1), 20_000.0, 5.0) == math.inf  # 100000 <= 20000 * 5
    assert not cambridge.accepted(math.inf)


def test_in_continuous_use_the_price_approaches_u_np_over_100000_s():
    p = Project(shares=500, usage=1e9)
    approx = p.usage * 20_000 / (100_000 * p.shares)
    assert cambridge.unit_price(p, 20_000.0, 5.0) == pytest.approx(approx, rel=3e-3)


@pytest.mark.parametrize(("cpu", "limit"), [(5, 255), (1, 255), (10, 127.5), (60, 21.25), (1200, 1.0625),
                                            (5000, 1.0)])
def test_default_price_limit_is_1275_over_c1_within_1_to_255(cpu, limit):
    assert cambridge.price_limit(cpu) == pytest.approx(limit)


def test_prices_above_the_limit_are_not_accepted():
    assert cambridge.accepted(255.0)
    assert not cambridge.accepted(255.5)
    assert not cambridge.accepted(30.0, limit=21.25)


def test_u_and_v_lose_ten_percent_a_day():
    p = cambridge.decay(Project(shares=10, usage=1000.0, outstanding=50.0, value=2.0), 86_400)
    assert p.usage == pytest.approx(900.0)
    assert p.value == pytest.approx(1.8)
    assert p.outstanding == 50.0  # W is work still queued: it does not decay


def test_a_job_from_submission_to_termination():
    p = Project(shares=20, usage=100.0)
    price = cambridge.unit_price(p, 20_000.0, 30.0)
    queued, charge = cambridge.submit(p, price, 30.0)
    assert queued.outstanding == pytest.approx(30.0 * price)
    done = cambridge.terminate(queued, 24.0, price, charge)
    assert done.usage == pytest.approx(100.0 + 24.0 * price)
    assert done.outstanding == pytest.approx(0.0)
    assert done.value == pytest.approx(24.0 / (20 * 20))


def test_on_a_tree_each_leaf_is_a_project_with_its_share_of_the_whole():
    tree = Hierarchy({"A": "", "A.x": "A", "A.y": "A", "B": ""}, {"A": 40, "A.x": 1, "A.y": 3, "B": 60})
    assert cambridge.project_shares(tree) == pytest.approx({"A.x": 10.0, "A.y": 30.0, "B": 60.0})
    rows = cambridge.report(tree, {"A.x": 500.0}, demand=20_000.0, estimate=5.0)
    assert set(rows) == {"A.x", "A.y", "B"}
    assert rows["A.x"].usage == 500.0
    assert rows["A.x"].value == pytest.approx(500.0 / (20 * 10))
    assert rows["A.x"].price == pytest.approx((500 + 50 * 10) * 20_000 / (100_000 * 10 - 20_000 * 5))


@pytest.mark.parametrize("used", [0.0, 500.0])
def test_a_project_with_no_shares_has_no_value_and_no_price(used):
    # V adds R / (20 S) per job: at S = 0 it is undefined, as the price is (no price will do)
    tree = Hierarchy({"A": "", "B": ""}, {"A": 0, "B": 60})
    rows = cambridge.report(tree, {"A": used, "B": 10.0})
    assert rows["A"].value is None
    assert rows["A"].price == math.inf and not rows["A"].accepted
    assert rows["B"].value == pytest.approx(10.0 / (20 * 60))

import math

import pytest

from osep.sim import fairshare


@pytest.mark.parametrize(
    "usage, share, expected",
    [
        # Slurm's classic fair-share example: effective usage over normalized share.
        (0.3875, 0.30, 0.408479),
        (0.275, 0.05, 0.022097),
        (0.15, 0.05, 0.125000),
        (0.25, 0.25, 0.500000),
        (0.25 * 35 / 60, 0.35, 0.749154),  # the example rounds this usage to .1458 in its text
        (0.0, 0.4, 1.0),
        (0.2, 0.0, 0.0),  # non-owner: behind every owner
        (0.0, 0.0, 0.0),
    ],
)
def test_factor(usage, share, expected):
    assert fairshare.factor(usage, share) == pytest.approx(expected, abs=5e-6)


def test_decay_halves_after_one_half_life():
    assert fairshare.decayed(100.0, 0, 3600, 3600) == pytest.approx(50.0)
    assert fairshare.decayed(100.0, 0, 0, 3600) == 100.0


def test_constant_rate_accrues_like_the_integral():
    # One slot for one half-life: integral of 2^(-(h-s)/h) ds over [0, h] = h / (2 ln 2).
    assert fairshare.decayed(0.0, 1, 3600, 3600) == pytest.approx(3600 / (2 * math.log(2)))
    # Splitting the interval gives the same answer (lazy updates are exact).
    split = fairshare.decayed(fairshare.decayed(0.0, 2, 1000, 3600), 2, 2600, 3600)
    assert split == pytest.approx(fairshare.decayed(0.0, 2, 3600, 3600))


def test_factors_normalize_usage_and_shares():
    f = fairshare.factors({"a": 300.0, "b": 100.0}, {"a": 1, "b": 1})
    assert f["a"] == pytest.approx(2 ** -1.5)
    assert f["b"] == pytest.approx(2 ** -0.5)
    assert fairshare.factors({}, {"a": 1}) == {"a": 1.0}

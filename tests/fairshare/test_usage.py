import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osep.fairshare import usage as fairshare


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


def piecewise(initial, changes, now, half_life):
    """Usage per owner by decayed() from change to change: the accountant's values, the plain way."""
    usage, held, at = dict(initial), {}, {}
    for t, owner, slots in changes:
        usage[owner] = fairshare.decayed(usage.get(owner, 0.0), held.get(owner, 0), t - at.get(owner, 0.0),
                                         half_life)
        held[owner] = held.get(owner, 0) + slots
        at[owner] = t
    return {o: fairshare.decayed(u, held.get(o, 0), now - at.get(o, 0.0), half_life)
            for o, u in usage.items()}


@st.composite
def histories(draw):
    """Starts and ends of runs of three owners, in time order, never holding fewer than none."""
    owners = ["a", "b", "c"]
    initial = draw(st.dictionaries(st.sampled_from(owners), st.floats(0, 1e5)))
    held = dict.fromkeys(owners, 0)
    changes, t = [], 0.0
    for _ in range(draw(st.integers(0, 40))):
        t += draw(st.sampled_from([0.0, 1.0, 60.0, 3600.0, 86400.0]))
        owner = draw(st.sampled_from(owners))
        slots = draw(st.integers(-held[owner], 5))
        held[owner] += slots
        changes.append((t, owner, slots))
    return initial, changes, t + draw(st.sampled_from([0.0, 30.0, 7200.0]))


@given(histories(), st.sampled_from([60.0, 3600.0, 86400.0]))
def test_the_accountant_gives_the_usage_of_decaying_from_change_to_change(history, half_life):
    initial, changes, now = history
    acc = fairshare.Accountant(half_life, initial)
    for t, owner, slots in changes:
        acc.occupy(t, owner, slots)
    expected = piecewise(initial, changes, now, half_life)
    usage = acc.usage_at(now)
    assert set(usage) == set(expected)
    scale = max([1.0, *expected.values()])
    for owner, value in expected.items():
        assert usage[owner] == pytest.approx(value, rel=1e-9, abs=1e-9 * scale)
    # Rounding is relative to what the owners held (a slot held for good is h / ln 2 of usage):
    # fractions of a total far below that are rounding's.
    holding, most = {}, 0
    for _, owner, slots in changes:
        holding[owner] = holding.get(owner, 0) + slots
        most = max(most, sum(holding.values()))
    total = sum(expected.values())
    if total < 1e-6 * max(1.0, most * half_life / math.log(2)):
        return
    for owner, fraction in acc.fractions(now, [*expected, "nobody"]).items():
        assert fraction == pytest.approx(expected.get(owner, 0.0) / total if total > 0 else 0.0,
                                         rel=1e-9, abs=1e-9)
    # Slot-seconds: what each owner held, for how long, undecayed.
    held, expected_charged, last = {}, {}, {}
    for t, owner, slots in changes:
        expected_charged[owner] = expected_charged.get(owner, 0.0) + held.get(owner, 0) * (t - last.get(owner, 0.0))
        held[owner] = held.get(owner, 0) + slots
        last[owner] = t
    for owner in expected_charged:
        expected_charged[owner] += held[owner] * (now - last[owner])
    got = acc.charged_at(now)
    for owner, value in expected_charged.items():
        assert got.get(owner, 0.0) == pytest.approx(value)


def test_reading_the_accountant_changes_nothing():
    once, often = fairshare.Accountant(600.0, {"a": 50.0}), fairshare.Accountant(600.0, {"a": 50.0})
    for acc in (once, often):
        acc.occupy(100.0, "a", 3)
        acc.occupy(100.0, "b", 1)
    for t in range(100, 5000, 60):
        often.usage_at(float(t))
        often.fractions(float(t), ["a", "b"])
    for acc in (once, often):
        acc.occupy(5000.0, "a", -3)
    assert once.usage_at(9000.0) == often.usage_at(9000.0)
    assert once.fractions(9000.0, ["a", "b"]) == often.fractions(9000.0, ["a", "b"])


def test_the_accountant_keeps_its_values_over_a_thousand_half_lives():
    # The scaled usage would overflow after 1,024 half-lives: its base moves up as time goes.
    acc = fairshare.Accountant(1.0, {"a": 1.0})
    acc.occupy(0.0, "b", 2)
    for t in range(1, 3001):
        acc.occupy(float(t), "a", 1 if t % 2 else -1)
    usage = acc.usage_at(3000.5)
    assert usage["b"] == pytest.approx(2 / math.log(2))
    assert 0 < usage["a"] < 1 / math.log(2)
    assert acc.fractions(1e9, ["a", "b"]) == {"a": 0.0, "b": 1.0}
    # Idle for long after: everything decayed to nothing, no overflow.
    quiet = fairshare.Accountant(1.0, {"a": 1.0})
    assert quiet.usage_at(1e6) == {"a": 0.0}
    assert quiet.fractions(1e6, ["a"]) == {"a": 0.0}

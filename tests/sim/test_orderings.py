"""The simulated negotiator's orderings: each seed's model ranks owners as its formulas say, and in
a whole simulation."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import TWO_LEVELS, policy_from
from osep.config.scenario import load_scenario
from osep.core.model import JobId
from osep.core.plan import Target
from osep.core.shares import ShareTable
from osep.errors import OsepError
from osep.experiment.runs import outcome_column, run_policy, run_scenario, totals
from osep.fairshare.hierarchy import Hierarchy, of_shares
from osep.fairshare.usage import Accountant
from osep.sim import orderings
from osep.sim.driver import simulate
from osep.sim.specs import JobSpec, ModelParams, Order, PoolSettings, SlotSpec


def jid(n: int) -> JobId:
    return JobId("", n, 0)


def accountant(usage, charged=None, holding=None):
    """Usage ``usage`` at the start; each owner of ``charged`` held one slot from the start for that
    many seconds, each of ``holding`` that many slots from the start on."""
    acc = Accountant(3600.0, usage)
    for owner, seconds in (charged or {}).items():
        acc.occupy(0.0, owner, 1)
        acc.occupy(seconds, owner, -1)
    for owner, slots in (holding or {}).items():
        acc.occupy(0.0, owner, slots)
    return acc


def queued(*owners):
    return {o: [(0.0, i, jid(i))] for i, o in enumerate(owners)}


def build(order, shares, owners, params=None, initial=None, capacity=20):
    return orderings.build(order, {}, shares, "slots", owners, params or ModelParams(), 3600.0, initial or {},
                           capacity)


@given(st.dictionaries(st.sampled_from("abcdef"), st.floats(0, 1e6), min_size=1),
       st.dictionaries(st.sampled_from("abcdef"), st.integers(1, 50), min_size=1))
def test_slurm_on_flat_shares_ranks_as_the_fairshare_baseline(usage, raw):
    owners = sorted(set(usage) | set(raw))
    idle = queued(*owners)
    shares = {o: float(s) for o, s in raw.items()}
    slurm = build(Order.SLURM, shares, owners)
    base = orderings.FairShare(shares)
    acc = accountant(usage)
    assert slurm.rank(0.0, idle, {}, acc) == base.rank(0.0, idle, {}, acc)


TREE = policy_from(TWO_LEVELS).shares  # physics (6 slots: cms, atlas 50% each) and chem (4)


def test_slurm_charges_a_member_for_its_groups_usage():
    # chem used 30 times what cms did, yet atlas (cms's group mate) used so much that cms's effective
    # usage, which carries half of its group's, puts chem first (flat, cms would come first).
    owners = list(TREE.shares)
    order = build(Order.SLURM, TREE, owners)
    acc = accountant({"physics.cms": 10.0, "physics.atlas": 1000.0, "chem": 300.0})
    ranked = order.rank(0.0, queued("physics.cms", "chem"), {}, acc)
    assert ranked == ["chem", "physics.cms"]
    flat = build(Order.SLURM, {"physics.cms": 3.0, "physics.atlas": 3.0, "chem": 4.0}, owners)
    assert flat.rank(0.0, queued("physics.cms", "chem"), {}, acc) == ["physics.cms", "chem"]


def test_grid_ranks_top_down_whatever_the_members_own_usage():
    # physics is far over its 60% target, chem under its 40%: chem goes first though it used more
    # than cms itself (the first element of the deviation tuple decides).
    order = build(Order.GRID, TREE, list(TREE.shares))
    acc = accountant({"physics.cms": 100.0, "physics.atlas": 5000.0, "chem": 900.0})
    assert order.rank(0.0, queued("physics.cms", "chem"), {}, acc) == [
        "chem", "physics.cms"]
    # Inside physics, cms (under its 50% of the group) before atlas.
    assert order.rank(0.0, queued("physics.atlas", "physics.cms"), {}, acc) == [
        "physics.cms", "physics.atlas"]


def test_share_ranks_by_the_next_jobs_priority_increment():
    shares = {"a": 10.0, "b": 10.0, "c": 30.0}
    order = build(Order.SHARE, shares, list(shares), initial={"a": 100.0, "b": 100.0, "c": 100.0})
    # Charges since the start: a held more than b; c as much as a but with three times the shares.
    acc = accountant({}, charged={"a": 2000.0, "b": 500.0, "c": 2000.0})
    ranked = order.rank(3600.0, queued("a", "b", "c"), {"a": 1, "b": 1, "c": 1}, acc)
    assert ranked == ["c", "b", "a"]
    # The usage it keeps is the paper's: decayed by one half-life, plus the charges.
    assert order.state.usage["a"] == pytest.approx(100.0 / 2 + 2000.0)


def test_share_runs_no_one_with_no_share_before_an_owner():
    order = build(Order.SHARE, {"a": 1.0}, ["a", "stranger"])
    acc = accountant({}, holding={"a": 5})
    assert order.rank(60.0, queued("stranger", "a"), {"a": 5}, acc) == ["a", "stranger"]


# vo_a of osep/data/scenarios/tree.toml comes back while vo_b.b1 holds the pool: the four users with no
# usage all have an m_share of 0.2 (0.6 * 2/3 * 0.5 in vo_a, 0.4 * 0.5 in vo_b) and the same guarded
# usage, so the same priority increment, but for the last bits.
SHARE_TREE = Hierarchy(
    {"vo_a": "", "vo_a.p1": "vo_a", "vo_a.p1.u1": "vo_a.p1", "vo_a.p1.u2": "vo_a.p1", "vo_a.p2": "vo_a",
     "vo_a.p3": "vo_a", "vo_b": "", "vo_b.b1": "vo_b", "vo_b.b2": "vo_b"},
    {"vo_a": 60, "vo_a.p1": 50, "vo_a.p1.u1": 50, "vo_a.p1.u2": 50, "vo_a.p2": 25, "vo_a.p3": 25,
     "vo_b": 40, "vo_b.b1": 50, "vo_b.b2": 50})


@pytest.mark.parametrize("now", [600.0, 660.0, 3600.0])
def test_share_ranks_owners_its_formulas_tie_by_name(now):
    # Ranked on the raw increments, vo_b.b2 (a unit in the last place lower) came first.
    order = orderings.Share(SHARE_TREE, ModelParams(), 3600.0, {})
    acc = accountant({}, holding={"vo_b.b1": 40})
    idle = queued("vo_b.b2", "vo_a.p2", "vo_b.b1", "vo_a.p1.u2", "vo_a.p1.u1")
    assert order.rank(now, idle, {"vo_b.b1": 40}, acc) == [
        "vo_a.p1.u1", "vo_a.p1.u2", "vo_a.p2", "vo_b.b2", "vo_b.b1"]


@pytest.mark.parametrize(("a", "b", "tied"), [
    (0.6 * (50 / 75) * 0.5, 0.4 * 0.5, True),  # the same m_share by two products
    (0.1 + 0.2, 0.3, True),
    (1.0, 1.0 + 1e-9, False),  # a real difference, however small, still ranks
    (1e-300, 1.0000000000001e-300, True),
    (0.0, 0.0, True),
    (math.inf, math.inf, True),
])
def test_values_equal_to_twelve_digits_tie(a, b, tied):
    assert (orderings.settled(a) == orderings.settled(b)) is tied


def test_a_tie_goes_by_name_whatever_the_order_of_the_queues():
    values = {"b": 0.3, "a": 0.1 + 0.2, "c": 0.2}
    for owners in (("a", "b", "c"), ("c", "b", "a"), ("b", "c", "a")):
        ranked = orderings._by_value(queued(*owners), values, best_high=True)
        assert ranked == ["a", "b", "c"]


def straight_by_value(idle, value, best_high):
    """Every owner's value settled, sorted with its name: the order _by_value must give."""
    sign = -1.0 if best_high else 1.0
    return sorted((o for o, q in idle.items() if q),
                  key=lambda o: (sign * orderings.settled(value[o]) if o in value else math.inf, o))


# Values that often tie or nearly tie when settled: a few bases, nudged by a few units in the
# last place or by about one unit of the 12th digit.
_near = st.builds(
    lambda base, ulps, digit: base * (1.0 + digit * 1e-12) + ulps * math.ulp(base),
    st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0 / 3.0, 1e-300, 7.5e12, 9.999999999995, 1e-5]),
    st.integers(-3, 3), st.integers(-2, 2))
_values = st.one_of(_near, st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(-1.0, 1.0), st.just(math.inf), st.just(-math.inf))


@given(st.dictionaries(st.sampled_from("abcdefghij"), st.one_of(st.none(), _values), max_size=10),
       st.booleans())
def test_ranking_by_value_settles_only_neighbours_but_orders_as_settling_all(values, best_high):
    idle = queued(*values)
    given_values = {o: v for o, v in values.items() if v is not None}
    if any(math.isnan(v) for v in given_values.values()):
        return  # NaN does not order: neither way ranks it meaningfully
    assert orderings._by_value(idle, given_values, best_high) == straight_by_value(
        idle, given_values, best_high)


# -- Cambridge ------------------------------------------------------------------------------------

CAMBRIDGE_HALF_LIFE = ModelParams().cambridge_half_life


def full_demand(total_shares, slots, unit=1.0):
    return math.log(1 / 0.9) * 100_000 * unit * total_shares / (86_400 * slots)


def test_cambridge_prices_a_job_as_hazel_does():
    shares = {"a": 10.0, "b": 10.0}
    order = build(Order.CAMBRIDGE, shares, list(shares), initial={"a": 2e9})
    job = JobSpec(jid(1), "a", 0.0, 3600.0)
    # Np for one slot wanted of 20, Re = 3600 core-seconds; U = 2e9, W = 0, k*S = 500.
    np_ = full_demand(20.0, 20) * 1 / 20
    price = (2e9 + 0 + 50 * 10) * np_ / (100_000 * 10 - np_ * 3600)
    assert price > 1  # above Hazel's default limit for a job of 3600 units (1275/3600, so 1)
    assert order.admit(job, 0.0, {}, {}) == 10_800.0  # the 3-hour second try
    assert job.id not in order.priced
    # b, with no usage, is priced 1 and accepted at once, its estimate added to W.
    other = JobSpec(jid(2), "b", 0.0, 3600.0)
    assert order.admit(other, 0.0, {}, {}) == 0.0
    assert order.priced[other.id] == (1.0, 3600.0)
    assert order.projects["b"].outstanding == 3600.0
    # When b's job ends after its hour, U gains R * P and W gives the estimate back; V = R / (20 S).
    order.ended(other, 0.0, 3600.0, vacated=False)
    b = order.projects["b"]
    assert b.outstanding == 0.0
    assert b.usage == pytest.approx(3600.0)
    assert b.value == pytest.approx(3600.0 / 200)


def test_cambridge_defers_an_overworked_project_until_its_usage_decays():
    shares = {"a": 10.0, "b": 10.0}
    u0 = 2e9
    slots = [SlotSpec(f"s{i}") for i in range(20)]
    jobs = [JobSpec(jid(1), "a", 0.0, 3600.0), JobSpec(jid(2), "b", 0.0, 3600.0)]
    settings = PoolSettings(order=Order.CAMBRIDGE, initial_usage={"a": u0})
    result = simulate(slots, jobs, settings, shares)
    start = {r.id: r.runs[0].start for r in result.jobs}
    assert start[jid(2)] == 0.0
    # a's job is priced again every 3 hours until U has decayed enough for P <= 1.
    np_ = full_demand(20.0, 20) / 20
    needed = CAMBRIDGE_HALF_LIFE * math.log2((u0 + 500) * np_ / (100_000 * 10 - np_ * 3600))
    accepted = math.ceil(needed / 10_800) * 10_800
    assert accepted > 10 * 86_400  # weeks of overuse take days to forget
    assert accepted <= start[jid(1)] <= accepted + 60  # then the next negotiation cycle starts it


def test_cambridge_sends_a_job_anyway_after_the_longest_turnround():
    order = build(Order.CAMBRIDGE, {"a": 1.0}, ["a"], initial={"a": 1e15})
    job = JobSpec(jid(1), "a", 0.0, 3600.0)
    late = 58 * 86_400.0 - 100
    assert order.admit(job, late, {}, {}) == late  # one more 3-hour wait would pass 58 days
    assert order.priced[job.id][0] == 255.0


def test_cambridge_with_a_price_limit_of_its_own():
    params = ModelParams(price_limit=255.0)
    order = build(Order.CAMBRIDGE, {"a": 10.0}, ["a"], params=params, initial={"a": 2e9})
    assert order.admit(JobSpec(jid(1), "a", 0.0, 3600.0), 0.0, {}, {}) == 0.0  # P of about 5


def test_the_models_tree_has_every_job_owner_as_a_leaf():
    tree = of_shares(TREE, "slots", ["physics.dave", "physics.(own)", "outsider"])
    assert tree.parents["physics.dave"] == "physics"
    assert tree.parents["physics.(own)"] == "physics"
    assert tree.parents["outsider"] == ""
    assert tree.shares["outsider"] == 0.0
    flat = of_shares(ShareTable({"a": {"slots": 3.0}}), "slots", ["b"])
    assert flat.shares == {"a": 3.0, "b": 0.0}


# -- whole scenarios --------------------------------------------------------------------------------

SCENARIOS = Path(__file__).parents[2] / "osep" / "data" / "scenarios"


def test_the_models_run_a_tree_scenario_and_keep_its_groups_apart():
    scenario = load_scenario(SCENARIOS / "tree.toml")
    outcomes = run_scenario(scenario, ("fairshare", "slurm", "share", "grid", "cambridge", "osep"))
    for name, out in outcomes.items():
        assert out.negotiator == name if name != "osep" else out.negotiator == "fairshare"
        assert out.result.vacates == (24 if name == "osep" else 0)
    # The hierarchical models give vo_a (idle p3's quarter) no more than OSEP's enforcement does.
    pv = {n: next(o.violation for o in out.groups.owners if o.owner == "vo_a") for n, out in outcomes.items()}
    assert all(pv["osep"] < pv[n] for n in ("fairshare", "slurm", "share", "grid", "cambridge"))


def test_the_hybrid_enforces_over_the_excess_model():
    scenario = replace(load_scenario(SCENARIOS / "tree.toml"), excess=Order.GRID)
    out = run_policy(scenario, "osep")
    assert out.negotiator == "grid"
    assert outcome_column(out, totals(scenario))["settings"]["excess"] == "grid"
    assert out.result.vacates > 0
    feasible = replace(scenario.policy, target=Target.FEASIBLE)
    with pytest.raises(OsepError, match='excess = "grid" needs owner targets'):
        run_policy(scenario, "osep", policy=feasible)
    # A non-enforcing variant keeps its own negotiator whatever the excess says.
    assert run_policy(scenario, "slurm").negotiator == "slurm"

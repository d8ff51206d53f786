"""The figures the metrics endpoint serves, from cycle reports to what a scraper reads: pure, no
server (tests/enforce/test_exporter.py serves them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from builders import metric_samples, snap
from osep.act.actuator import ActionResult
from osep.act.cycle import CycleReport
from osep.act.records import Outcome
from osep.core.model import Snapshot
from osep.core.policy import PolicySettings, decide
from osep.core.resources import Unit
from osep.core.shares import ShareTable
from osep.enforce.figures import (
    ASIDE,
    BUCKETS,
    FAILED,
    HELD_ABOVE,
    HELD_LOSING,
    OK,
    Figures,
    Histogram,
    after_cycle,
    configured,
    families,
)

POLICY = PolicySettings(ShareTable({"a": 2, "b": 2}))
OVER = snap(now=1000.0, running={"a": [0, 1, 2, 3]}, idle={"b": 2})  # a runs 4 of 4, b waits for 2
OVER_AND_WAITING = snap(now=1000.0, running={"a": [0, 1, 2, 3]}, idle={"a": 1, "b": 2})
FREE = snap(now=1000.0, running={"a": [0, 1]}, idle={"b": 2}, free=2)  # room for b: claims
D, X, F, C, R = Outcome.DONE, Outcome.DRY_RUN, Outcome.FAILED, Outcome.CHANGED, Outcome.RATE_LIMITED
RULE = decide(OVER, POLICY).vacates[0].reason.rule


def cycle(snapshot: Snapshot = OVER, outcomes: Sequence[Outcome] = (), held: Mapping[str, int] | None = None,
          steps: Mapping[str, int] | None = None, seconds: Mapping[str, float] | None = None,
          policy: PolicySettings = POLICY) -> CycleReport:
    """The report of one decision on ``snapshot``: its vacates and then its claims with ``outcomes``
    in that order (done where none is given), and its holds set (the plan's unless given)."""
    plan = decide(snapshot, policy)
    actions = [*plan.vacates, *plan.claims]
    outs = [*outcomes, *[D] * (len(actions) - len(outcomes))]
    results = tuple(ActionResult(a, o) for a, o in zip(actions, outs, strict=True))
    return CycleReport(1, plan, results, seconds or {}, plan.holds if held is None else held, steps or {})


def run(steps: Sequence[CycleReport | tuple[CycleReport, bool] | None]) -> Figures:
    """The figures after cycles: a report (a cycle that read the pool), None (one that failed) or
    (report, stood aside)."""
    figures = Figures("9.9")
    for number, step in enumerate(steps):
        report, aside = step if isinstance(step, tuple) else (step, False)
        figures = after_cycle(figures, report, aside, now=2000.0 + number)
    return figures


def scrape(figures: Figures, faults: int = 0) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    class One:
        def collect(self):
            return families(figures, faults)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(One())
    return metric_samples(generate_latest(registry).decode())


@pytest.mark.parametrize("steps, cycles, vacates, holds, failed", [
    pytest.param([cycle()], {OK: 1}, {RULE: 2}, {HELD_LOSING: 1}, {}, id="two vacates sent"),
    pytest.param([cycle(outcomes=[F, C])], {OK: 1}, {}, {HELD_LOSING: 1},
                 {("vacate", "failed"): 1, ("vacate", "skipped-changed"): 1}, id="refused and changed"),
    pytest.param([cycle(outcomes=[D, R])], {OK: 1}, {RULE: 1}, {HELD_LOSING: 1},
                 {("vacate", "skipped-rate-limit"): 1}, id="rate limited"),
    pytest.param([cycle(outcomes=[X, X], held={})], {OK: 1}, {}, {}, {}, id="a dry run fails nothing"),
    pytest.param([cycle(outcomes=[F, F], held={}, steps={"hold": 1, "reserve": 2})], {OK: 1}, {}, {},
                 {("vacate", "failed"): 2, ("hold", "failed"): 1, ("reserve", "failed"): 2},
                 id="holds and rooms that failed"),
    pytest.param([cycle(FREE, outcomes=[F])], {OK: 1}, {}, {},
                 {("claim", "failed"): 1}, id="a claim that failed"),
    pytest.param([cycle(), cycle()], {OK: 2}, {RULE: 4}, {HELD_LOSING: 1}, {}, id="held on: one hold"),
    pytest.param([cycle(), cycle(held={}), cycle()], {OK: 3}, {RULE: 6}, {HELD_LOSING: 2}, {},
                 id="held, lifted, held again: two"),
    pytest.param([cycle(), None, cycle()], {OK: 2, FAILED: 1}, {RULE: 4}, {HELD_LOSING: 1}, {},
                 id="a failed cycle changes no hold"),
    pytest.param([cycle(OVER_AND_WAITING)], {OK: 1}, {RULE: 2}, {HELD_ABOVE: 1}, {},
                 id="held at its target with idle jobs"),
    pytest.param([(cycle(outcomes=[X, X], held={}), True)], {ASIDE: 1}, {}, {}, {}, id="stood aside"),
])
def test_counters_after_cycles(steps, cycles, vacates, holds, failed):
    figures = run(steps)
    assert figures.cycles == {**dict.fromkeys((OK, FAILED, ASIDE), 0), **cycles}
    assert figures.vacates == vacates
    assert figures.holds == {HELD_ABOVE: 0, HELD_LOSING: 0, **holds}
    assert figures.failed == failed
    samples = scrape(figures)
    assert samples.get("osep_vacates_total", {}) == {(("reason", k),): v for k, v in vacates.items()}
    assert samples.get("osep_failed_actions_total", {}) == {
        (("kind", kind), ("reason", reason)): v for (kind, reason), v in failed.items()}
    assert sum(samples["osep_cycles_total"].values()) == len(steps)


def test_per_owner_figures_are_the_last_plan_s_and_owners_who_left_are_gone():
    first = cycle(snapshot=snap(now=1000.0, running={"a": [0, 1], "b": [2]}, idle={"a": 3, "c": 1}, free=1),
                  policy=PolicySettings(ShareTable({"a": 2, "b": 1, "c": 1})))
    figures = run([first])
    samples = scrape(figures)
    for view in first.plan.owners:
        who = (("owner", view.owner), ("unit", "slots"))
        assert samples["osep_owner_share"][who] == view.share
        assert samples["osep_owner_feasible"][who] == view.feasible
        assert samples["osep_owner_target"][who] == view.target
        assert samples["osep_owner_running"][who] == view.holding
        assert samples["osep_owner_kept"][who] == view.active - view.holding
        assert samples["osep_owner_gap"][who] == view.gap
        assert samples["osep_owner_running_jobs"][(("owner", view.owner),)] == view.running
        assert samples["osep_owner_idle_jobs"][(("owner", view.owner),)] == view.idle
        assert samples["osep_owner_held"][(("owner", view.owner),)] == float(view.owner in first.plan.holds)
    assert {dict(k)["owner"] for k in samples["osep_owner_share"]} == {"a", "b", "c"}
    assert samples["osep_capacity"] == {(("unit", "slots"),): 4.0} and samples["osep_slots"] == {(): 4.0}
    # b's jobs ended and b left the policy: b is no longer exported, by any figure.
    later = after_cycle(figures, cycle(snapshot=snap(now=1060.0, running={"a": [0, 1]}, idle={"c": 1}, free=2),
                                       policy=PolicySettings(ShareTable({"a": 2, "c": 1}))), False, 3000.0)
    samples = scrape(later)
    for name, series in samples.items():
        if name.startswith("osep_owner_"):
            assert {dict(k)["owner"] for k in series} == {"a", "c"}, name


def test_a_failed_cycle_leaves_no_owner_figure_and_keeps_the_rest():
    figures = run([cycle(seconds={"query": 0.2, "decide": 0.01, "cycle": 0.3}), None])
    samples = scrape(figures)
    assert not any(name.startswith("osep_owner_") for name in samples)
    assert "osep_capacity" not in samples and "osep_slots" not in samples
    assert samples["osep_last_cycle_ok"] == {(): 0.0}
    assert samples["osep_last_cycle_timestamp_seconds"] == {(): 2000.0}  # the last cycle that read the pool
    assert samples["osep_vacates_total"] == {(("reason", RULE),): 2.0}
    assert samples["osep_cycle_seconds_count"] == {(): 1.0}  # a failed cycle is not timed
    assert figures.held == {"a": 0}  # its ceilings stay as the cycle before set them


def test_the_unit_is_a_label_and_dominant_has_no_capacity():
    cpus = cycle(policy=PolicySettings(ShareTable({"a": 2, "b": 2}), unit=Unit.CPUS))
    samples = scrape(run([cpus]))
    assert samples["osep_capacity"] == {(("unit", "cpus"),): 4.0}
    assert (("owner", "a"), ("unit", "cpus")) in samples["osep_owner_share"]
    dominant = cycle(policy=PolicySettings(ShareTable({"a": 2, "b": 2}), unit=Unit.DOMINANT))
    samples = scrape(run([dominant]))
    assert "osep_capacity" not in samples
    assert (("owner", "a"), ("unit", "dominant")) in samples["osep_owner_gap"]


def test_before_the_first_cycle_only_what_is_known_is_served():
    samples = scrape(configured(Figures("1.2.3"), dry_run=True, interval=300.0), faults=2)
    assert samples["osep_info"] == {(("version", "1.2.3"),): 1.0}
    assert samples["osep_dry_run"] == {(): 1.0} and samples["osep_interval_seconds"] == {(): 300.0}
    assert samples["osep_metrics_faults_total"] == {(): 2.0}
    assert samples["osep_cycles_total"] == {(("result", r),): 0.0 for r in (OK, FAILED, ASIDE)}
    assert "osep_last_cycle_timestamp_seconds" not in samples and "osep_last_cycle_ok" not in samples


def test_cycle_time_by_phase():
    figures = run([cycle(seconds={"query": 2.131, "translate": 0.003, "decide": 0.0004, "act": 0.023,
                                  "other": 0.001, "cycle": 2.158}),
                   cycle(seconds={"query": 0.5, "decide": 0.0002, "act": 0.5, "state": 0.01, "other": 0.0,
                                  "cycle": 1.0102})])
    samples = scrape(figures)
    assert samples["osep_cycle_seconds_count"] == {(): 2.0}
    assert samples["osep_cycle_seconds_sum"][()] == pytest.approx(3.1682)
    counts = samples["osep_cycle_phase_seconds_count"]
    assert counts == {(("phase", p),): n for p, n in
                      {"query": 2, "translate": 1, "decide": 2, "act": 2, "state": 1, "other": 2}.items()}
    assert samples["osep_cycle_phase_seconds_sum"][(("phase", "query"),)] == pytest.approx(2.631)
    assert samples["osep_cycle_phase_seconds_bucket"][(("le", "0.5"), ("phase", "query"))] == 1.0
    assert samples["osep_cycle_phase_seconds_bucket"][(("le", "2.5"), ("phase", "query"))] == 2.0


@pytest.mark.parametrize("seconds, bucket", [
    (0.0, "0.001"), (0.001, "0.001"), (0.0011, "0.005"), (2.5, "2.5"), (300.0, "300.0"), (300.1, "+Inf"),
])
def test_a_duration_goes_in_the_first_bucket_whose_bound_it_does_not_pass(seconds, bucket):
    cumulative = dict(Histogram().observe(seconds).buckets())
    bounds = [*map(str, BUCKETS), "+Inf"]
    assert [cumulative[b] for b in bounds] == [float(bounds.index(b) >= bounds.index(bucket)) for b in bounds]


STEPS = st.sampled_from([
    cycle(), cycle(outcomes=[F, C]), cycle(held={}), cycle(OVER_AND_WAITING), cycle(FREE, outcomes=[F]),
    cycle(outcomes=[X, X], held={}, steps={"hold": 1}), cycle(seconds={"decide": 0.002, "cycle": 40.0}),
    None, (cycle(outcomes=[X, X], held={}), True),
])


@settings(max_examples=60, deadline=None)
@given(st.lists(STEPS, max_size=12))
def test_counters_never_go_down_and_histograms_add_up(steps):
    figures = Figures("9.9")
    for number, step in enumerate(steps):
        report, aside = step if isinstance(step, tuple) else (step, False)
        after = after_cycle(figures, report, aside, now=float(number))
        for name in ("cycles", "vacates", "holds", "failed"):
            before, now = getattr(figures, name), getattr(after, name)
            assert all(now.get(k, 0) >= v for k, v in before.items()), name
        figures = after
    assert sum(figures.cycles.values()) == len(steps)
    samples = scrape(figures)
    for name in ("osep_cycle_seconds", "osep_cycle_phase_seconds"):
        buckets = samples.get(f"{name}_bucket", {})
        for labels, count in samples.get(f"{name}_count", {}).items():
            series = [v for k, v in sorted(buckets.items(), key=lambda kv: _bound(kv[0]))
                      if dict(k).get("phase") == dict(labels).get("phase")]
            assert series == sorted(series) and series[-1] == count


def _bound(labels: tuple[tuple[str, str], ...]) -> float:
    return float(dict(labels)["le"])

"""The paper's qualitative findings, reproduced on the bundled scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from osep.config.scenario import load_scenario
from osep.experiment.runs import run_policy, run_scenario, with_overrides

SCENARIOS = Path(__file__).parents[2] / "osep" / "data" / "scenarios"


@pytest.fixture(scope="module")
def job_size():
    return run_scenario(load_scenario(SCENARIOS / "paper-job-size.toml"))


@pytest.fixture(scope="module")
def general():
    return run_scenario(load_scenario(SCENARIOS / "paper-general.toml"))


def us(outcome) -> dict[str, float]:
    return {o.owner: o.satisfaction for o in outcome.metrics.owners}


def test_osep_satisfaction_follows_share(general):
    sat = us(general["osep"])
    # Shares: owner2 40% > owner1 30% > owner3 = owner4 15%.
    assert sat["owner2"] > sat["owner1"] > max(sat["owner3"], sat["owner4"])
    sat = us(general["osep-ckpt"])
    assert sat["owner2"] > sat["owner1"] > max(sat["owner3"], sat["owner4"])


def test_fairshare_favours_whoever_submitted_first(general, job_size):
    sat = us(general["fairshare"])
    assert sat["owner1"] == max(sat.values())
    assert sat["owner1"] > sat["owner2"]  # although owner2 has the larger share
    small = us(job_size["fairshare"])
    assert small["owner1"] > 4 * small["owner2"]


def test_osep_serves_the_late_owner(job_size, general):
    assert us(job_size["osep"])["owner2"] > 3 * us(job_size["fairshare"])["owner2"]
    assert us(general["osep"])["owner2"] > us(general["fairshare"])["owner2"]
    for outcomes in (job_size, general):
        assert outcomes["osep"].metrics.violation < outcomes["fairshare"].metrics.violation / 4


def test_baselines_never_preempt(job_size, general):
    for outcomes in (job_size, general):
        for name in ("greedy", "fairshare"):
            m = outcomes[name].metrics
            assert (m.vacates, m.cost, m.capacity_loss) == (0, 0, 0)


@pytest.mark.parametrize("scenario", ["job_size", "general"])
def test_checkpointing_cuts_cost_and_does_not_raise_violation_or_loss(scenario, request):
    outcomes = request.getfixturevalue(scenario)
    plain, ckpt = outcomes["osep"].metrics, outcomes["osep-ckpt"].metrics
    assert plain.cost > 0 and ckpt.cost * 10 < plain.cost
    assert ckpt.violation <= plain.violation
    assert ckpt.capacity_loss <= plain.capacity_loss


@pytest.mark.parametrize("name", ["paper-job-size", "paper-general"])
def test_one_cycle_enforcement_is_cheapest(name):
    scenario = load_scenario(SCENARIOS / f"{name}.toml")
    one_cycle = run_policy(scenario, "osep").metrics
    small_p = run_policy(scenario, "osep", with_overrides(scenario.policy, max_vacates=1)).metrics
    assert one_cycle.cost < small_p.cost
    assert one_cycle.violation < small_p.violation


def test_every_job_finishes(job_size, general):
    for outcomes in (job_size, general):
        for outcome in outcomes.values():
            assert all(o.finished == o.jobs for o in outcome.metrics.owners)

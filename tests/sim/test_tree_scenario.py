"""The three-level tree scenario (osep/data/scenarios/tree.toml): subgroup isolation under OSEP."""

from __future__ import annotations

from pathlib import Path

from osep.config.scenario import load_scenario
from osep.experiment.runs import run_scenario

SCENARIO = Path(__file__).parents[2] / "osep" / "data" / "scenarios" / "tree.toml"


def test_an_idle_subgroups_share_goes_to_its_siblings_not_to_the_other_vo():
    outcomes = run_scenario(load_scenario(SCENARIO), records=True)
    osep = outcomes["osep"]
    # jobs are placed by the tree: carol's jobs count for her project, p2
    owners = {r.owner for r in osep.result.jobs}
    assert "vo_a.p2" in owners and "vo_a.p2.carol" not in owners
    # only vo_b, over its share when vo_a returns, loses jobs
    victims = {r.owner for r in osep.result.jobs if any(run.vacated for run in r.runs)}
    assert victims and all(v.startswith("vo_b.") for v in victims)
    # vo_a gets its whole 24 slots with p3 idle: p1 and p2 take p3's quarter between them
    assert osep.metrics.vacates == 24
    # OSEP cuts the violation of the feasible shares by far against both baselines
    assert osep.metrics.violation < outcomes["fairshare"].metrics.violation / 4
    assert osep.metrics.violation < outcomes["greedy"].metrics.violation / 4
    # with checkpointing, nothing is redone
    assert outcomes["osep-ckpt"].metrics.cost < osep.metrics.cost


def test_the_comparison_reports_each_top_level_group():
    from osep.ui import render

    scenario = load_scenario(SCENARIO)
    outcomes = run_scenario(scenario, ("fairshare", "osep"))
    from osep.experiment.runs import comparison

    doc = comparison(scenario, outcomes)
    groups = doc["policies"]["osep"]["groups"]
    assert set(groups) == {"vo_a", "vo_b"} and groups["vo_a"]["share"] == 24
    # a group-level PV is about the group's feasible share, not its members' added up
    assert groups["vo_a"]["PV"] < doc["policies"]["fairshare"]["groups"]["vo_a"]["PV"]
    text = render.as_table(doc)
    assert "A_US group vo_a (24 slots)" in text and "PV group vo_b (slot-s)" in text
    assert "osep,group vo_a,24" in render.as_csv(doc).replace(".0,", ",")


def test_an_lcg_trace_owner_is_its_user_in_its_vo():
    from osep.sim import swf

    line = "1 0 5 100 1 -1 -1 1 200 -1 1 7 3 -1 -1 2 -1 -1"
    work = swf.parse([line], "group.user")
    assert [j.owner for j in work.jobs] == ["group3.user7"]


def test_a_job_still_running_at_the_horizon_counts_as_running_until_then(tmp_path):
    # One owner, one slot, one job of a day cut at an hour: it ran all the time it was wanted, so
    # nothing was violated; before the fix its open run was lost and it counted as waiting.
    path = tmp_path / "cut.toml"
    path.write_text("""[scenario]
name = "cut"
policies = ["greedy", "osep"]
horizon = 3600
[pool]
negotiation_interval = 60
[[pool.slots]]
count = 1
[owners]
a = 1
[[submit]]
owner = "a"
time = 0
count = 1
runtime = 86400
""")
    scenario = load_scenario(path)
    for outcome in run_scenario(scenario, records=True).values():
        assert outcome.metrics.violation == 0
        record = outcome.result.jobs[0]
        assert record.finish is None and record.runs[-1].end == 3600

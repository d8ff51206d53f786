"""A simulation that stops at its horizon with jobs left says so: how many under each policy, where,
who set the horizon, and how to run longer (JSON, table and one line on stderr); one that ends with
its last job says nothing more."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from builders import cli_runner
from osep import bounds as B
from osep.config.scenario import load_scenario
from osep.sim.horizon import BOUND, Horizon, bound_reason, simulation_limit
from osep.ui.cli import cli

ROOT = Path(__file__).parents[2]

# One slot, cycles of 1 s: the simulator's bound is 1,000,000 cycles / (1/1 + 1/1) = 500,000 s. Each
# job alone ends by 300,000 s, so the file is accepted; one after the other they need 600,000.
QUEUED = """
[scenario]
policies = ["greedy", "fairshare"]
{horizon}
[pool]
slots = 1
negotiation_interval = 1
[policy]
interval = 1
[owners]
a = 1
[[submit]]
owner = "a"
count = 2
runtime = 300000
"""


@pytest.mark.parametrize("negotiation, interval, slots, jobs, owners, limit, binds", [
    (60, 300, 10, 100, 2, B.MAX_CYCLES / (1 / 60 + 1 / 300), "cycles"),
    (1, 1, 1, 2, 1, B.MAX_CYCLES / 2, "cycles"),
    # 10,000 slots: an enforcement cycle's work binds first.
    (1, 1, 10_000, 0, 2, B.MAX_WORK / (10_000 + 40 + 2), "work"),
    # Jobs weigh a twentieth of a slot, owners twenty slots (and one more per negotiation cycle).
    (1, 1, 0, 200_000, 0, B.MAX_WORK / 10_000, "work"),
    (4, 300, 1, 14_305, 64, B.MAX_WORK / ((1 + 14_305 / 20 + 20 * 64) / 300 + 64 / 4), "work"),
])
def test_the_simulators_bound(negotiation, interval, slots, jobs, owners, limit, binds):
    assert simulation_limit(negotiation, interval, slots, jobs, owners) == pytest.approx(limit)
    reason = bound_reason(negotiation, interval, slots, jobs, owners)
    assert reason.startswith(f"{B.MAX_CYCLES:,} cycles" if binds == "cycles" else f"{B.MAX_WORK:,} units of work")


@pytest.mark.parametrize("horizon, by, named, advice", [
    (None, BOUND, "the simulator's bound of 500,000 s (1,000,000 cycles at a negotiation cycle every 1 s "
     "and an enforcement cycle every 1 s)", "to run longer, give a longer pool.negotiation_interval or -t, "
     "or fewer jobs"),
    (1000, "scenario.horizon", "the horizon of 1,000 s (scenario.horizon)",
     "a scenario.horizon up to 500,000 s (the simulator's bound) runs longer"),
    (500000, "scenario.horizon", "the horizon of 500,000 s (scenario.horizon)",
     "to run longer, give a longer pool.negotiation_interval or -t, or fewer jobs"),
])
def test_where_a_scenario_stops_and_who_set_it(tmp_path, horizon, by, named, advice):
    path = tmp_path / "queued.toml"
    path.write_text(QUEUED.format(horizon=f"horizon = {horizon}" if horizon else ""))
    stop = load_scenario(path).horizon
    assert isinstance(stop, Horizon)
    assert (stop.seconds, stop.by, stop.bound) == (horizon or 500_000, by, 500_000)
    assert (stop.named(), stop.advice()) == (named, advice)


def simulate(*args: str):
    result = cli_runner().invoke(cli, ["simulate", *args])
    assert result.exit_code == 0, result.stderr
    return result


def test_a_queue_the_bound_cuts_short_is_a_warning_in_json_the_table_and_on_stderr(tmp_path):
    path = tmp_path / "queued.toml"
    path.write_text(QUEUED.format(horizon=""))
    result = simulate(str(path), "--format", "json")
    policies = json.loads(result.stdout)["policies"]
    for name in ("greedy", "fairshare"):
        assert policies[name]["unfinished"] == 1
        stop = policies[name]["stopped_short"]
        assert stop["by"] == "bound" and stop["horizon"] == 500_000 and 300_000 <= stop["at"] <= 500_000
        assert stop["why"].startswith("the simulator's bound of 500,000 s")
    assert result.stderr == (
        "osep: warning: the runs stopped at the simulator's bound of 500,000 s (1,000,000 cycles at a "
        "negotiation cycle every 1 s and an enforcement cycle every 1 s) with jobs unfinished (1 under greedy, "
        "1 under fairshare, of 2); their figures cover the first 500,000 s only; to run longer, give a "
        "longer pool.negotiation_interval or -t, or fewer jobs\n")
    table = simulate(str(path), "--policy", "greedy")
    assert table.stdout.splitlines()[-1] == (
        "greedy stopped at the simulator's bound of 500,000 s (1,000,000 cycles at a negotiation cycle every 1 s "
        "and an enforcement cycle every 1 s) with jobs left unfinished: its figures cover the first 500,000 s only")
    assert table.stderr.startswith("osep: warning: the run stopped at ") and table.stderr.count("\n") == 1


def test_a_horizon_given_is_a_note(tmp_path):
    path = tmp_path / "queued.toml"
    path.write_text(QUEUED.format(horizon="horizon = 1000"))
    result = simulate(str(path), "--policy", "greedy", "--format", "json")
    assert json.loads(result.stdout)["policies"]["greedy"]["stopped_short"]["by"] == "scenario.horizon"
    assert result.stderr == (
        "osep: note: the run stopped at the horizon of 1,000 s (scenario.horizon) with jobs unfinished (2 under "
        "greedy, of 2); its figures cover the first 1,000 s only; a scenario.horizon up to 500,000 s (the "
        "simulator's bound) runs longer\n")


def test_a_run_that_ends_says_nothing_more(tmp_path):
    path = tmp_path / "done.toml"
    path.write_text(QUEUED.format(horizon="").replace("count = 2", "count = 1"))
    for fmt in ("json", "table", "csv"):
        result = simulate(str(path), "--format", fmt)
        assert result.stderr == ""
        assert "stopped" not in result.stdout and "unfinished" not in result.stdout


def _readme_example() -> tuple[list[str], str, dict]:
    """The example of a run stopped at its horizon in the documentation (docs/simulate.md): its
    command with --format json, the stderr line it ends with and the stopped_short it shows.
    (tests/docs runs the example's table itself.)"""
    text = (ROOT / "docs" / "simulate.md").read_text()
    block = re.search(r"```console\n\$ (osep simulate --trace [^\n]* --horizon 100000 [^\n]*)\n.*?"
                      r"^(osep: note: [^\n]*)\n```", text, re.S | re.M)
    shown = re.search(r"```json\n(\{\"unfinished\".*?)\n```", text, re.S)
    assert block is not None and shown is not None, "the example of a run stopped at its horizon is gone"
    command, line = block.groups()
    return [*shlex.split(command)[1:], "--format", "json"], line, json.loads(shown.group(1))


def test_the_readme_example_stays_true():
    args, line, shown = _readme_example()
    result = cli_runner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1] == line
    policies = json.loads(result.stdout)["policies"]
    assert {"stopped_short": policies["osep"]["stopped_short"], "unfinished": policies["osep"]["unfinished"]} \
        == shown

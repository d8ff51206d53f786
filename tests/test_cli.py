"""The command line, through click's runner, as a user would call it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from osep.cli import cli

ROOT = Path(__file__).parent.parent
JOB_SIZE = str(ROOT / "config" / "scenarios" / "paper-job-size.toml")


@pytest.fixture
def runner():
    return CliRunner()


def test_simulate_table(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "paper-job-size: 10 slots, 20 jobs"
    assert lines[1].split() == ["none", "fairshare", "osep", "osep-ckpt"]
    rows = {line.split("  ")[0].strip(): line.split()[-4:] for line in lines[2:]}
    assert rows["PV (slot-s)"] == ["16500", "16500", "300", "300"]
    assert rows["vacates"] == ["0", "0", "5", "5"]
    assert "A_US owner2 (5 slots)" in rows


def test_simulate_json_shape(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep",
                                 "--policy", "fairshare"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc["policies"]) == ["osep", "fairshare"]
    osep = doc["policies"]["osep"]
    assert {"PV", "LC", "PC", "owners"} <= set(osep)
    assert osep["owners"]["owner1"]["share"] == 5.0
    assert 0 < osep["owners"]["owner2"]["A_US"] <= 100
    assert osep["settings"]["max_vacates"] == 5
    assert doc["policies"]["fairshare"]["settings"] is None


def test_simulate_csv(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "csv", "--policy", "osep"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == "policy,owner,share,PV,LC,PC,vacates,lost_work,saved_work,A_US"
    assert lines[1].startswith("osep,(all),,300.0,250.0,1550.0,5,")
    assert len(lines) == 4


def test_simulate_overrides_change_the_run(runner):
    base = json.loads(runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep"]).output)
    small = json.loads(runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep",
                                           "-p", "1"]).output)
    assert small["policies"]["osep"]["settings"]["max_vacates"] == 1
    assert small["policies"]["osep"]["PC"] > base["policies"]["osep"]["PC"]
    feasible = json.loads(runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep",
                                              "--target", "feasible", "--victim-order", "lost-work",
                                              "-t", "120"]).output)
    assert feasible["policies"]["osep"]["settings"] == {
        "target": "feasible", "victim_order": "lost-work", "max_vacates": 5, "interval": 120.0}


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_simulate_plot(runner, tmp_path, suffix, magic):
    out = tmp_path / f"plot{suffix}"
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(magic)
    assert out.stat().st_size > 10_000


def test_plot_needs_a_known_format(runner, tmp_path):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--plot", str(tmp_path / "x.gif")])
    assert result.exit_code == 2 and ".png or .svg" in result.output


def test_policy_name_typo(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--policy", "osepp"])
    assert result.exit_code == 2
    assert "'osepp' is not one of" in result.output


def test_bad_scenario_exits_2_naming_file_and_key(runner, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(Path(JOB_SIZE).read_text().replace('owner2 = "50%"', 'owner2 = -5'))
    result = runner.invoke(cli, ["simulate", str(bad)])
    assert result.exit_code == 2
    assert result.output.startswith(f"osep: error: {bad}: owners.owner2: ")
    assert "negative" in result.output
    assert "Traceback" not in result.output and "PV" not in result.output  # nothing ran


def test_missing_scenario(runner, tmp_path):
    result = runner.invoke(cli, ["simulate", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "no such file" in result.output


def test_validate(runner, tmp_path):
    ok = runner.invoke(cli, ["validate", str(ROOT / "config" / "policy.toml"), JOB_SIZE])
    assert ok.exit_code == 0, ok.output
    assert "policy: 3 owners, 80 slots in all" in ok.output
    assert "scenario 'paper-job-size': 10 slots, 20 jobs" in ok.output
    bad = tmp_path / "p.toml"
    bad.write_text('[policy]\ntarget = "fair"\n[owners]\na = 1\n')
    result = runner.invoke(cli, ["validate", str(bad)])
    assert result.exit_code == 2 and "policy.target" in result.output


def test_json_log_file_has_one_event_per_decision(runner, tmp_path):
    log = tmp_path / "osep.log"
    result = runner.invoke(cli, ["--log-level", "info", "--log-file", str(log),
                                 "simulate", JOB_SIZE, "--policy", "osep"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in log.read_text().splitlines()]
    decisions = [e for e in events if e["event"] == "decision" and e["kind"] == "vacate"]
    assert len(decisions) == 5
    assert {e["owner"] for e in decisions} == {"owner1"}
    assert all(e["policy"] == "osep" and e["cycle"] >= 1 and "job" in e for e in decisions)
    assert sum(1 for e in events if e["event"] == "cycle") > 10

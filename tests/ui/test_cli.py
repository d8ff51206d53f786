"""The command line, through click's runner, as a user would call it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from builders import cli_runner
from osep.ui.cli import cli

ROOT = Path(__file__).parents[2]
JOB_SIZE = str(ROOT / "osep" / "data" / "scenarios" / "paper-job-size.toml")


@pytest.fixture
def runner():
    return cli_runner()


def test_simulate_table(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "paper-job-size: 10 slots, 20 jobs"
    assert lines[1].split() == ["greedy", "fairshare", "osep", "osep-ckpt"]
    rows = {line.split("  ")[0].strip(): line.split()[-4:] for line in lines[2:]}
    assert rows["PV (slot-s)"] == ["16500", "16500", "300", "300"]
    assert rows["vacates"] == ["0", "0", "5", "5"]
    assert "A_US owner2 (5 slots)" in rows


def test_the_table_says_when_the_slots_are_cores_of_partitionable_machines(runner):
    result = runner.invoke(cli, ["simulate", str(ROOT / "osep" / "data" / "scenarios" / "machines.toml")])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "machines: 20 cores in 4 partitionable machines, 22 jobs"
    doc = json.loads(runner.invoke(cli, ["simulate", str(ROOT / "osep" / "data" / "scenarios" / "machines.toml"),
                                         "--format", "json"]).stdout)
    assert (doc["scenario"]["slots"], doc["scenario"]["machines"], doc["scenario"]["machine_cores"]) == (20, 4, 20)


def test_simulate_json_shape(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep",
                                 "--policy", "fairshare"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
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
    lines = result.stdout.splitlines()
    assert lines[0] == "policy,owner,share,PV,LC,PC,vacates,lost_work,saved_work,A_US"
    assert lines[1].startswith("osep,(all),,300.0,250.0,1550.0,5,")
    assert len(lines) == 4


def test_simulate_overrides_change_the_run(runner):
    base = json.loads(runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep"]).stdout)
    small = json.loads(runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep",
                                           "-p", "1"]).stdout)
    assert small["policies"]["osep"]["settings"]["max_vacates"] == 1
    assert small["policies"]["osep"]["PC"] > base["policies"]["osep"]["PC"]
    feasible = json.loads(runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep",
                                              "--target", "feasible", "--victim-order", "lost-work",
                                              "-t", "120"]).stdout)
    assert feasible["policies"]["osep"]["settings"] == {
        "target": "feasible", "victim_order": "lost-work", "max_vacates": 5, "interval": 120.0,
        "min_run_time": 0.0, "unit": "slots", "excess": "fairshare"}


def test_simulate_min_run_time_puts_off_or_stops_the_vacates(runner):
    """paper-job-size's first enforcement cycle is at 300 s, when owner1's jobs have run 300 s; they
    end at 3600 s."""
    def osep(*given):
        result = runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json", "--policy", "osep", *given])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["policies"]["osep"]

    base, later, never = osep(), osep("--min-run-time", "400"), osep("--min-run-time", "3700")
    assert base["settings"]["min_run_time"] == 0 and base["vacates"] == 5
    assert later["settings"]["min_run_time"] == 400 and later["vacates"] == 5
    # owner2 waits two cycles longer, 5 slots each (the figures docs/policy.md gives).
    assert (base["owners"]["owner2"]["PV"], later["owners"]["owner2"]["PV"]) == (300, 900)
    assert never["settings"]["min_run_time"] == 3700 and never["vacates"] == 0
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--min-run-time", "-1"])
    assert result.exit_code == 2 and "--min-run-time" in result.stderr


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_simulate_plot(runner, tmp_path, suffix, magic):
    out = tmp_path / f"plot{suffix}"
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--plot", str(out)])
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes().startswith(magic)
    assert out.stat().st_size > 10_000


def test_plot_needs_a_known_format(runner, tmp_path):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--plot", str(tmp_path / "x.gif")])
    assert result.exit_code == 2 and ".png or .svg" in result.stderr


def test_a_plot_that_could_not_be_written_is_refused_before_the_run(runner, tmp_path):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--plot", str(tmp_path / "no" / "such" / "x.png")])
    assert result.exit_code == 2 and "no directory" in result.stderr and "such" in result.stderr
    assert "PV" not in result.stdout  # no results printed before the error


def test_a_plot_without_matplotlib_is_refused_before_the_run(runner, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--plot", str(tmp_path / "x.png")])
    assert result.exit_code == 2 and "matplotlib" in result.stderr and "python3-matplotlib" in result.stderr
    assert "PV" not in result.stdout and not (tmp_path / "x.png").exists()


# Every number a command takes is bounded, and nan is refused as well as what is out of bounds (click
# lets nan through a float range); a user's typo never runs for ever or prints a 300-digit figure.
_NUMBERS = [
    (["simulate", JOB_SIZE], "-t"),
    (["simulate", "--trace", str(ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz")], "--negotiation-interval"),
    (["simulate", "--trace", str(ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz")], "--compress"),
    (["simulate", "--trace", str(ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz")], "--least"),
    (["simulate", "--trace", str(ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz")], "--horizon"),
    (["simulate", "--trace", str(ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz")], "--from-second"),
    (["replay", "x.log", "--policy-file", "p.toml"], "--negotiation-interval"),
    (["replay", "x.log", "--policy-file", "p.toml"], "--vacate-delay"),
    (["replay", "x.log", "--policy-file", "p.toml"], "-t"),
    (["run", "--once"], "--min-run-time"),
    (["simulate", JOB_SIZE], "--min-run-time"),
    (["replay", "x.log", "--policy-file", "p.toml"], "--min-run-time"),
    (["run", "--once"], "-t"),
    (["shares", "p.toml"], "--dampening"),
]


@pytest.mark.parametrize("option, value", [("--slots", "1000001"), ("-p", "1000001")])
def test_replay_counts_are_bounded(runner, option, value):
    result = runner.invoke(cli, ["replay", *SHARE_BACK, option, value])
    assert result.exit_code == 2 and result.stderr.startswith("osep: error: replay: ")
    assert f"{option}" in result.stderr and "is not in the range" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300"])
@pytest.mark.parametrize("command, option", _NUMBERS)
def test_numbers_out_of_bounds_or_not_numbers_are_refused(runner, command, option, value):
    result = runner.invoke(cli, [*command, f"{option}={value}" if option.startswith("--") else option, *(
        [] if option.startswith("--") else [value])])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"osep: error: {command[0]}: "), result.stderr
    assert option in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr


def test_policy_name_typo(runner):
    result = runner.invoke(cli, ["simulate", JOB_SIZE, "--policy", "osepp"])
    assert result.exit_code == 2
    assert result.stderr == ("osep: error: simulate: --policy: 'osepp' is not one of 'greedy', 'fairshare', 'osep', "
                             "'osep-ckpt', 'slurm', 'share', 'grid', 'cambridge' (see 'osep simulate --help')\n")


def test_bad_scenario_exits_2_naming_file_and_key(runner, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(Path(JOB_SIZE).read_text().replace('owner2 = "50%"', 'owner2 = -5'))
    result = runner.invoke(cli, ["simulate", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"osep: error: {bad}: owners.owner2: ")
    assert "negative" in result.stderr
    assert "Traceback" not in result.stderr and not result.stdout  # nothing ran


def test_missing_scenario(runner, tmp_path):
    result = runner.invoke(cli, ["simulate", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_validate(runner, tmp_path):
    ok = runner.invoke(cli, ["validate", str(ROOT / "osep" / "data" / "policy.toml"), JOB_SIZE])
    assert ok.exit_code == 0, ok.stderr
    assert "policy: 3 owners, 80 slots in all" in ok.stdout
    assert "scenario 'paper-job-size': 10 slots, 20 jobs" in ok.stdout
    bad = tmp_path / "p.toml"
    bad.write_text('[policy]\ntarget = "fair"\n[owners]\na = 1\n')
    result = runner.invoke(cli, ["validate", str(bad)])
    assert result.exit_code == 2 and "policy.target" in result.stderr


def test_json_log_file_has_one_event_per_decision(runner, tmp_path):
    log = tmp_path / "osep.log"
    result = runner.invoke(cli, ["--log-level", "info", "--log-file", str(log),
                                 "simulate", JOB_SIZE, "--policy", "osep"])
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()]
    decisions = [e for e in events if e["event"] == "decision" and e["kind"] == "vacate"]
    assert len(decisions) == 5
    assert {e["owner"] for e in decisions} == {"owner1"}
    assert all(e["policy"] == "osep" and e["cycle"] >= 1 and "job" in e for e in decisions)
    assert sum(1 for e in events if e["event"] == "cycle") > 10


# -- replay --------------------------------------------------------------------------------------

DATA = ROOT / "tests" / "data"
SHARE_BACK = [str(DATA / "share-back.events.log"), "--policy-file", str(DATA / "share-back.policy.toml"),
              "--decisions", str(DATA / "share-back.decisions.jsonl")]


def test_replay_table_has_the_simulate_layout(runner):
    result = runner.invoke(cli, ["replay", *SHARE_BACK, "--what-if", "osep", "-t", "2",
                                 "--negotiation-interval", "2"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("share-back.events.log: 4 slots, 6 jobs, 2026-11-22 07:19:48 to")
    assert lines[1].split() == ["recorded", "osep"]
    rows = {re.split(r"\s{2,}", line.strip())[0]: line.split()[-2:] for line in lines[2:]}
    assert rows["PV (slot-s)"][0] == "52"
    assert rows["asked for by osep"] == ["2", "-"]
    assert rows["A_US bob (2 slots)"][0] == "80.00%"


def test_replay_min_run_time_is_the_policy_files_unless_given(runner, tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text((DATA / "share-back.policy.toml").read_text().replace("[policy]\n",
                                                                             "[policy]\nmin_run_time = 50\n"))

    def settings(policy_file, *given):
        result = runner.invoke(cli, ["replay", str(DATA / "share-back.events.log"), "--policy-file", str(policy_file),
                                     "--slots", "4", "--format", "json", "--what-if", "osep", "-t", "2",
                                     "--negotiation-interval", "2", *given])
        assert result.exit_code == 0, result.stderr
        column = json.loads(result.stdout)["policies"]["osep"]
        return column["settings"]["min_run_time"], column["vacates"]

    # The what-if pool vacates two of alice's jobs, younger than 50 s, unless they may not be.
    assert settings(DATA / "share-back.policy.toml") == (0, 2)
    assert settings(policy) == (50, 0)
    assert settings(policy, "--min-run-time", "5") == (5, 2)


def test_validate_names_the_excess_model(runner, tmp_path):
    policy = tmp_path / "hybrid.toml"
    policy.write_text('[policy]\nexcess = "share"\n[owners]\na = 1\n')
    result = runner.invoke(cli, ["validate", str(policy)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.rstrip().endswith("victims by wallclock, p the largest share, t 300 s, min run time 0 s, "
                                           "excess ordered by share (simulations)")


def test_validate_names_the_settings_a_tuned_policy_file_holds(runner, tmp_path):
    policy = tmp_path / "tuned.toml"
    policy.write_text('[policy]\nmax_vacates = 4\ninterval = 120\nmin_run_time = 600\n[owners]\na = 1\n')
    result = runner.invoke(cli, ["validate", str(policy)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.rstrip().endswith("victims by wallclock, p 4, t 120 s, min run time 600 s")


def test_replay_what_if_runs_the_seeds_models(runner):
    result = runner.invoke(cli, ["replay", *SHARE_BACK, "--format", "json", "--what-if", "slurm",
                                 "--what-if", "share", "--what-if", "grid", "--what-if", "cambridge",
                                 "--what-if", "fairshare"])
    assert result.exit_code == 0, result.stderr
    columns = json.loads(result.stdout)["policies"]
    assert list(columns) == ["recorded", "slurm", "share", "grid", "cambridge", "fairshare"]
    # On flat shares Slurm's classic factor orders as the Fair-Share baseline does.
    assert columns["slurm"]["PV"] == columns["fairshare"]["PV"]
    assert all(columns[n]["vacates"] == 0 for n in ("slurm", "share", "grid", "cambridge"))


GROUPED_TREE = """
[owners.group_a]
share = 2
[owners.group_a.alice]
share = "100%"
[owners.group_b]
share = 2
[owners.group_b.bob]
share = "50%"
[owners.group_b.carol]
share = "50%"
"""


def test_replay_places_recorded_jobs_in_an_owner_tree(runner, tmp_path):
    """The share-back log with each job's AccountingGroup logged, under a tree where bob shares
    group_b with carol, who submits nothing: isolation gives carol's half to bob alone, so alice and
    bob are measured against 2 slots each, exactly as under the flat policy of the log (PV 52, worked
    out by hand in tests/replay/test_replay_data.py). A flat policy of the same leaves (alice 2,
    bob 1, carol 1) splits carol's slot between alice and bob instead."""
    text = (DATA / "share-back.events.log").read_text()
    for user, group in (("alice", "group_a"), ("bob", "group_b")):
        text = text.replace(f'Owner = "{user}"\n', f'Owner = "{user}"\nAccountingGroup = "{group}.{user}"\n')
    log = tmp_path / "grouped.log"
    log.write_text(text)
    tree = tmp_path / "tree.toml"
    tree.write_text(GROUPED_TREE)
    flat = tmp_path / "flat.toml"
    flat.write_text('[owners]\n"group_a.alice" = 2\n"group_b.bob" = 1\n"group_b.carol" = 1\n')
    args = ["replay", str(log), "--decisions", str(DATA / "share-back.decisions.jsonl"), "--format", "json"]

    def recorded(policy):
        result = runner.invoke(cli, [*args, "--policy-file", str(policy)])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["policies"]["recorded"]

    grouped = recorded(tree)
    assert grouped["PV"] == 52
    owners = grouped["owners"]
    assert set(owners) == {"group_a.alice", "group_b.bob", "group_b.carol"}
    groups = grouped["groups"]
    assert set(groups) == {"group_a", "group_b"}
    assert (owners["group_a.alice"]["PV"], owners["group_b.bob"]["PV"]) == (42, 10)  # as alice, bob
    assert groups["group_a"]["PV"] == owners["group_a.alice"]["PV"]
    assert groups["group_b"]["PV"] == owners["group_b.bob"]["PV"]
    assert recorded(flat)["PV"] == 61  # the flat leaves give alice 2.5 and bob 1.5
    # A what-if run places the recorded jobs in the same tree.
    result = runner.invoke(cli, [*args, "--policy-file", str(tree), "--what-if", "osep", "--what-if", "grid",
                                 "-t", "2", "--negotiation-interval", "2"])
    assert result.exit_code == 0, result.stderr
    what_if = json.loads(result.stdout)["policies"]
    assert set(what_if["osep"]["groups"]) == {"group_a", "group_b"}
    assert what_if["grid"]["vacates"] == 0


def test_replay_json_and_csv(runner):
    result = runner.invoke(cli, ["replay", *SHARE_BACK, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    recorded = doc["policies"]["recorded"]
    assert (recorded["PV"], recorded["LC"], recorded["PC"], recorded["lost_work"]) == (52, 6, 24, 24)
    assert doc["scenario"]["events"] == 22 and doc["scenario"]["slots"] == 4
    result = runner.invoke(cli, ["replay", *SHARE_BACK, "--format", "csv"])
    assert result.stdout.splitlines()[1].startswith("recorded,(all),,52.0,6.0,24.0,2,24.0,0.0")


def test_replay_owner_for_a_user_log(runner, tmp_path):
    """A user's own log does not name its owner: OWNER=LOG does."""
    log = tmp_path / "jobs.log"
    log.write_text(
        "000 (001.000.000) 2026-11-22 07:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"
        "001 (001.000.000) 2026-11-22 07:00:10 Job executing on host: <127.0.0.1:9618>\n...\n"
        "005 (001.000.000) 2026-11-22 07:00:50 Job terminated.\n"
        "\t(1) Normal termination (return value 0)\n"
        + "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n" * 4
        + "\t0  -  Run Bytes Sent By Job\n" * 4 + "...\n"
    )
    policy = tmp_path / "p.toml"
    policy.write_text("[owners]\nalice = 1\n")
    result = runner.invoke(cli, ["replay", f"alice={log}", "--policy-file", str(policy), "--slots", "1",
                                 "--format", "json"])
    assert result.exit_code == 0, result.stderr
    alice = json.loads(result.stdout)["policies"]["recorded"]["owners"]["alice"]
    assert alice["A_US"] == 80.0 and alice["PV"] == 10.0


def test_replay_warns_about_damage_on_stderr_and_goes_on(runner, tmp_path):
    log = tmp_path / "cut.log"
    text = (DATA / "share-back.events.log").read_bytes()
    log.write_bytes(text[: text.rindex(b"\n005 (") + 40])
    result = runner.invoke(cli, ["replay", str(log), "--policy-file", str(DATA / "share-back.policy.toml"),
                                 "--slots", "4"])
    assert result.exit_code == 0
    assert f"osep: warning: {log}: byte" in result.stderr
    assert result.stdout.startswith("cut.log: 4 slots, 6 jobs")


@pytest.mark.parametrize("args, message", [
    (["missing.log", "--slots", "4"], "missing.log: cannot read the event log"),
    (["missing.log"], "missing.log: cannot read the event log"),  # named before the pool's size is asked
    ([str(DATA / "no-enforcement.events.log")], "--slots N"),
])
def test_replay_errors_name_the_problem(runner, args, message):
    result = runner.invoke(cli, ["replay", *args, "--policy-file", str(DATA / "share-back.policy.toml")])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_replay_plot(runner, tmp_path, suffix):
    plot = tmp_path / f"replay.{suffix}"
    result = runner.invoke(cli, ["replay", *SHARE_BACK, "--what-if", "greedy", "--plot", str(plot)])
    assert result.exit_code == 0, result.stderr
    assert plot.stat().st_size > 10_000


# -- report --------------------------------------------------------------------------------------


def test_report_history_from_the_decision_log(runner):
    result = runner.invoke(cli, ["report", "--history", "--decisions",
                                 str(DATA / "share-back.decisions.jsonl")])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("osep history from") and "47 cycles" in lines[0]
    alice = next(line for line in lines if line.startswith("alice"))
    assert alice.split()[:3] == ["alice", "2", "0+00:00:24"]
    assert sum(1 for line in lines if "vm#1." in line and "done" in line) == 2


@pytest.mark.parametrize("args, message", [
    (["report", "--decisions", "x.jsonl"], "go with --history"),
    (["report", "--history", "--decisions", "missing.jsonl"], "missing.jsonl"),
    (["report", "--history", "--decisions", str(DATA / "share-back.decisions.jsonl"),
      "--since", "yesterday"], "not a time"),
    *((["report", "--history", "--decisions", str(DATA / "share-back.decisions.jsonl"),
        "--since", when], "--since: not a time from 1970 to 2100")
      for when in ("1e999", "nan", "-1e300", "99999999999999", "9999-12-31T23:59:59-23:59")),
    # A directory given as the decision log: the reader's one line, not click's usage text.
    (["report", "--history", "--decisions", str(DATA)], "cannot read the decision log: not a regular file"),
    (["replay", "--policy-file", str(DATA / "share-back.policy.toml"), "--decisions", str(DATA),
      str(DATA / "share-back.events.log")], "cannot read the decision log: not a regular file"),
    # Owner trees: --tree needs one, shares takes a FILE or --from-pool.
    (["report", "--tree", "--policy-file", str(ROOT / "osep" / "data" / "policy.toml")], "flat, not a tree"),
    (["report", "--tree", "--history", "--decisions", "x.jsonl"], "do not go with --history"),
    (["shares"], "give a FILE, or --from-pool"),
    (["shares", "--from-pool", str(ROOT / "osep" / "data" / "slurm-classic-example.toml")],
     "do not go together"),
    (["shares", "--pool", "cm", str(ROOT / "osep" / "data" / "slurm-classic-example.toml")],
     "--pool goes with --from-pool"),
])
def test_report_usage_errors(runner, args, message):
    result = runner.invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert len(result.stderr.splitlines()) == 1, result.stderr  # a misused option as bad data


def test_progress_only_on_a_terminal(monkeypatch, capsys):
    from osep.ui import cli as module

    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert module.progress_reporter() is None
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    report = module.progress_reporter()
    assert report is not None
    report(100_000, 1795331988.0)
    assert capsys.readouterr().err == "\r100,000 events, log time 2026-11-22 07:19 UTC"


def test_a_bundled_scenario_runs_by_name_from_any_folder(runner, tmp_path, monkeypatch):
    by_path = runner.invoke(cli, ["simulate", JOB_SIZE, "--format", "json"])
    monkeypatch.chdir(tmp_path)
    by_name = runner.invoke(cli, ["simulate", "paper-job-size", "--format", "json"])
    assert by_name.exit_code == 0, by_name.stderr
    assert by_name.stdout == by_path.stdout
    # Its workload log is found relative to the bundled file, not to the working folder.
    nasa = runner.invoke(cli, ["simulate", "nasa-ipsc", "--policy", "greedy", "--format", "json"])
    assert nasa.exit_code == 0, nasa.stderr
    assert json.loads(nasa.stdout)["scenario"]["jobs"] == 1059


def test_validate_takes_a_bundled_scenario_s_name(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli, ["validate", "paper-general", "lcg-2005"])
    assert result.exit_code == 0, result.stderr
    assert "scenario 'paper-general': 20 slots, 60 jobs" in result.stdout
    assert "scenario 'lcg-2005': 600 slots, 13651 jobs" in result.stdout


@pytest.mark.parametrize("command", ["simulate", "validate"])
def test_an_unknown_scenario_name_is_one_line_listing_the_bundled_ones(runner, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli, [command, "paper-generl"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == ("osep: error: paper-generl: no such file, nor a bundled scenario (those are: "
                             "lcg-2005, machines, nasa-ipsc, paper-general, paper-job-size, tree)\n")


def test_the_help_says_which_log_level_each_command_starts_at(runner):
    """osep logs at warning, run at its knob's level (info unless set): the help says both."""
    from osep.config.knobs import DaemonSettings

    group = next(p for p in cli.params if p.name == "log_level")
    text = " ".join(runner.invoke(cli, ["--help"]).stdout.split())
    assert f"default: {group.default}; run: its knob OSEP_LOG_LEVEL, else {DaemonSettings().log_level}" in text


@pytest.mark.parametrize("name", ["machines", "paper-general"])
def test_validate_and_simulate_say_a_pool_s_size_in_the_same_words(runner, name):
    """machines: 20 cores in 4 partitionable machines (its policy counts cores), in both."""
    said = runner.invoke(cli, ["validate", name]).stdout
    header = runner.invoke(cli, ["simulate", name, "--policy", "osep"]).stdout.splitlines()[0]
    size = header.split(": ", 1)[1].rsplit(", ", 1)[0]
    assert f"scenario '{name}': {size}, " in said
    assert size == {"machines": "20 cores in 4 partitionable machines", "paper-general": "20 slots"}[name]

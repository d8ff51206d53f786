"""``osep tune`` through click's runner, as a user runs it: the table, the written policy file (which
validates and, simulated, gives the figures the table promised), resuming, CSV and the plot."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest

from builders import TUNE_POLICY as POLICY
from builders import cli_runner, contended_log
from osep.ui.cli import cli

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture
def files(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text("# the pool's owners\n" + POLICY.replace("interval = 60", "interval = 60  # t"))
    return contended_log(tmp_path / "contended.swf"), policy


def tune(tmp_path, *args):
    result = cli_runner().invoke(cli, ["tune", *map(str, args), "--journal", str(tmp_path / "journal.jsonl")])
    assert result.exit_code == 0, result.stderr
    return result


def test_the_written_policy_validates_and_simulates_to_the_figures_the_table_promised(tmp_path, files):
    log, policy = files
    written = tmp_path / "tuned.toml"
    result = tune(tmp_path, "--trace", log, "--owners", "group", "--policy-file", policy, "-p", "1,2", "-t",
                  "60,300", "--victim-order", "wallclock,lost-work", "--min-run-time", "0,3600", "--format", "json",
                  "--write-policy", written, "--processes", "2")
    doc = json.loads(result.stdout)
    chosen = doc["candidates"][doc["recommended"]]
    assert f"policy file written to {written}" in result.stderr
    text = written.read_text()
    assert text.startswith("# the pool's owners\n[policy]\n# settings recommended by osep tune")
    assert "group1 = 2" in text
    checked = cli_runner().invoke(cli, ["validate", str(written)])
    assert checked.exit_code == 0, checked.stderr
    simulated = cli_runner().invoke(cli, ["simulate", "--trace", str(log), "--owners", "group", "--policy-file",
                                          str(written), "--policy", "osep", "--format", "json"])
    assert simulated.exit_code == 0, simulated.stderr
    column = json.loads(simulated.stdout)["policies"]["osep"]
    assert (column["PV"], column["LC"], column["PC"], column["vacates"]) == \
        (chosen["pv"], chosen["lc"], chosen["pc"], chosen["vacates"])
    assert column["settings"]["min_run_time"] == chosen["settings"]["min_run_time"]
    assert column["settings"]["interval"] == chosen["settings"]["interval"]


def test_the_table_marks_the_front_the_recommendation_and_the_policy_files(tmp_path, files):
    log, policy = files
    out = tune(tmp_path, "--trace", log, "--owners", "group", "--policy-file", policy, "-p", "1,2", "-t", "60,900",
               "--victim-order", "wallclock", "--min-run-time", "0", "--tune-days", "1").stdout
    lines = out.splitlines()
    assert lines[0] == ("5 candidates on contended.swf, tuned on [0 s, 86,400 s), checked on "
                        "[86,400 s, the end)")
    assert lines[1] == "every candidate: victims wallclock, target owner, min run (s) 0, excess fairshare"
    assert any(line.startswith(("*>=", "*=")) for line in lines)
    assert "on the held-out period [86,400 s, the end):" in out
    assert max(len(line) for line in lines) <= 100


def test_the_same_command_again_takes_every_run_from_the_journal(tmp_path, files):
    log, policy = files
    args = ("--trace", log, "--owners", "group", "--policy-file", policy, "-p", "1,2", "-t", "60",
            "--victim-order", "wallclock", "--min-run-time", "0", "--format", "json")
    first = json.loads(tune(tmp_path, *args).stdout)
    again = json.loads(tune(tmp_path, *args).stdout)
    assert again["runs"] == {"candidates": 3, "from_journal": 3}
    assert {**again, "runs": None} == {**first, "runs": None}
    fresh = json.loads(tune(tmp_path, *args, "--fresh").stdout)
    assert fresh["runs"]["from_journal"] == 0


def test_csv_has_a_line_per_candidate(tmp_path, files):
    log, policy = files
    out = tune(tmp_path, "--trace", log, "--owners", "group", "--policy-file", policy, "-p", "1,auto", "-t", "60",
               "--victim-order", "wallclock", "--min-run-time", "0", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["max_vacates"] for r in rows] == ["1", "auto"]
    assert {"pv", "lc", "pc", "cost", "vacates", "work_redone", "worst_us", "front", "recommended"} <= set(rows[0])


def test_the_plot_is_drawn(tmp_path, files):
    log, policy = files
    plot = tmp_path / "front.svg"
    result = tune(tmp_path, "--trace", log, "--owners", "group", "--policy-file", policy, "-p", "1,2", "-t", "60",
                  "--victim-order", "wallclock", "--min-run-time", "0", "--plot", plot)
    assert plot.read_text().lstrip().startswith("<?xml") and f"plot written to {plot}" in result.stderr


def test_event_logs_are_tuned_on_as_replay_reads_them(tmp_path):
    out = tune(tmp_path, DATA / "share-back.events.log", "--policy-file", DATA / "share-back.policy.toml",
               "--decisions", DATA / "share-back.decisions.jsonl", "--negotiation-interval", "2", "--vacate-delay",
               "0", "-t", "2", "-p", "1,2", "--victim-order", "wallclock", "--min-run-time", "0,20").stdout
    assert out.startswith("5 candidates on share-back.events.log, tuned on [0 s, the end)")
    assert "not checked on a later period" in out


def test_a_policy_file_whose_policy_table_is_inline_is_refused_not_written_wrong(tmp_path, files):
    log, policy = files
    policy.write_text('policy = { interval = 60 }\n[owners]\ngroup1 = 2\ngroup2 = 2\n')
    result = cli_runner().invoke(cli, ["tune", "--trace", str(log), "--owners", "group", "--policy-file",
                                       str(policy), "-p", "1", "-t", "60", "--victim-order", "wallclock",
                                       "--min-run-time", "0", "--journal", str(tmp_path / "j"),
                                       "--write-policy", str(tmp_path / "out.toml")])
    assert result.exit_code == 2 and "cannot rewrite" in result.stderr
    assert not (tmp_path / "out.toml").exists()
    assert not list(tmp_path.glob(".out.toml*"))


def test_a_terminal_sees_a_progress_bar_of_the_runs(monkeypatch):
    from osep.ui.cmd_tune import _Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    bar = _Progress()
    for finished in range(5):
        bar(finished, 4)
    bar.close()
    assert "runs" in screen.getvalue() and "4/4" in screen.getvalue()


def test_no_progress_bar_where_no_terminal_shows_it(monkeypatch):
    from osep.ui.cmd_tune import _Progress

    screen = io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    bar = _Progress()
    bar(0, 4)
    bar(4, 4)
    bar.close()
    assert screen.getvalue() == ""

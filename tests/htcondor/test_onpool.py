"""``osep tune --on-pool`` without a pool: the job's entry point run as a pool would run it (a
subprocess, osep imported from the zip the runner ships), and the runner's bookkeeping against a
queue that runs its jobs in this process when the runner waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from builders import cli_runner
from osep.config.trace import TraceOptions
from osep.errors import PoolError
from osep.htcondor import tunejob
from osep.htcondor.eventlog import read_event_rows
from osep.htcondor.onpool import ZIP, Ending, OnPool, PoolRunner, parse_submit, transfer_names, zip_osep
from osep.replay.study import LogSource, WhatIf
from osep.tune.history import CHECK, TUNE, EventHistory, History, TraceHistory
from osep.tune.sweep import run
from osep.ui.cli import cli
from tests.tune.test_tuning import DATA, contended_log, sweep_of

# The contended log's owners (group1 fills the pool, group2 comes back later), so that enforcing
# vacates and the candidates' figures differ.
POLICY = "[policy]\ninterval = 60\n[owners]\ngroup1 = 2\ngroup2 = 2\n"


def trace_history(tmp_path: Path, tune_days: float | None = None) -> TraceHistory:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    log = contended_log(tmp_path / "contended.swf")
    return TraceHistory(TraceOptions(log, owners="group", policy_file=policy, negotiation_interval=60.0), tune_days)


def job_dir(tmp_path: Path, history: History) -> tuple[Path, list[str]]:
    """A job's directory as HTCondor makes it: the inputs by their transfer names, and the zip."""
    where = tmp_path / "job"
    where.mkdir()
    names = transfer_names(history.inputs())
    for name, path in zip(names, history.inputs(), strict=True):
        (where / name).write_bytes(path.read_bytes())
    zip_osep(where / ZIP)
    return where, names


def run_job(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": ZIP}
    return subprocess.run([sys.executable, *args], cwd=where, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_job_gives_the_figures_a_local_run_gives(tmp_path):
    history = trace_history(tmp_path, tune_days=1)
    where, names = job_dir(tmp_path, history)
    tasks = [(TUNE, c) for c in sweep_of(history).candidates[:3]] + [(CHECK, sweep_of(history).baseline)]
    spec = {"history": history.describe(), "files": names,
            "tasks": [{"period": p, "candidate": c.as_dict()} for p, c in tasks]}
    (where / "spec.json").write_text(json.dumps(spec))
    done = run_job(where, "-m", "osep.htcondor.tunejob", "spec.json", "out.json")
    assert done.returncode == 0, done.stderr
    got = json.loads((where / "out.json").read_text())["results"]
    assert got[0]["figures"]["vacates"] > 0
    assert got == [{"period": p, "candidate": c.as_dict(), "figures": run(history, p, c).as_dict()}
                   for p, c in tasks]
    assert not (where / "out.json.part").exists()


def test_a_job_rebuilds_a_history_of_event_logs(tmp_path, monkeypatch):
    history = EventHistory([LogSource(DATA / "share-back.events.log")], DATA / "share-back.policy.toml",
                           read_event_rows, lambda _: None, decisions=DATA / "share-back.decisions.jsonl",
                           what_if=WhatIf((), 2.0, 0.0))
    where, names = job_dir(tmp_path, history)
    tasks = [(TUNE, c) for c in sweep_of(history, interval="2", max_vacates="1,2").candidates]
    spec = {"history": history.describe(), "files": names,
            "tasks": [{"period": p, "candidate": c.as_dict()} for p, c in tasks]}
    (where / "spec.json").write_text(json.dumps(spec))
    monkeypatch.chdir(where)
    assert tunejob.main(["spec.json", "out.json"]) == 0
    got = json.loads((where / "out.json").read_text())["results"]
    assert [r["figures"] for r in got] == [run(history, *task).as_dict() for task in tasks]


def test_the_job_runs_from_the_zip_without_the_bindings_or_click(tmp_path):
    where, _ = job_dir(tmp_path, trace_history(tmp_path))
    probe = ("import sys, osep.htcondor.tunejob, osep\n"
             "print(osep.__file__)\n"
             "print(sorted(m for m in ('htcondor2', 'classad2', 'click') if m in sys.modules))\n")
    done = run_job(where, "-c", probe)
    assert done.returncode == 0, done.stderr
    origin, imported = done.stdout.splitlines()
    assert origin == str(where / ZIP / "osep" / "__init__.py")
    assert imported == "[]"


def test_two_inputs_of_the_same_name_stay_apart(tmp_path):
    assert transfer_names([Path("a/x.log"), Path("b/x.log")]) == ["0-x.log", "1-x.log"]


@pytest.mark.parametrize("spec, says", [
    ("{", "not a sweep job's spec"),
    ('{"history": {"kind": "nothing"}, "files": [], "tasks": []}', "kind 'nothing'"),
    ('{"history": {"kind": "trace", "log": 0, "policy_file": 1, "options": {}, "tune_days": null}, '
     '"files": ["gone.swf", "gone.toml"], "tasks": []}', "gone.toml"),
])
def test_a_bad_spec_is_one_line_and_no_output(tmp_path, capsys, spec, says):
    (tmp_path / "spec.json").write_text(spec)
    code = tunejob.main([str(tmp_path / "spec.json"), str(tmp_path / "out.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert not (tmp_path / "out.json").exists()


def test_a_bad_spec_says_why_on_one_line(tmp_path):
    (tmp_path / "spec.json").write_text('{"history": {"kind": "nothing"}, "files": [], "tasks": []}')
    done = subprocess.run([sys.executable, "-m", "osep.htcondor.tunejob", "spec.json", "out.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "kind 'nothing'" in done.stderr


# -- the runner's bookkeeping -------------------------------------------------------------------------


class FakeQueue:
    """A schedd whose jobs run, in this process, when the runner waits. ``plan`` says what each try
    of a batch does: ``ok``, ``exit`` (non-zero, no output), ``garbage`` (bad output), ``held``,
    ``removed`` (by someone else)."""

    def __init__(self, log: Path, plan: Mapping[int, Sequence[str]], monkeypatch: pytest.MonkeyPatch,
                 at_once: bool = False) -> None:
        self.at_once = at_once  # run the queued jobs whenever the runner looks for ended ones
        self.scratch = log.parent
        self.plan = {n: list(outcomes) for n, outcomes in plan.items()}
        self.monkeypatch = monkeypatch
        self.clusters: dict[int, list[int]] = {}  # cluster -> the batch of each proc
        self.queued: set[tuple[int, int]] = set()
        self.ended: list[Ending] = []
        self.removed: list[tuple[int, int]] = []
        self.cleared: list[int] = []
        self.description: dict[str, str] = {}

    def submit(self, description: Mapping[str, str], items: Sequence[Mapping[str, str]]) -> int:
        self.description = dict(description)
        cluster = 100 + len(self.clusters)
        self.clusters[cluster] = [int(item["n"]) for item in items]
        self.queued |= {(cluster, proc) for proc in range(len(items))}
        return cluster

    def step(self, _seconds: float) -> None:
        self.monkeypatch.chdir(self.scratch)
        for job in sorted(self.queued):
            n = self.clusters[job[0]][job[1]]
            outcome = self.plan.get(n, ["ok"]).pop(0) if self.plan.get(n) else "ok"
            if outcome == "ok":
                code = tunejob.main([f"spec-{n}.json", f"out-{n}.json"])
                self.ended.append(Ending(job, "terminated", "", code))
            elif outcome == "exit":
                (self.scratch / f"err-{n}.txt").write_text("osep tunejob: it broke\n")
                self.ended.append(Ending(job, "terminated", "exit status 2", 2))
            elif outcome == "garbage":
                (self.scratch / f"out-{n}.json").write_text('{"results": [1]}')
                self.ended.append(Ending(job, "terminated", "", 0))
            elif outcome == "held":
                self.ended.append(Ending(job, "held", "Transfer output files failure"))
                continue  # a held job stays in the queue
            else:
                self.ended.append(Ending(job, "removed", "by the administrator"))
            self.queued.discard(job)

    def endings(self) -> list[Ending]:
        if self.at_once:
            self.step(0.0)
        out, self.ended = self.ended, []
        return out

    def remove(self, jobs: Sequence[tuple[int, int]], why: str) -> None:
        self.removed += jobs
        self.queued -= set(jobs)
        self.ended += [Ending(j, "removed", why) for j in jobs]  # the log's abort event

    def clear(self, clusters: Sequence[int]) -> None:
        self.cleared = list(clusters)
        self.queued = {j for j in self.queued if j[0] not in clusters}


def sweep_on(tmp_path, monkeypatch, plan, batch=1, count=3, interrupt=False):
    history = trace_history(tmp_path)
    tasks = [(TUNE, c) for c in sweep_of(history).candidates[:count]]
    queues: list[FakeQueue] = []
    warned: list[str] = []
    got: dict = {}

    def queue_of(options, log):
        queues.append(FakeQueue(log, plan, monkeypatch))
        return queues[-1]

    def sleep(seconds):
        if interrupt and got:
            raise KeyboardInterrupt
        queues[-1].step(seconds)

    runner = PoolRunner(OnPool(batch=batch, submit=(("request_memory", "512"),)), warned.append, sleep, queue_of)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    error = None
    try:
        runner(history, tasks, got.__setitem__)
    except (PoolError, KeyboardInterrupt) as exc:
        error = exc
    return history, tasks, got, queues[-1], warned, error


def test_every_task_is_handed_on_as_its_job_ends(tmp_path, monkeypatch):
    history, tasks, got, queue, warned, error = sweep_on(tmp_path, monkeypatch, {})
    assert error is None and warned == []
    assert got == {task: run(history, *task) for task in tasks}
    assert queue.cleared == [100] and queue.queued == set()
    assert queue.description["request_memory"] == "512"
    assert not list(tmp_path.glob("osep-tune-*")), "the scratch directory is removed"


def test_batches_run_several_tasks_in_a_job(tmp_path, monkeypatch):
    _history, _tasks, got, queue, _, error = sweep_on(tmp_path, monkeypatch, {}, batch=2, count=3)
    assert error is None and len(got) == 3
    assert queue.clusters == {100: [0, 1]}


@pytest.mark.parametrize("failure", ["exit", "garbage", "held"])
def test_a_failed_job_is_submitted_again(tmp_path, monkeypatch, failure):
    history, tasks, got, queue, warned, error = sweep_on(tmp_path, monkeypatch, {1: [failure, "ok"]})
    assert error is None
    assert got == {task: run(history, *task) for task in tasks}
    assert queue.clusters == {100: [0, 1, 2], 101: [1]}
    assert len(warned) == 1 and tasks[1][1].key() in warned[0] and "try 2 of 3" in warned[0]
    assert queue.removed == ([(100, 1)] if failure == "held" else [])
    assert queue.cleared == [100, 101]


def test_a_job_that_keeps_failing_stops_the_sweep_naming_its_candidate(tmp_path, monkeypatch):
    _history, tasks, _got, queue, warned, error = sweep_on(tmp_path, monkeypatch, {0: ["exit"] * 3})
    assert isinstance(error, PoolError)
    assert str(error) == (f"the pool's job for candidate {tasks[0][1].key()} (tune period) failed 3 times; "
                          "the last: no output: osep tunejob: it broke")
    assert len(warned) == 2
    assert queue.cleared == [100, 101, 102]


def test_a_job_removed_by_someone_else_stops_the_sweep(tmp_path, monkeypatch):
    *_, queue, _, error = sweep_on(tmp_path, monkeypatch, {2: ["removed"]})
    assert isinstance(error, PoolError) and "removed from the queue (by the administrator)" in str(error)
    assert queue.cleared == [100]


def test_an_interrupt_leaves_no_job_in_the_queue(tmp_path, monkeypatch):
    *_, got, queue, _, error = sweep_on(tmp_path, monkeypatch, {1: ["held"] * 3}, interrupt=True)
    assert isinstance(error, KeyboardInterrupt)
    assert queue.cleared == [100, 101] and queue.queued == set()
    assert len(got) == 2


@pytest.mark.parametrize("text, says", [
    ("request_memory", "is not KEY=VALUE"),
    ("=1", "is not KEY=VALUE"),
    ("Executable=/bin/sh", "osep tune sets it itself"),
])
def test_a_submit_command_must_be_one_the_runner_leaves_alone(text, says):
    with pytest.raises(ValueError, match=says):
        list(parse_submit([text]))


def test_submit_commands_are_keys_and_values():
    assert list(parse_submit(["accounting_group = group_a", "requirements=(Arch == \"X86_64\")"])) == [
        ("accounting_group", "group_a"), ("requirements", '(Arch == "X86_64")')]


# -- the command ---------------------------------------------------------------------------------------


def tune_args(where: Path, *more: str, fresh: bool = True) -> list[str]:
    """``osep tune`` on the contended log (its files written in ``where``), five candidates, JSON."""
    policy = where / "policy.toml"
    policy.write_text(POLICY)
    trace = contended_log(where / "contended.swf")
    return ["tune", "--trace", str(trace), "--owners", "group", "--policy-file", str(policy), "-p", "1,2",
            "-t", "60,300", "--victim-order", "wallclock", "--min-run-time", "0", "--tune-days", "1",
            "--format", "json", *(["--fresh"] if fresh else []), *more]


def test_the_command_on_a_pool_gives_the_document_a_local_run_gives(tmp_path, monkeypatch):
    monkeypatch.setattr("osep.htcondor.onpool.ScheddQueue",
                        lambda options, log: FakeQueue(log, {}, monkeypatch, at_once=True))
    local = cli_runner().invoke(cli, tune_args(tmp_path, "--journal", str(tmp_path / "local.journal")))
    assert local.exit_code == 0, local.stderr
    pooled = cli_runner().invoke(cli, tune_args(tmp_path, "--journal", str(tmp_path / "pool.journal"), "--on-pool",
                                                "--batch", "2", "--pool-submit", "request_memory=100"))
    assert pooled.exit_code == 0, pooled.stderr
    assert json.loads(pooled.stdout) == json.loads(local.stdout)
    assert len({row["pv"] for row in json.loads(local.stdout)["candidates"]}) > 1


def test_an_unreachable_pool_is_one_line_naming_it(tmp_path):
    result = cli_runner().invoke(cli, tune_args(tmp_path, "--on-pool", "--pool", "127.0.0.1:1", "--schedd", "s1",
                                                "--journal", str(tmp_path / "j")))
    assert result.exit_code == 1
    assert result.stderr.startswith("osep: error: asking the collector at 127.0.0.1:1 for the schedd s1: ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("more, says", [
    (["--schedd", "s1"], "--schedd goes with --on-pool"),
    (["--pool-submit", "a=b"], "--pool-submit goes with --on-pool"),
    (["--on-pool", "--processes", "2"], "--processes goes with runs on this machine"),
    (["--on-pool", "--pool-submit", "log=x"], "--pool-submit log: osep tune sets it itself"),
])
def test_pool_options_go_with_on_pool(tmp_path, more, says):
    result = cli_runner().invoke(cli, tune_args(tmp_path, *more))
    assert result.exit_code == 2 and says in result.stderr

"""A sweep end to end on small recorded histories: the same figures however the runs are carried out,
a resumed sweep runs nothing twice, and the held-out period is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import TUNE_POLICY as POLICY
from builders import contended_log
from osep.config.trace import TraceOptions
from osep.errors import ConfigError
from osep.htcondor.eventlog import read_event_rows
from osep.replay.study import LogSource, WhatIf
from osep.tune.candidates import baseline, grid
from osep.tune.front import Pick
from osep.tune.history import CHECK, TUNE, EventHistory, TraceHistory
from osep.tune.journal import Journal
from osep.tune.sweep import run, run_local
from osep.tune.tuning import Sweep, runnable, tune

DATA = Path(__file__).parents[1] / "data"
def trace_history(tmp_path: Path, tune_days: float | None = None) -> TraceHistory:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    log = contended_log(tmp_path / "contended.swf")
    return TraceHistory(TraceOptions(log, owners="group", policy_file=policy, negotiation_interval=60.0), tune_days)


def sweep_of(history, **given) -> Sweep:
    loaded = history.policy
    base = baseline(loaded.settings, loaded.interval, loaded.min_run_time, loaded.excess)
    return Sweep(grid({"max_vacates": "1,2", "interval": "60,300", "victim_order": "wallclock",
                       "min_run_time": "0", **given}, base), base, Pick())


def serial(history, tasks, done):
    run_local(history, tasks, done, 1)


def noted(said):
    return said.append


def test_candidates_differ_and_the_recommendation_is_on_the_front(tmp_path):
    history = trace_history(tmp_path)
    sweep = sweep_of(history)
    doc = tune(history, sweep, Journal(tmp_path / "j", "s", noted([])), serial)
    rows = doc["candidates"]
    assert len(rows) == 5  # p 1, 2 at t 60 and 300, and the policy file's p auto at t 60
    assert len({(r["pv"], r["cost"]) for r in rows}) > 1
    chosen = doc["recommended"]
    assert rows[chosen]["recommended"] and rows[chosen]["front"]
    assert doc["check"] is None and set(doc["history"]["periods"]) == {TUNE}


def test_worker_processes_give_the_figures_one_process_gives(tmp_path):
    history = trace_history(tmp_path)
    sweep = sweep_of(history)
    one = tune(history, sweep, Journal(tmp_path / "one", "s", noted([])), serial)
    two = tune(history, sweep, Journal(tmp_path / "two", "s", noted([])),
               lambda h, tasks, done: run_local(h, tasks, done, 2))
    assert one == two


def test_a_resumed_sweep_runs_no_finished_candidate_again(tmp_path):
    history = trace_history(tmp_path)
    sweep = sweep_of(history)
    ran: list = []

    def interrupted_after_two(h, tasks, done):
        for task in tasks:
            if len(ran) == 2:
                raise KeyboardInterrupt
            ran.append(task)
            done(task, run(h, *task))

    journal = Journal(tmp_path / "j", "s", noted([]))
    with pytest.raises(KeyboardInterrupt):
        tune(history, sweep, journal, interrupted_after_two)
    journal.close()
    first = list(ran)
    ran.clear()

    def counting(h, tasks, done):
        for task in tasks:
            ran.append(task)
            done(task, run(h, *task))

    doc = tune(history, sweep, Journal(tmp_path / "j", "s", noted([])), counting)
    assert not set(first) & set(ran)
    assert len(first) + len(ran) == len(sweep.candidates)
    assert doc["runs"] == {"candidates": 5, "from_journal": 2}
    assert doc == tune(history, sweep, Journal(tmp_path / "fresh", "s", noted([])), serial) | {
        "runs": {"candidates": 5, "from_journal": 2}}


def test_the_held_out_period_checks_the_recommendation_against_the_policy_files(tmp_path):
    history = trace_history(tmp_path, tune_days=1)
    assert history.periods() == (TUNE, CHECK)
    assert history.span(TUNE) == (0.0, 86400.0) and history.span(CHECK) == (86400.0, None)
    assert len(history.scenario(TUNE, 60.0).jobs) == 12 == len(history.scenario(CHECK, 60.0).jobs)
    doc = tune(history, sweep_of(history), Journal(tmp_path / "j", "s", noted([])), serial)
    check = doc["check"]
    assert set(check) >= {"recommended", "policy_file", "pv_change", "cost_change"}
    # Each day is the same workload, so each candidate measures the same on both periods.
    chosen = doc["candidates"][doc["recommended"]]
    assert check["recommended"]["pv"] == pytest.approx(chosen["pv"])


def test_a_hold_out_past_the_history_is_refused(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    log = contended_log(tmp_path / "c.swf")
    with pytest.raises(ConfigError, match="nothing is left to check on"):
        TraceHistory(TraceOptions(log, owners="group", policy_file=policy, until=86400.0), tune_days=1)


def test_a_history_is_made_again_from_its_description(tmp_path):
    history = trace_history(tmp_path, tune_days=1)
    again = TraceHistory.described(history.describe(), history.inputs())
    assert again.scenario(CHECK, 60.0).jobs == history.scenario(CHECK, 60.0).jobs


def test_event_logs_are_a_history_too(tmp_path):
    said: list[str] = []
    history = EventHistory([LogSource(DATA / "share-back.events.log")], DATA / "share-back.policy.toml",
                           read_event_rows, said.append, decisions=DATA / "share-back.decisions.jsonl",
                           what_if=WhatIf((), 2.0, 0.0))
    sweep = sweep_of(history, interval="2", max_vacates="1,2")
    doc = tune(history, sweep, Journal(tmp_path / "j", "s", noted([])), serial)
    assert doc["recommended"] is not None
    again = EventHistory.described(history.describe(), history.inputs(), read_event_rows, said.append)
    assert again.scenario(TUNE, 2.0).jobs == history.scenario(TUNE, 2.0).jobs


def test_an_error_in_a_worker_process_reaches_the_sweep_whole(tmp_path, monkeypatch):
    history = trace_history(tmp_path)
    sweep = sweep_of(history)

    def failing(h, period, candidate):
        raise ConfigError("some.swf", "--trace", "cannot be run")

    monkeypatch.setattr("osep.tune.sweep.run", failing)  # the workers are forked with it
    with pytest.raises(ConfigError, match=r"some\.swf: --trace: cannot be run"):
        run_local(history, [(TUNE, c) for c in sweep.candidates], lambda *_: None, 2)


class _Bounded:
    """A history whose runs cannot be bounded at t = 60 s."""

    def periods(self):
        return (TUNE, CHECK)

    def scenario(self, period, interval):
        if interval == 60.0:
            raise ConfigError("big.swf", "--trace", "a job cannot end before 9 s")


def test_a_default_interval_that_cannot_be_run_is_left_out_with_a_note(tmp_path):
    history = trace_history(tmp_path)
    candidates = sweep_of(history, interval="60,300").candidates
    base = next(c for c in candidates if c.interval == 300.0)
    kept, notes = runnable(_Bounded(), candidates, False, base)
    assert kept and all(c.interval == 300.0 for c in kept)
    assert notes == ["t = 60 s left out of the candidates: a job cannot end before 9 s"]
    with pytest.raises(ConfigError, match=r"big\.swf: -t: 60 s: a job cannot end"):
        runnable(_Bounded(), candidates, True, base)

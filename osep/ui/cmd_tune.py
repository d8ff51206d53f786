"""``osep tune``: the candidates of a sweep on a recorded history, the front and a recommendation."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from osep.bounds import MAX_INTERVAL, MAX_TRACE_SECONDS, MIN_INTERVAL
from osep.errors import OsepError
from osep.replay.damage import MAX_SLOTS as REPLAY_SLOTS
from osep.tune.candidates import DEFAULTS
from osep.tune.front import Rule
from osep.ui.shell import (
    Number,
    Warnings,
    check_folder,
    check_plot,
    cli,
    decisions_option,
    fails_cleanly,
    policy_file_option,
    pool_option,
    trace_options,
    trace_window,
)

F = TypeVar("F", bound=Callable[..., Any])


def _values(name: str, what: str) -> Callable[[F], F]:
    """An option listing the values of one setting to try (a choice's names, or numbers)."""
    default = DEFAULTS[name]
    swept = f"default: {default}, and the policy file's" if default else "default: the policy file's"
    as_text = ("a list (0,600), a range (0..3600:600) or a doubling range (60..3840x2)" if name == "min_run_time"
               else "a list")
    return click.option(f"--{name.replace('_', '-')}", name, metavar="VALUES",
                        help=f"{what} to try, as {as_text}. [{swept}]")


@cli.command()
@click.argument("logs", nargs=-1, metavar="[[OWNER=]LOG...]")
@click.option("--trace", type=click.Path(path_type=Path),
              help="Tune on a workload log in the Standard Workload Format (.swf or .swf.gz) instead of job "
                   "event LOGs.")
@policy_file_option("The policy file: the owners' shares, and the settings the candidates are compared with.",
                    required=True)
@click.option("-p", "--max-vacates", "max_vacates", metavar="VALUES",
              help="p, vacates per cycle: values to try, as a list (1,2,4), a range (1..8) or a doubling range "
                   f"(1..64x2); auto is the largest share. [default: {DEFAULTS['max_vacates']}, and the policy file's]")
@click.option("-t", "--interval", "interval", metavar="VALUES",
              help="t, seconds between cycles: values to try, as a list or a range (60..600:60). "
                   f"[default: {DEFAULTS['interval']}, and the policy file's]")
@_values("victim_order", "Victim orders (wallclock, lost-work)")
@_values("target", "Targets (owner, feasible)")
@_values("min_run_time", "Minimum run times in seconds (a younger job is not vacated)")
@_values("excess", "Negotiators enforcement runs over (fairshare, greedy, slurm, share, grid, cambridge; any "
                   "but fairshare needs target owner)")
@click.option("--pick", type=click.Choice([r.value for r in Rule]), default=Rule.CHEAPEST.value, show_default=True,
              help="How the recommendation is chosen: the lowest cost (LC + PC), or the highest worst-owner A_US, "
                   "among the candidates within --within of the lowest PV; or the lowest PV.")
@click.option("--within", type=Number(min=0, max=10), default=0.10, show_default=True,
              help="The PV a candidate may have over the lowest and still be picked, as a fraction (0.1: 10%).")
@click.option("--tune-days", type=Number(min=0, max=MAX_TRACE_SECONDS / 86400, min_open=True),
              help="Tune on the first this many days of the history and check the recommendation, against the "
                   "policy file's settings, on the rest. [default: tune on all of it, check nothing]")
@trace_options
@decisions_option("LOGs: the JSON log osep run wrote for the same period, for the pool's size.")
@click.option("--slots", type=click.IntRange(min=1, max=REPLAY_SLOTS),
              help="LOGs: the pool's size in one-core slots (default: the largest the decision log saw).")
@click.option("--vacate-delay", type=Number(min=0, max=MAX_INTERVAL), default=10.0, show_default=True,
              help="LOGs: seconds a vacated job holds its slot in the simulated pool.")
@click.option("--negotiation-interval", type=Number(min=MIN_INTERVAL, max=MAX_INTERVAL), default=60.0,
              show_default=True, help="Seconds between negotiation cycles of the simulated pool.")
@click.option("--processes", type=click.IntRange(min=1, max=1024),
              help="Candidates run at once on this machine. [default: its cores]")
@click.option("--on-pool", is_flag=True,
              help="Run the candidates as jobs of an HTCondor pool instead of on this machine (see --pool, "
                   "--schedd, --batch, --pool-python, --pool-submit).")
@pool_option("--on-pool: the pool")
@click.option("--schedd", metavar="NAME", help="--on-pool: the schedd the jobs go to. [default: the local one]")
@click.option("--batch", type=click.IntRange(min=1, max=10_000), default=1, show_default=True,
              help="--on-pool: candidates run by each job.")
@click.option("--pool-python", metavar="PATH", default="/usr/bin/python3", show_default=True,
              help="--on-pool: the Python 3.11 or later, with structlog, that runs a job on the execute machines.")
@click.option("--pool-submit", "pool_submit", metavar="KEY=VALUE", multiple=True,
              help="--on-pool: a submit command the jobs also get (accounting_group, requirements, "
                   "request_memory...); repeat for more.")
@click.option("--journal", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Where finished runs are kept, so that the same command run again after an interrupt goes "
                   "on where it stopped. [default: a file per history under ~/.cache/osep/tune]")
@click.option("--fresh", is_flag=True, help="Forget the runs the journal holds and run every candidate.")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "csv")), default="table", show_default=True,
              help="Output format.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path),
              help="Also draw PV against cost for every candidate, the front and the recommendation (PNG or SVG).")
@click.option("--write-policy", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Write the policy file with the recommended settings here (its owners and comments kept).")
@fails_cleanly
def tune(logs: tuple[str, ...], trace: Path | None, policy_file: Path, max_vacates: str | None,
         interval: str | None, victim_order: str | None, target: str | None, min_run_time: str | None,
         excess: str | None, pick: str, within: float, tune_days: float | None, owners: str, cores: int | None,
         cores_per_machine: int | None, from_second: float, until_second: float | None, days: float | None,
         decisions: Path | None, slots: int | None, vacate_delay: float, negotiation_interval: float,
         processes: int | None, on_pool: bool, pool: str | None, schedd: str | None, batch: int,
         pool_python: str, pool_submit: tuple[str, ...], journal: Path | None, fresh: bool, fmt: str,
         plot: Path | None, write_policy: Path | None) -> None:
    """Try candidate settings on a recorded history (job event LOGs, or --trace) and recommend one.

    Every candidate runs on the same workload as osep simulate runs the policy osep; the table marks
    the front of PV against cost and the recommendation, and --write-policy writes it as a policy file.
    """
    from osep.tune import candidates as C
    from osep.tune.front import Pick
    from osep.tune.journal import Journal, default_path, fingerprint
    from osep.tune.tuning import Sweep, runnable
    from osep.tune.tuning import tune as run_sweep
    from osep.ui import render, tunetable

    check_plot(plot)
    if write_policy is not None:
        check_folder(write_policy, "--write-policy")
    given = {"max_vacates": max_vacates, "interval": interval, "victim_order": victim_order, "target": target,
             "min_run_time": min_run_time, "excess": excess}
    for name, text in given.items():  # refused before any log is read
        if text is not None:
            C.parse_values(name, text)
    warn = Warnings()
    runner = _runner(on_pool, processes, pool, schedd, batch, pool_python, pool_submit, warn)
    history = _history(logs, trace, policy_file, tune_days, owners, cores, cores_per_machine, from_second,
                       until_second, days, decisions, slots, vacate_delay, negotiation_interval, warn)
    loaded = history.policy
    base = C.baseline(loaded.settings, loaded.interval, loaded.min_run_time, loaded.excess)
    kept_candidates, notes = runnable(history, C.grid(given, base), interval is not None, base)
    for note in notes:
        warn(note)
    sweep = Sweep(kept_candidates, base, Pick(Rule(pick), within))
    note = f"settings recommended by osep tune ({sweep.pick.describe()})"
    if write_policy is not None:  # a file that could not be written is said before anything runs
        from osep.config.rewrite import rewrite

        rewrite(policy_file, base.as_dict(), note)
    sweep_id = fingerprint(history.describe(), history.inputs())
    kept = Journal(journal or default_path(sweep_id), sweep_id, warn, fresh=fresh)
    bar = _Progress()
    try:
        doc = run_sweep(history, sweep, kept, runner, bar)
    except KeyboardInterrupt:
        bar.close()
        click.echo(f"osep: {len(kept.done):,} finished runs are kept in {kept.path}: the same command goes on "
                   "from there", err=True)
        raise
    finally:
        bar.close()
        kept.close()
        warn.close()
    render_as = {"table": tunetable.table, "json": render.as_json, "csv": tunetable.as_csv}[fmt]
    click.echo(render_as(doc), nl=False)
    if write_policy is not None and doc["recommended"] is not None:
        from osep.config.rewrite import write_policy as write

        write(policy_file, write_policy, sweep.candidates[doc["recommended"]].as_dict(), note)
        click.echo(f"policy file written to {write_policy}", err=True)
    if plot is not None:
        from osep.ui.plot import draw_front

        try:
            draw_front(plot, doc)
        except OSError as exc:
            raise OsepError(f"cannot write the plot to {plot}: {exc.strerror or exc}") from None
        click.echo(f"plot written to {plot}", err=True)


def _history(logs: tuple[str, ...], trace: Path | None, policy_file: Path, tune_days: float | None, owners: str,
             cores: int | None, cores_per_machine: int | None, from_second: float, until_second: float | None,
             days: float | None, decisions: Path | None, slots: int | None, vacate_delay: float,
             negotiation_interval: float, warn: Warnings) -> Any:
    """The history the options name: --trace's log, or the job event LOGs."""
    ctx = click.get_current_context()

    def given(*names: str) -> list[str]:
        return [f"--{n.replace('_', '-')}" for n in names
                if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)]

    if trace is not None:
        if logs:
            raise click.UsageError("give job event LOGs or --trace, not both")
        wrong = given("decisions", "slots", "vacate_delay")
        if wrong:
            raise click.UsageError(f"{wrong[0]} goes with job event LOGs, not --trace")
        end = trace_window(from_second, until_second, days)
        from osep.config.trace import TraceOptions
        from osep.tune.history import TraceHistory

        options = TraceOptions(trace, owners, from_second, end, None, 1.0, cores, cores_per_machine, 0.01,
                               policy_file, negotiation_interval, None)
        return TraceHistory(options, tune_days)
    if not logs:
        raise click.UsageError("give job event LOGs, or --trace with a workload log")
    wrong = given("owners", "cores", "cores_per_machine", "from_second", "until_second", "days")
    if wrong:
        raise click.UsageError(f"{wrong[0]} goes with --trace")
    from osep.htcondor.eventlog import read_event_rows
    from osep.replay.study import LogSource, WhatIf
    from osep.tune.history import EventHistory

    return EventHistory([LogSource.parse(text) for text in logs], policy_file, read_event_rows, warn,
                        decisions=decisions, slots=slots, what_if=WhatIf((), negotiation_interval, vacate_delay),
                        tune_days=tune_days)


def _runner(on_pool: bool, processes: int | None, pool: str | None, schedd: str | None, batch: int,
            pool_python: str, pool_submit: tuple[str, ...], warn: Warnings) -> Any:
    """Where the runs go: worker processes on this machine, or --on-pool's jobs."""
    ctx = click.get_current_context()
    pool_only = [f"--{n.replace('_', '-')}" for n in ("pool", "schedd", "batch", "pool_python", "pool_submit")
                 if ctx.get_parameter_source(n) not in (None, click.core.ParameterSource.DEFAULT)]
    if not on_pool:
        if pool_only:
            raise click.UsageError(f"{pool_only[0]} goes with --on-pool")
        from osep.tune.sweep import run_local

        count = processes or len(os.sched_getaffinity(0))
        return lambda history, tasks, done: run_local(history, tasks, done, count)
    if processes is not None:
        raise click.UsageError("--processes goes with runs on this machine, not --on-pool")
    from osep.config.knobs import KNOBS, Overrides, parse_knobs
    from osep.htcondor import reach
    from osep.htcondor.onpool import OnPool, PoolRunner, parse_submit

    try:
        commands = tuple(parse_submit(pool_submit))
    except ValueError as exc:
        raise click.UsageError(f"--pool-submit {exc}") from None
    pool = parse_knobs(reach.knobs(KNOBS), Overrides(pool=pool)).pool
    return PoolRunner(OnPool(pool, schedd, batch, pool_python, commands), warn)


class _Progress:
    """A progress bar of the runs on stderr while a terminal shows it (click's; nothing otherwise)."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._shown = 0

    def __call__(self, finished: int, total: int) -> None:
        import sys

        if not sys.stderr.isatty():
            return
        if finished == 0 or self._bar is None:
            self.close()
            self._bar = click.progressbar(length=total, label="runs", file=sys.stderr, show_pos=True,
                                          show_eta=True)
            self._bar.__enter__()
            self._shown = 0
        self._bar.update(finished - self._shown)
        self._shown = finished

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

"""The ``osep`` command. The only module that prints or exits; everything it shows comes from the
pure renderers in :mod:`osep.ui.render`."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import click

from osep import __version__, log
from osep.config.bounds import MAX_INTERVAL, MAX_VACATES, MIN_INTERVAL
from osep.config.knobs import KNOBS, Overrides, parse_knobs
from osep.config.policy import load_policy
from osep.config.toml import Table, escape, read_toml
from osep.core.plan import Target, VictimOrder
from osep.core.resources import RESOURCES
from osep.core.tree import ShareTree
from osep.errors import ConfigError, OsepError
from osep.fairshare import NAMES as FAIRSHARE_NAMES
from osep.fairshare.cambridge import DEFAULT_CPU_LIMIT as CAMBRIDGE_ESTIMATE
from osep.fairshare.cambridge import DEFAULT_DEMAND as CAMBRIDGE_DEMAND
from osep.sim.variants import NAMES as POLICY_NAMES

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("table", "json", "csv")


def fail(exc: OsepError) -> NoReturn:
    """One line on stderr, whatever a file or a knob put in the message (control characters and
    terminal escapes are shown escaped), and exit status 2."""
    click.echo(f"osep: error: {escape(str(exc))}", err=True)
    sys.exit(2)


def fails_cleanly(func: F) -> F:
    """Turn osep's own errors into one line on stderr and exit status 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except OsepError as exc:
            fail(exc)

    return cast(F, wrapper)


def format_option(func: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="Output format.",
    )(func)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-level",
    type=click.Choice(log.LEVELS),
    default="warning",
    show_default=True,
    help="Least severe structured log event to write (info: every decision and action). "
         "[env OSEP_LOG_LEVEL]",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append JSON log lines here instead of standard error.",
)
@click.version_option(__version__, prog_name="osep")
@click.pass_context
def cli(ctx: click.Context, log_level: str, log_file: Path | None) -> None:
    """Owner-Share Enforcement Policy (OSEP) for HTCondor pools."""
    source = ctx.get_parameter_source("log_level")
    given = source is not None and source.name != "DEFAULT"
    env = os.environ.get("OSEP_LOG_LEVEL", "")
    if not given and env:
        try:
            log_level = parse_knobs({"OSEP_LOG_LEVEL": env}).log_level
        except ConfigError as exc:
            fail(ConfigError("environment", "OSEP_LOG_LEVEL", exc.reason))
        given = True
    stream = None
    if log_file is not None:
        try:
            stream = ctx.with_resource(log_file.open("a", encoding="utf-8"))
        except OSError as exc:
            raise click.BadParameter(f"cannot open {log_file}: {exc.strerror}",
                                     param_hint="--log-file") from None
    # Kept for subcommands whose own configuration (knobs) may name a log or a level.
    ctx.obj = {
        "stream": stream,
        "log_level": log_level,
        "log_level_given": given,
    }
    log.configure(log_level, stream)


@cli.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(POLICY_NAMES),
    help="Policy to simulate; repeat for several. Default: the scenario's own list.",
)
@format_option
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path),
              help="Also draw running slots per owner over time, ideal against real (PNG or SVG).")
@click.option("-p", "--max-vacates", type=click.IntRange(min=0, max=MAX_VACATES),
              help="At most this many vacates per cycle (p). Default: the scenario's, else the largest share.")
@click.option("-t", "--interval", type=click.FloatRange(min=MIN_INTERVAL, max=MAX_INTERVAL),
              help="Seconds between enforcement cycles (t).")
@click.option("--target", type=click.Choice([t.value for t in Target]),
              help="Hold owners to their owner share (paper) or their feasible share.")
@click.option("--victim-order", type=click.Choice([v.value for v in VictimOrder]),
              help="Vacate the lowest wall clock first (paper) or the least lost work first.")
@fails_cleanly
def simulate(
    scenario: Path,
    policies: tuple[str, ...],
    fmt: str,
    plot: Path | None,
    max_vacates: int | None,
    interval: float | None,
    target: str | None,
    victim_order: str | None,
) -> None:
    """Run SCENARIO on the simulated pool under each policy and compare the paper's metrics."""
    from osep.config.scenario import load_scenario
    from osep.sim.experiment import comparison, run_scenario, with_overrides
    from osep.ui import render

    loaded = load_scenario(scenario, interval)
    _skipped(loaded)
    settings = with_overrides(
        loaded.policy,
        max_vacates=max_vacates,
        target=Target(target) if target else None,
        victim_order=VictimOrder(victim_order) if victim_order else None,
    )
    _check_plot(plot)
    outcomes = run_scenario(loaded, policies or None, settings, interval)
    doc = comparison(loaded, outcomes)
    click.echo(render.RENDERERS[fmt](doc), nl=False)
    if plot is not None:
        from osep.ui.plot import draw

        try:
            draw(plot, loaded.name, outcomes)
        except OSError as exc:
            raise OsepError(f"cannot write the plot to {plot}: {exc.strerror or exc}") from None
        click.echo(f"plot written to {plot}", err=True)


def _skipped(scenario: Any) -> None:
    """One line on stderr for what a scenario's workload log left out."""
    if scenario.skipped:
        counts = ", ".join(f"{n} {reason}" for reason, n in sorted(scenario.skipped.items()))
        click.echo(f"{escape(scenario.path)}: workload lines left out: {counts} "
                   f"(e.g. {'; '.join(scenario.examples)})", err=True)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@fails_cleanly
def validate(files: tuple[Path, ...]) -> None:
    """Check policy and scenario FILES without running anything (exit 2 on the first bad one)."""
    from osep.config.scenario import load_scenario

    for path in files:
        data = read_toml(path)
        if "scenario" in Table(path, data).data:
            scenario = load_scenario(path)
            _skipped(scenario)
            click.echo(
                f"{escape(str(path))}: scenario {scenario.name!r}: {scenario.capacity} slots, "
                f"{len(scenario.jobs)} jobs, policies {', '.join(scenario.policies)}"
            )
        elif "usage" in data:
            from osep.config.sharesfile import load_shares_file

            loaded = load_shares_file(path)
            tree = loaded.tree
            click.echo(f"{escape(str(path))}: shares (for osep shares): {len(tree.parents)} nodes, "
                       f"{len(tree.leaves())} leaves, {tree.depth()} levels, usage for "
                       f"{len(loaded.usage)} of the leaves, unit {loaded.unit}")
        else:
            settings = load_policy(path).settings
            shares = settings.shares
            owners = len(shares.shares)
            if isinstance(shares, ShareTree):
                groups = len(shares.nodes) - owners
                summary = (f"an owner tree of {groups} groups and {owners} owners, "
                           f"{shares.depth()} levels")
            else:
                totals = ", ".join(
                    f"{sum(shares.amounts(r).values()):g}{'%' if shares.percent else ''} {r}"
                    for r in RESOURCES if r in shares.resources())
                summary = f"{owners} owners, {totals or 'nothing'} in all"
            click.echo(f"{escape(str(path))}: policy: {summary}, unit "
                       f"{settings.unit.value}, target {settings.target.value}, victims by "
                       f"{settings.victim_order.value}")


@cli.command()
@click.argument("file", type=click.Path(path_type=Path), required=False)
@click.option("--from-pool", is_flag=True,
              help="Print the negotiator's own group quotas (GROUP_NAMES, GROUP_QUOTA_*) as an osep "
                   "policy tree, to start a policy file from.")
@click.option("--pool", metavar="HOST[:PORT]", help="--from-pool: the collector to ask. [knob OSEP_POOL]")
@click.option("--model", "models", multiple=True, type=click.Choice(FAIRSHARE_NAMES),
              help="Show only this fair-share model (repeat for more). [default: all]")
@click.option("--dampening", type=click.FloatRange(min=0, min_open=True, max=1e6), default=1.0,
              show_default=True, help="Slurm's FairShareDampeningFactor d in F = 2^(-UE/S/d).")
@click.option("--demand", type=click.FloatRange(min=0, max=1e9), default=CAMBRIDGE_DEMAND,
              show_default=True, help="Cambridge: the predicted demand Np a job's price is worked out for.")
@click.option("--estimate", type=click.FloatRange(min=0, max=1e9), default=CAMBRIDGE_ESTIMATE,
              show_default=True, help="Cambridge: the job's estimated resource units Re (its CPU limit).")
@format_option
@fails_cleanly
def shares(file: Path | None, from_pool: bool, pool: str | None, models: tuple[str, ...],
           dampening: float, demand: float, estimate: float, fmt: str) -> None:
    """Every node of FILE's share tree under each fair-share model of the seeds: Slurm's classic
    fair share, Kay and Lauder's Share, Elmroth and Gardfjäll's Grid-wide fair share and Hazel's
    Cambridge scheme. FILE is a policy file with a [usage] table (full dotted leaf name = usage).
    With --from-pool instead: the pool's negotiator's group quotas as a policy tree (TOML)."""
    if from_pool:
        if file is not None:
            raise click.UsageError("FILE and --from-pool do not go together")
        _shares_from_pool(pool)
        return
    if file is None:
        raise click.UsageError("give a FILE, or --from-pool")
    if pool is not None:
        raise click.UsageError("--pool goes with --from-pool")
    from osep.config.sharesfile import load_shares_file
    from osep.fairshare import MODELS, Params
    from osep.ui.shares import SHARES_RENDERERS, shares_document

    loaded = load_shares_file(file)
    chosen = [m for m in MODELS if not models or m.name in models]
    params = Params(dampening=dampening, demand=demand, estimate=estimate)
    click.echo(SHARES_RENDERERS[fmt](shares_document(loaded, chosen, params)), nl=False)


def _shares_from_pool(pool: str | None) -> None:
    from osep.htcondor import groups
    from osep.htcondor import live as condor
    from osep.htcondor.settings import LiveSettings

    settings = parse_knobs(condor.knobs(KNOBS), Overrides(pool=pool))
    read = condor.read_group_quotas(LiveSettings(pool=settings.pool, retries=1))
    result = groups.translate(read.knobs, read.pool, condor.classad_value)
    click.echo(result.text, nl=False)
    if result.problems:  # each is a comment in the text too
        click.echo(f"osep: warning: {len(result.problems)} problem(s) in the negotiator's group "
                   "quotas: see the comments in the output", err=True)


@cli.command()
@click.option("--once", is_flag=True, help="Run one cycle and exit; the status says if it succeeded.")
@click.option("--dry-run/--no-dry-run", default=None,
              help="Decide and log everything, touch nothing. [knob OSEP_DRY_RUN]")
@click.option("--pool", metavar="HOST[:PORT]", help="Collector to use. [knob OSEP_POOL]")
@click.option("--policy-file", type=click.Path(path_type=Path),
              help="Policy file (owners and shares). [knob OSEP_POLICY_FILE]")
@click.option("-t", "--interval", type=click.FloatRange(min=MIN_INTERVAL, max=MAX_INTERVAL),
              help="Seconds between cycles (t). [knob OSEP_INTERVAL]")
@click.option("-p", "--max-vacates", type=click.IntRange(min=0, max=MAX_VACATES),
              help="At most this many vacates per cycle (p). [knob OSEP_MAX_VACATES]")
@click.option("--vacate-fast/--vacate-graceful", default=None,
              help="Vacate without the job's soft-kill grace period. [knob OSEP_VACATE_FAST]")
@click.option("--min-run-time", type=click.FloatRange(min=0),
              help="Never vacate a job that has run less than this (s). [knob OSEP_MIN_RUN_TIME]")
@click.option("--state-file", type=click.Path(path_type=Path),
              help="What a run leaves for the next: the ceilings osep set, vacates in progress, "
              "rooms kept. [knob OSEP_STATE_FILE]")
@click.pass_context
@fails_cleanly
def run(ctx: click.Context, once: bool, dry_run: bool | None, pool: str | None,
        policy_file: Path | None, interval: float | None, max_vacates: int | None,
        vacate_fast: bool | None, min_run_time: float | None, state_file: Path | None) -> None:
    """Enforce owner shares on a live HTCondor pool, every t seconds (or --once)."""
    import structlog

    from osep.config.knobs import KNOB_SOURCE, RunSettings, load_run_settings
    from osep.enforce.daemon import Daemon
    from osep.errors import ConfigError
    from osep.htcondor import live as condor

    overrides = Overrides(
        dry_run=dry_run, pool=pool, policy_file=policy_file, interval=interval,
        max_vacates=max_vacates, vacate_fast=vacate_fast, min_run_time=min_run_time,
        state_file=state_file,
    )
    first = True

    def load() -> RunSettings:
        nonlocal first
        if not first:
            condor.reload_config()
        first = False
        loaded = load_run_settings(condor.knobs(KNOBS), overrides)
        if loaded.daemon.state_file is None and not loaded.daemon.dry_run:
            # Every ceiling is recorded there before it is set, so that none is ever left behind.
            raise ConfigError(KNOB_SOURCE, "OSEP_STATE_FILE",
                              "osep run needs a state file to act (it records there every ceiling "
                              "before setting it): set OSEP_STATE_FILE, pass --state-file, or --dry-run")
        return loaded

    loaded = load()
    settings = loaded.daemon
    given = ctx.obj or {}
    stream = given.get("stream")
    if stream is None and settings.log is not None:
        try:
            stream = ctx.with_resource(settings.log.open("a", encoding="utf-8"))
        except OSError as exc:
            raise OsepError(f"cannot open the log {settings.log}: {exc.strerror}") from None
    level = given["log_level"] if given.get("log_level_given") else settings.log_level
    log.configure(level, stream)
    try:
        live = condor.LivePool(loaded.live)  # takes the state file's lock and reads it
    except OsepError as exc:  # a damaged state file, or another osep: in the log as well
        structlog.get_logger("osep").error("not_started", problem=str(exc))
        raise
    try:
        daemon = Daemon(load, live, initial=loaded)
        daemon.install_signal_handlers()
        status = daemon.run(once=once)
    finally:
        live.close()
    sys.exit(status)


@cli.command()
@click.option("--pool", metavar="HOST[:PORT]", help="Collector to use. [knob OSEP_POOL]")
@click.option("--state-file", type=click.Path(path_type=Path),
              help="Where osep records the ceilings it set. [knob OSEP_STATE_FILE]")
@fails_cleanly
def release(pool: str | None, state_file: Path | None) -> None:
    """Lift every negotiator ceiling osep set and has not lifted (after the last `run --once`)."""
    from osep.config.knobs import live_settings
    from osep.htcondor import live as condor

    settings = parse_knobs(condor.knobs(KNOBS), Overrides(pool=pool, state_file=state_file))
    if settings.state_file is None:
        raise OsepError("no state file: set OSEP_STATE_FILE or pass --state-file")
    live = condor.LivePool(live_settings(settings))  # takes the state file's lock and reads it
    try:
        before = live.ceilings.by_negotiator()
        failure = None
        try:
            live.release()
        except OsepError as exc:
            failure = exc
        after = live.ceilings.by_negotiator()
        left = live.ceilings.left
    finally:
        live.close()
    if not before:
        click.echo("no ceiling set by osep")
    for negotiator, ceilings in sorted(before.items()):
        for submitter, value in sorted(ceilings.items()):
            if submitter in left:
                click.echo(f"left the ceiling of {submitter} at {left[submitter]}: no longer the {value} "
                           "osep set")
            elif submitter not in after.get(negotiator, {}):
                click.echo(f"lifted the ceiling of {submitter} (was {value})")
    if after:
        kept = [f"{s} (through {n or 'a negotiator of an earlier version'})"
                for n, ceilings in sorted(after.items()) for s in sorted(ceilings)]
        more = f" and {len(kept) - 5} more" if len(kept) > 5 else ""
        why = f"{failure}" if failure is not None else "set through a negotiator other than this pool's"
        raise OsepError(f"{settings.state_file}: not lifted ({why}): {', '.join(kept[:5])}{more}; "
                        "they stay on record there")


@cli.command()
@click.option("--pool", metavar="HOST[:PORT]", help="Collector to ask. [knob OSEP_POOL]")
@click.option("--policy", "policy_file", type=click.Path(path_type=Path),
              help="Policy file (owners and shares). [knob OSEP_POLICY_FILE]")
@click.option("--sort", type=click.Choice(["owner", "gap", "running"]), default="owner",
              show_default=True, help="Order of the owners (gap: most over their target first).")
@click.option("--tree", is_flag=True,
              help="One row per group and owner of the policy's owner tree, indented by level.")
@click.option("--history", is_flag=True,
              help="Report what the loop did (from its decision log) instead of the pool now.")
@click.option("--decisions", type=click.Path(path_type=Path),
              help="The decision log for --history. [knob OSEP_LOG]")
@click.option("--since", metavar="TIME", help="--history from this time (ISO 8601, UTC unless "
              "it says otherwise, or seconds since the epoch).")
@click.option("--until", metavar="TIME", help="--history up to this time (not included).")
@format_option
@fails_cleanly
def report(pool: str | None, policy_file: Path | None, sort: str, tree: bool, history: bool,
           decisions: Path | None, since: str | None, until: str | None, fmt: str) -> None:
    """Who is over and under their share now, and what the next cycle would vacate (read-only; any
    user with READ access to the pool can run it). With --history: what the loop did, to whom and
    why, between two times."""
    from osep.config.knobs import live_settings
    from osep.htcondor import live as condor
    from osep.ui import render
    from osep.ui.reports import history_report, parse_time, pool_report

    if not history and (decisions or since or until):
        raise click.UsageError("--decisions, --since and --until go with --history")
    if history and (pool or policy_file or tree):
        raise click.UsageError("--pool, --policy and --tree do not go with --history")
    settings = parse_knobs(condor.knobs(KNOBS),
                           Overrides(pool=pool, policy_file=policy_file, log=decisions))
    if history:
        from osep.enforce.decisionlog import read_decisions

        if settings.log is None:
            raise OsepError("no decision log: pass --decisions FILE or set OSEP_LOG")
        window = []
        for name, text in (("--since", since), ("--until", until)):
            try:
                window.append(parse_time(text) if text is not None else None)
            except (ValueError, OverflowError):
                raise OsepError(f"{name}: not a time from 1970 to 2100 (ISO 8601 or seconds since "
                                f"the epoch): {escape(text or '')}") from None
        warn = Warnings()
        log = read_decisions(settings.log, warn, since=window[0], until=window[1])
        warn.close()
        doc = history_report(log, window[0], window[1])
        click.echo(render.HISTORY_RENDERERS[fmt](doc), nl=False)
        return
    if settings.policy_file is None:
        raise OsepError("no policy file: pass --policy FILE or set OSEP_POLICY_FILE")
    policy = load_policy(settings.policy_file).settings
    if tree and not isinstance(policy.shares, ShareTree):
        raise OsepError(f"{escape(str(settings.policy_file))}: the policy's owners are flat, not a "
                        "tree: --tree has nothing to show")
    # Read-only: one attempt per query, and the daemon's state file is none of its business.
    live = condor.LivePool(replace(live_settings(settings, retries=1, policy=policy), state_file=None))
    doc = pool_report(live.snapshot(), policy, sort)
    renderers = render.TREE_RENDERERS if tree else render.REPORT_RENDERERS
    click.echo(renderers[fmt](doc), nl=False)


class Warnings:
    """Prints warnings about the logs read on stderr: the first ``limit`` in full, then a count, so
    that a badly damaged log cannot flood the terminal."""

    def __init__(self, limit: int = 20) -> None:
        self.limit = limit
        self.count = 0

    def __call__(self, text: str) -> None:
        self.count += 1
        if self.count <= self.limit:
            click.echo(f"osep: warning: {text}", err=True)

    def close(self) -> None:
        if self.count > self.limit:
            click.echo(f"osep: warning: {self.count - self.limit} more warnings not shown",
                       err=True)


def progress_reporter() -> Callable[[int, float], None] | None:
    """A progress line on a terminal, nothing when stderr is a file or a pipe."""
    if not sys.stderr.isatty():
        return None
    import datetime

    def report(events: int, when: float) -> None:
        stamp = datetime.datetime.fromtimestamp(when, datetime.UTC)
        click.echo(f"\r{events:,} events, log time {stamp:%Y-%m-%d %H:%M} UTC", err=True, nl=False)

    return report


def _check_plot(plot: Path | None) -> None:
    if plot is not None and plot.suffix.lower() not in (".png", ".svg"):
        raise click.BadParameter("the plot is written as .png or .svg", param_hint="--plot")


@cli.command()
@click.argument("logs", nargs=-1, required=True, metavar="[OWNER=]LOG...")
@click.option("--policy", "policy_file", required=True,
              type=click.Path(path_type=Path),
              help="Policy file with the owners' shares the history is measured against.")
@click.option("--decisions", type=click.Path(path_type=Path),
              help="osep's JSON log for the same period: dates vacate signals, tells osep's "
                   "evictions from others', and gives the pool's size.")
@click.option("--slots", type=click.IntRange(min=1),
              help="Slots in the pool (default: the largest the decision log saw).")
@click.option("--what-if", "what_if", multiple=True,
              type=click.Choice(POLICY_NAMES),
              help="Also simulate the recorded workload under this policy; repeat for several.")
@click.option("--negotiation-interval", type=click.FloatRange(min=0, min_open=True),
              default=60.0, show_default=True, help="Negotiation cycle of the what-if pool (s).")
@click.option("--vacate-delay", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds a vacated job holds its slot in the what-if pool.")
@click.option("-p", "--max-vacates", type=click.IntRange(min=0),
              help="p for the what-if osep runs (default: the policy file's).")
@click.option("-t", "--interval", type=click.FloatRange(min=0, min_open=True),
              help="t for the what-if osep runs (default: the policy file's).")
@format_option
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path),
              help="Also draw running slots per owner over time, ideal against real (PNG or SVG).")
@fails_cleanly
def replay(logs: tuple[str, ...], policy_file: Path, decisions: Path | None, slots: int | None,
           what_if: tuple[str, ...], negotiation_interval: float, vacate_delay: float,
           max_vacates: int | None, interval: float | None, fmt: str, plot: Path | None) -> None:
    """Measure what HTCondor job event LOGs recorded: the paper's metrics against the ideal for the
    recorded demand, and, with --what-if, the same workload under other policies.

    A LOG is a user log or a schedd's EVENT_LOG. Give OWNER=LOG when its events do not name the
    owner (EVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner makes them do so).
    """
    from osep.htcondor.eventlog import read_event_log
    from osep.replay.study import LogSource, WhatIf, study
    from osep.sim.experiment import with_overrides
    from osep.ui import render

    _check_plot(plot)
    loaded = load_policy(policy_file)
    policy = with_overrides(loaded.settings, max_vacates=max_vacates)
    warn = Warnings()
    progress = progress_reporter()
    try:
        result = study(
            [LogSource.parse(text) for text in logs],
            policy,
            interval=interval if interval is not None else loaded.interval,
            read_log=read_event_log,
            warn=warn,
            decisions=decisions,
            slots=slots,
            what_if=WhatIf(tuple(dict.fromkeys(what_if)), negotiation_interval, vacate_delay),
            curves=plot is not None,
            progress=progress,
            excess=loaded.excess,
        )
    finally:
        if progress is not None:
            click.echo("", err=True)
        warn.close()
    click.echo(render.RENDERERS[fmt](result.document), nl=False)
    if plot is not None:
        from osep.ui.plot import draw_series

        try:
            draw_series(plot, result.document["scenario"]["name"], result.panels(),
                        origin=result.replay.start)
        except OSError as exc:
            raise OsepError(f"cannot write the plot to {plot}: {exc.strerror or exc}") from None
        click.echo(f"plot written to {plot}", err=True)


def main() -> None:
    cli(prog_name="osep")

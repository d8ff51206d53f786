"""``osep run``, ``osep release`` and ``osep report``: the commands that talk to a live pool (``osep doctor``,
which checks one, is :mod:`osep.ui.cmd_doctor`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from osep import log
from osep.bounds import MAX_INTERVAL, MAX_PORT, MAX_VACATES, MIN_INTERVAL
from osep.config.knobs import KNOBS, Overrides, check_address, parse_knobs
from osep.config.policy import load_policy
from osep.config.toml import escape
from osep.core.tree import ShareTree
from osep.errors import ConfigError, OsepError, PoolError
from osep.ui import exits
from osep.ui.shell import (
    Number,
    Warnings,
    cli,
    decisions_option,
    fails_cleanly,
    format_option,
    min_run_time_option,
    policy_file_option,
    pool_option,
    state_file_option,
)

if TYPE_CHECKING:
    from osep.ui.reports import Held


class Address(click.types.StringParamType):
    """An address to listen on, checked as the knob ``OSEP_METRICS_ADDRESS`` is."""

    name = "address"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return check_address(super().convert(value, param, ctx).strip(),
                                 lambda reason: ConfigError(None, None, reason))
        except ConfigError as exc:
            self.fail(exc.reason, param, ctx)


@cli.command()
@click.option("--once", is_flag=True, help="Run one cycle and exit; the status says if it succeeded.")
@click.option("--dry-run/--no-dry-run", default=None,
              help="Decide and log everything, touch nothing. [knob OSEP_DRY_RUN]")
@pool_option()
@policy_file_option("The policy file: the owners' shares and the policy's settings.", knob=True)
@click.option("-t", "--interval", type=Number(min=MIN_INTERVAL, max=MAX_INTERVAL),
              help="Seconds between cycles (t). [knob OSEP_INTERVAL]")
@click.option("-p", "--max-vacates", type=click.IntRange(min=0, max=MAX_VACATES),
              help="At most this many vacates per cycle (p). [knob OSEP_MAX_VACATES]")
@click.option("--vacate-fast/--vacate-graceful", default=None,
              help="Vacate without the job's soft-kill grace period. [knob OSEP_VACATE_FAST]")
@min_run_time_option("knob OSEP_MIN_RUN_TIME; default: the policy file's min_run_time")
@state_file_option("What a run leaves for the next: the ceilings osep set, vacates in progress, rooms kept.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=MAX_PORT),
              help="Serve Prometheus metrics on this TCP port (0: none; not with --once). "
              "[knob OSEP_METRICS_PORT]")
@click.option("--metrics-address", type=Address(),
              help="Where the metrics port listens (0.0.0.0: every interface). [default 127.0.0.1; "
              "knob OSEP_METRICS_ADDRESS]")
@click.pass_context
@fails_cleanly
def run(ctx: click.Context, once: bool, dry_run: bool | None, pool: str | None,
        policy_file: Path | None, interval: float | None, max_vacates: int | None,
        vacate_fast: bool | None, min_run_time: float | None, state_file: Path | None,
        metrics_port: int | None, metrics_address: str | None) -> None:
    """Enforce owner shares on a live HTCondor pool, every t seconds (or --once). Before touching
    anything it checks that every daemon grants the rights it will use (see osep doctor)."""
    import structlog

    from osep.config.knobs import KNOB_SOURCE, RunSettings, load_run_settings
    from osep.enforce.daemon import Daemon
    from osep.htcondor import live as condor
    from osep.htcondor import reach
    from osep.htcondor.probe import check_at_start

    if once and metrics_port:
        raise click.UsageError("--metrics-port does not go with --once: a run of one cycle is over "
                               "before Prometheus would scrape it")
    overrides = Overrides(
        dry_run=dry_run, pool=pool, policy_file=policy_file, interval=interval,
        max_vacates=max_vacates, vacate_fast=vacate_fast, min_run_time=min_run_time,
        state_file=state_file, metrics_port=metrics_port, metrics_address=metrics_address,
    )
    first = True

    def load() -> RunSettings:
        nonlocal first
        if not first:
            reach.reload_config()
        first = False
        loaded = load_run_settings(reach.knobs(KNOBS), overrides)
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

    def not_started(exc: OsepError) -> None:
        if stream is not None:  # in the log file as well (on stderr, the error's own line says it)
            structlog.get_logger("osep").error("not_started", problem=str(exc))

    try:
        live = condor.LivePool(loaded.live)  # takes the state file's lock and reads it
    except OsepError as exc:  # a damaged state file, or another osep
        not_started(exc)
        raise
    exporter = None
    try:
        # Every right a real run uses, probed before anything is touched: a daemon that does not
        # grant one stops the run here (exit status 1), with one line naming the right and the daemon.
        refused = check_at_start(loaded.live, settings.dry_run, settings.publish, structlog.get_logger("osep"))
        if refused is None:
            if settings.metrics_port:  # (prometheus_client is imported only when it is to serve)
                from osep.enforce.exporter import start as serve_metrics

                try:
                    exporter = serve_metrics(loaded, once)
                except OsepError as exc:  # its port taken, its address not this machine's
                    not_started(exc)
                    raise
            daemon = Daemon(load, live, initial=loaded, exporter=exporter)
            daemon.install_signal_handlers()
            status = daemon.run(once=once)
    finally:
        if exporter is not None:
            exporter.close()
        live.close()
    if refused is not None:
        click.echo(f"osep: error: {escape(refused)}", err=True)
        sys.exit(exits.POOL.code)
    if daemon.left_behind is not None:
        click.echo(f"osep: error: {escape(daemon.left_behind)}", err=True)
    sys.exit(status)


@cli.command()
@pool_option()
@state_file_option("Where osep run recorded the ceilings it set.")
@fails_cleanly
def release(pool: str | None, state_file: Path | None) -> None:
    """Lift every negotiator ceiling osep set and has not lifted (after the last `run --once`)."""
    from osep.config.knobs import live_settings
    from osep.htcondor import live as condor
    from osep.htcondor import reach

    settings = parse_knobs(reach.knobs(KNOBS), Overrides(pool=pool, state_file=state_file))
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
        raise PoolError(f"{settings.state_file}: not lifted ({why}): {', '.join(kept[:5])}{more}; "
                        "they stay on record there")


@cli.command()
@pool_option()
@policy_file_option("The policy file the pool is measured against.", knob=True)
@click.option("--sort", type=click.Choice(["owner", "gap", "running"]), default="owner",
              show_default=True, help="Order of the owners (gap: most over their target first).")
@click.option("--tree", is_flag=True,
              help="One row per group and owner of the policy's owner tree, indented by level.")
@state_file_option("osep's state file, whose ceilings Held shows.")
@click.option("--history", is_flag=True,
              help="Report what the loop did (from its decision log) instead of the pool now.")
@decisions_option("--history: the JSON log osep run wrote (its --log-file).", knob=True)
@click.option("--since", metavar="TIME", help="--history: from this time (ISO 8601, UTC unless "
              "it says otherwise, or seconds since the epoch).")
@click.option("--until", metavar="TIME", help="--history: up to this time (not included), as --since.")
@format_option
@fails_cleanly
def report(pool: str | None, policy_file: Path | None, sort: str, tree: bool, state_file: Path | None,
           history: bool, decisions: Path | None, since: str | None, until: str | None, fmt: str) -> None:
    """Who is over and under their share now, whom osep holds (the ceilings its state file records)
    and what the next cycle would vacate (read-only; any user with READ access to the pool can run
    it). With --history: what the loop did, to whom and why, between two times."""
    from osep.config.knobs import live_settings
    from osep.htcondor import live as condor
    from osep.htcondor import reach
    from osep.ui import render
    from osep.ui.reports import history_report, parse_time, pool_report

    if not history and (decisions or since or until):
        raise click.UsageError("--decisions, --since and --until go with --history")
    if history and (pool or policy_file or tree):
        raise click.UsageError("--pool, --policy-file and --tree do not go with --history")
    if history and state_file:
        raise click.UsageError("--state-file does not go with --history")
    settings = parse_knobs(reach.knobs(KNOBS),
                           Overrides(pool=pool, policy_file=policy_file, log=decisions, state_file=state_file))
    if history:
        from osep.replay.decisions import read_decisions

        if settings.log is None:
            raise OsepError("no decision log: pass --decisions PATH or set OSEP_LOG")
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
        raise OsepError("no policy file: pass --policy-file PATH or set OSEP_POLICY_FILE")
    policy = load_policy(settings.policy_file).settings
    if tree and not isinstance(policy.shares, ShareTree):
        raise OsepError(f"{escape(str(settings.policy_file))}: the policy's owners are flat, not a "
                        "tree: --tree has nothing to show")
    # Read-only: one attempt per query, and the state file read without its lock (the daemon's).
    live = condor.LivePool(replace(live_settings(settings, retries=1, policy=policy), state_file=None))
    snapshot = live.snapshot()
    doc = pool_report(snapshot, policy, sort, read_held(settings.state_file, live.charged))
    renderers = render.TREE_RENDERERS if tree else render.REPORT_RENDERERS
    click.echo(renderers[fmt](doc), nl=False)


def read_held(path: Path | None, charged: Mapping[str, set[str]]) -> Held:
    """The ceilings osep's state file at ``path`` records (``charged``: accounting name -> owners),
    read as ``osep release`` reads it but without its lock, which a running osep holds (the file is
    replaced whole, never written in place); why there are none to show if the file is not given,
    absent or unreadable (that is no error: the report goes on without them)."""
    from osep.htcondor.state import read_state
    from osep.htcondor.state_format import StateError
    from osep.ui.reports import Held

    if path is None:
        return Held(None, problem="no state file given (--state-file or OSEP_STATE_FILE): "
                    "Held shows whom the next cycle would hold, not the ceilings osep set")
    try:
        path.stat()
    except FileNotFoundError:
        return Held(str(path), problem=f"{path}: no such state file, so no ceiling osep set is on record")
    except (OSError, ValueError):
        pass  # reading it says why
    try:
        state = read_state(path)
    except StateError as exc:
        return Held(str(path), problem=f"{exc}: the ceilings osep set are not shown")
    ceilings = {s: (r.values[-1], r.since) for records in state.ceilings.values() for s, r in records.items()}
    return Held(str(path), ceilings, charged)

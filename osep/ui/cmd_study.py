"""``osep simulate`` and ``osep replay``: the research commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from osep.bounds import (
    MAX_COMPRESS,
    MAX_INTERVAL,
    MAX_JOBS,
    MAX_SECONDS,
    MAX_VACATES,
    MIN_COMPRESS,
    MIN_INTERVAL,
)
from osep.config.bundled import file_or_scenario
from osep.config.policy import load_policy
from osep.config.toml import escape
from osep.core.plan import Target, VictimOrder
from osep.errors import OsepError
from osep.replay.damage import MAX_SLOTS as REPLAY_SLOTS
from osep.sim.horizon import Horizon
from osep.sim.variants import NAMES as POLICY_NAMES
from osep.ui.shell import (
    Number,
    Warnings,
    check_plot,
    cli,
    decisions_option,
    fails_cleanly,
    format_option,
    min_run_time_option,
    policy_file_option,
    progress_reporter,
    skipped,
    trace_options,
    trace_window,
)


@cli.command()
@click.argument("scenario", type=click.Path(path_type=Path), required=False)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(POLICY_NAMES),
    help="A policy to simulate (by name); repeat for several. Default: the scenario's own list.",
)
@format_option
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path),
              help="Also draw running slots per owner over time, ideal against real (PNG or SVG).")
@click.option("-p", "--max-vacates", type=click.IntRange(min=0, max=MAX_VACATES),
              help="At most this many vacates per cycle (p). Default: the scenario's, else the largest share.")
@click.option("-t", "--interval", type=Number(min=MIN_INTERVAL, max=MAX_INTERVAL),
              help="Seconds between enforcement cycles (t).")
@min_run_time_option("default: the scenario's min_run_time (--trace: the policy file's), else 0")
@click.option("--target", type=click.Choice([t.value for t in Target]),
              help="Hold owners to their owner share (paper) or their feasible share.")
@click.option("--victim-order", type=click.Choice([v.value for v in VictimOrder]),
              help="Vacate the lowest wall clock first (paper) or the least lost work first.")
@click.option("--trace", type=click.Path(path_type=Path),  # the reader refuses what is no file
              help="Run a workload log in the Standard Workload Format (.swf or .swf.gz) instead of a "
                   "SCENARIO; the options below say how.")
@policy_file_option("--trace only (a SCENARIO file has its own [owners] and [policy]): the shares and policy "
                    "settings from this policy file. Default: shares in proportion to each owner's core-seconds "
                    "in the window.")
@click.option("--least", type=Number(min=0, max=1), default=0.01, show_default=True,
              help="--trace, without --policy-file: owners (groups) with less than this fraction of the "
                   "window's core-seconds get no share.")
@trace_options
@click.option("--limit", type=click.IntRange(min=1, max=MAX_JOBS),
              help="--trace: at most this many jobs, the first submitted.")
@click.option("--compress", type=Number(min=MIN_COMPRESS, max=MAX_COMPRESS), default=1.0,
              help="--trace: submit times divided by this (a higher load from the same jobs).")
@click.option("--negotiation-interval", type=Number(min=MIN_INTERVAL, max=MAX_INTERVAL),
              default=60.0, show_default=True, help="--trace: seconds between negotiation cycles.")
@click.option("--horizon", type=Number(min=0, max=MAX_SECONDS, min_open=True),
              help="--trace: stop the simulation at this second (jobs still queued or running are reported "
                   "unfinished).")
@fails_cleanly
def simulate(
    scenario: Path | None,
    policies: tuple[str, ...],
    fmt: str,
    plot: Path | None,
    max_vacates: int | None,
    interval: float | None,
    target: str | None,
    victim_order: str | None,
    min_run_time: float | None,
    trace: Path | None,
    owners: str,
    policy_file: Path | None,
    least: float,
    cores: int | None,
    cores_per_machine: int | None,
    from_second: float,
    until_second: float | None,
    days: float | None,
    limit: int | None,
    compress: float,
    negotiation_interval: float,
    horizon: float | None,
) -> None:
    """Run SCENARIO (or, with --trace, a workload log) on the simulated pool under each policy and
    compare the paper's metrics. SCENARIO is a scenario file, or the name of a bundled one
    (osep example --list shows them)."""
    from osep.config.scenario import load_scenario
    from osep.experiment.runs import comparison, run_scenario, with_overrides
    from osep.ui import render

    ctx = click.get_current_context()
    given = [f"--{name.replace('_', '-')}" for name in _TRACE_ONLY
             if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)]
    resolved = None
    if trace is None:
        if scenario is None:
            raise click.UsageError("give a SCENARIO file, or --trace with a workload log")
        if given:
            raise click.UsageError(f"{given[0]} goes with --trace")
        check_plot(plot)
        loaded = load_scenario(file_or_scenario(scenario), interval)
    else:
        if scenario is not None:
            raise click.UsageError("give a SCENARIO file or --trace, not both")
        end = trace_window(from_second, until_second, days)
        if policy_file is not None and ctx.get_parameter_source("least") is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError("--least sets shares from the log: it does not go with --policy-file")
        check_plot(plot)
        from osep.config.trace import TraceOptions, trace_scenario

        made = trace_scenario(TraceOptions(
            trace, owners, from_second, end, limit, compress, cores, cores_per_machine, least, policy_file,
            negotiation_interval, horizon), interval)
        loaded, resolved = made.scenario, made.resolved
        _describe(resolved, loaded.horizon)
    skipped(loaded)
    settings = with_overrides(
        loaded.policy,
        max_vacates=max_vacates,
        target=Target(target) if target else None,
        victim_order=VictimOrder(victim_order) if victim_order else None,
    )
    check_plot(plot)
    outcomes = run_scenario(loaded, policies or None, settings, interval, records=plot is not None,
                            min_run_time=min_run_time)
    doc = comparison(loaded, outcomes)
    if resolved is not None:
        doc["scenario"]["trace"] = resolved
    click.echo(render.RENDERERS[fmt](doc), nl=False)
    short = render.stopped_short(doc)
    if short is not None:
        click.echo(short, err=True)
    if plot is not None:
        from osep.ui.plot import draw

        try:
            draw(plot, loaded.name, outcomes)
        except OSError as exc:
            raise OsepError(f"cannot write the plot to {plot}: {exc.strerror or exc}") from None
        click.echo(f"plot written to {plot}", err=True)


# The options that describe a --trace run (an error with a SCENARIO file).
_TRACE_ONLY = ("owners", "policy_file", "least", "cores", "cores_per_machine", "from_second", "until_second", "days",
               "limit",
               "compress", "negotiation_interval", "horizon")


def _describe(resolved: dict[str, Any], horizon: Horizon | None) -> None:
    """What a --trace run is, resolved, on stderr (in full in --format json's scenario.trace)."""
    window = resolved["window"]
    until = "the end" if window["until"] is None else f"{window['until']:,.0f}"
    left = sum(resolved["skipped"].values())
    click.echo(f"{escape(resolved['trace'])}: {resolved['jobs']:,} jobs of {resolved['owners']:,} owners "
               f"({resolved['owners_by']}) submitted in [{window['since']:,.0f}, {until}) s"
               + (f", submit times / {window['compress']:g}" if window["compress"] != 1 else "")
               + f"; of {resolved['records']:,} records, {resolved['outside_window']:,} outside the window "
               f"and {left:,} left out", err=True)
    pool = resolved["pool"]
    if pool["partitionable"]:
        machines, per, last = pool["machines"], pool["cores_per_machine"], pool["last_machine_cores"]
        kind = f"{pool['cores']:,} cores in {machines:,} partitionable machine{'s' if machines != 1 else ''}"
        kind += (f" of {per:,} cores" if last == per else f" of {last:,} cores" if machines == 1 else
                 f": {machines - 1:,} of {per:,} cores and one of {last:,}")
    else:
        kind = f"{pool['cores']:,} one-core slots"
    click.echo(f"pool: {kind} (from {pool['from']}); negotiation every {resolved['negotiation_interval']:g} "
               f"s; simulated until {resolved['horizon']:,.0f} s at most{_set_by(horizon)}", err=True)
    shares = resolved["shares"]
    if "owners" not in shares:
        click.echo(f"shares: from {escape(shares['from'])}; {resolved['owners_without_share']:,} owners of the "
                   "log have none", err=True)
        return
    given = {o: s for o, s in shares["owners"].items() if _is_share(s)}
    shown = ", ".join(f"{escape(o)} {s if isinstance(s, str) else s['share']}" for o, s in list(given.items())[:6])
    click.echo(f"shares ({shares['unit']}): in proportion to {shares['from']}: {len(given):,} with a share "
               f"({shown}{', ...' if len(given) > 6 else ''}); all in --format json", err=True)


def _set_by(horizon: Horizon | None) -> str:
    """Who set a run's horizon, in a few words."""
    if horizon is None:
        return ""
    return f" ({horizon.by})" if horizon.given else " (the simulator's bound)"


def _is_share(share: Any) -> bool:
    text = share if isinstance(share, str) else share["share"]
    return bool(text.rstrip("%").strip("0."))


@cli.command()
@click.argument("logs", nargs=-1, required=True, metavar="[OWNER=]LOG...")
@policy_file_option("The policy file with the owners' shares the history is measured against.", required=True)
@decisions_option("The JSON log osep run wrote for the same period (its --log-file): dates vacate signals, "
                  "tells osep's evictions from others', and gives the pool's size.")
@click.option("--slots", type=click.IntRange(min=1, max=REPLAY_SLOTS),
              help="The pool's size in slots, one core each in the what-if pool (default: the largest the "
                   "decision log saw).")
@click.option("--what-if", "what_if", multiple=True,
              type=click.Choice(POLICY_NAMES),
              help="Also simulate the recorded workload under this policy (a name, as simulate's --policy); "
                   "repeat for several.")
@click.option("--negotiation-interval", type=Number(min=MIN_INTERVAL, max=MAX_INTERVAL),
              default=60.0, show_default=True, help="Negotiation cycle of the what-if pool (s).")
@click.option("--vacate-delay", type=Number(min=0, max=MAX_INTERVAL), default=10.0, show_default=True,
              help="Seconds a vacated job holds its slot in the what-if pool.")
@click.option("-p", "--max-vacates", type=click.IntRange(min=0, max=MAX_VACATES),
              help="p for the what-if osep runs (default: the policy file's).")
@click.option("-t", "--interval", type=Number(min=MIN_INTERVAL, max=MAX_INTERVAL),
              help="t for the what-if osep runs (default: the policy file's).")
@min_run_time_option("default: the policy file's min_run_time", runs="the what-if osep runs")
@format_option
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path),
              help="Also draw running slots per owner over time, ideal against real (PNG or SVG).")
@fails_cleanly
def replay(logs: tuple[str, ...], policy_file: Path, decisions: Path | None, slots: int | None,
           what_if: tuple[str, ...], negotiation_interval: float, vacate_delay: float,
           max_vacates: int | None, interval: float | None, min_run_time: float | None, fmt: str,
           plot: Path | None) -> None:
    """Measure what HTCondor job event LOGs recorded: the paper's metrics against the ideal for the
    recorded demand, and, with --what-if, the same workload under other policies.

    A LOG is a user log or a schedd's EVENT_LOG. Give OWNER=LOG when its events do not name the
    owner (EVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner makes them do so).
    """
    from osep.htcondor.eventlog import read_event_rows
    from osep.replay.study import LogSource, WhatIf, study
    from osep.ui import render

    check_plot(plot)
    loaded = load_policy(policy_file)
    policy = loaded.settings
    if max_vacates is not None:  # the simulator is imported for what-if runs only
        from osep.experiment.runs import with_overrides

        policy = with_overrides(policy, max_vacates=max_vacates)
    warn = Warnings()
    progress = progress_reporter()
    try:
        result = study(
            [LogSource.parse(text) for text in logs],
            policy,
            interval=interval if interval is not None else loaded.interval,
            read_log=read_event_rows,
            warn=warn,
            decisions=decisions,
            slots=slots,
            what_if=WhatIf(tuple(dict.fromkeys(what_if)), negotiation_interval, vacate_delay),
            curves=plot is not None,
            progress=progress,
            excess=loaded.excess,
            min_run_time=min_run_time if min_run_time is not None else loaded.min_run_time,
        )
    finally:
        if progress is not None:
            click.echo("", err=True)
        warn.close()
    click.echo(render.RENDERERS[fmt](result.document), nl=False)
    short = render.stopped_short(result.document)
    if short is not None:
        click.echo(short, err=True)
    if plot is not None:
        from osep.ui.plot import draw_series

        try:
            draw_series(plot, result.document["scenario"]["name"], result.panels(),
                        origin=result.replay.start)
        except OSError as exc:
            raise OsepError(f"cannot write the plot to {plot}: {exc.strerror or exc}") from None
        click.echo(f"plot written to {plot}", err=True)

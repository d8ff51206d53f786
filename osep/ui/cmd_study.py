"""``osep simulate`` and ``osep replay``: the research commands."""

from __future__ import annotations

from pathlib import Path

import click

from osep.config.bounds import MAX_INTERVAL, MAX_VACATES, MIN_INTERVAL
from osep.config.policy import load_policy
from osep.core.plan import Target, VictimOrder
from osep.errors import OsepError
from osep.sim.variants import NAMES as POLICY_NAMES
from osep.ui.shell import Warnings, check_plot, cli, fails_cleanly, format_option, progress_reporter, skipped


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
    skipped(loaded)
    settings = with_overrides(
        loaded.policy,
        max_vacates=max_vacates,
        target=Target(target) if target else None,
        victim_order=VictimOrder(victim_order) if victim_order else None,
    )
    check_plot(plot)
    outcomes = run_scenario(loaded, policies or None, settings, interval, records=plot is not None)
    doc = comparison(loaded, outcomes)
    click.echo(render.RENDERERS[fmt](doc), nl=False)
    if plot is not None:
        from osep.ui.plot import draw

        try:
            draw(plot, loaded.name, outcomes)
        except OSError as exc:
            raise OsepError(f"cannot write the plot to {plot}: {exc.strerror or exc}") from None
        click.echo(f"plot written to {plot}", err=True)


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

    check_plot(plot)
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

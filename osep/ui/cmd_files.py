"""``osep validate`` and ``osep shares``: checking files, and the share models by hand."""

from __future__ import annotations

from pathlib import Path

import click

from osep.config.bundled import file_or_scenario
from osep.config.knobs import KNOBS, Overrides, parse_knobs
from osep.config.policy import load_policy
from osep.config.toml import Table, escape, read_toml
from osep.core.resources import RESOURCES
from osep.core.tree import ShareTree
from osep.fairshare import NAMES as FAIRSHARE_NAMES
from osep.fairshare.cambridge import DEFAULT_CPU_LIMIT as CAMBRIDGE_ESTIMATE
from osep.fairshare.cambridge import DEFAULT_DEMAND as CAMBRIDGE_DEMAND
from osep.ui.shell import Number, cli, fails_cleanly, format_option, pool_option, skipped


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@fails_cleanly
def validate(files: tuple[Path, ...]) -> None:
    """Check policy and scenario FILES without running anything (exit 2 on the first bad one). A
    FILE may be the name of a bundled scenario (osep example --list shows them)."""
    from osep.config.scenario import load_scenario

    for given in files:
        path = file_or_scenario(given)
        data = read_toml(path)
        if "scenario" in Table(path, data).data:
            scenario = load_scenario(path, data=data)  # the file read once
            skipped(scenario)
            from osep.experiment.runs import pool_facts
            from osep.ui.render import pool_size

            click.echo(
                f"{escape(str(path))}: scenario {scenario.name!r}: {pool_size(pool_facts(scenario))}, "
                f"{len(scenario.jobs)} jobs, policies {', '.join(scenario.policies)}"
                + (f" (osep over {scenario.excess.value})" if scenario.excess.value != "fairshare" else "")
            )
        elif "usage" in data:
            from osep.config.sharesfile import load_shares_file

            loaded = load_shares_file(path)
            tree = loaded.tree
            click.echo(f"{escape(str(path))}: shares (for osep shares): {len(tree.parents)} nodes, "
                       f"{len(tree.leaves())} leaves, {tree.depth()} levels, usage for "
                       f"{len(loaded.usage)} of the leaves, unit {loaded.unit}")
        else:
            policy = load_policy(path)
            settings = policy.settings
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
                       f"{settings.victim_order.value}, p {_p(settings.max_vacates)}, t {policy.interval:g} s, "
                       f"min run time {policy.min_run_time:g} s"
                       + (f", excess ordered by {policy.excess.value} (simulations)"
                          if policy.excess.value != "fairshare" else ""))


def _p(max_vacates: int | None) -> str:
    return "the largest share" if max_vacates is None else str(max_vacates)


@cli.command()
@click.argument("file", type=click.Path(path_type=Path), required=False)
@click.option("--from-pool", is_flag=True,
              help="Print the negotiator's own group quotas (GROUP_NAMES, GROUP_QUOTA_*) as an osep "
                   "policy tree, to start a policy file from.")
@pool_option("--from-pool: the pool")
@click.option("--model", "models", multiple=True, type=click.Choice(FAIRSHARE_NAMES),
              help="Show only this fair-share model (repeat for more). [default: all]")
@click.option("--dampening", type=Number(min=0, min_open=True, max=1e6), default=1.0,
              show_default=True, help="Slurm's FairShareDampeningFactor d in F = 2^(-UE/S/d).")
@click.option("--demand", type=Number(min=0, max=1e9), default=CAMBRIDGE_DEMAND,
              show_default=True, help="Cambridge: the predicted demand Np a job's price is worked out for.")
@click.option("--estimate", type=Number(min=0, max=1e9), default=CAMBRIDGE_ESTIMATE,
              show_default=True, help="Cambridge: the job's estimated resource units Re (its CPU limit).")
@click.option("--wide", is_flag=True,
              help="Table: every column of every model, and names whole (wider than 100 columns).")
@format_option
@fails_cleanly
def shares(file: Path | None, from_pool: bool, pool: str | None, models: tuple[str, ...],
           dampening: float, demand: float, estimate: float, wide: bool, fmt: str) -> None:
    """Every node of FILE's share tree under each fair-share model of the seeds: Slurm's classic
    fair share, Kay and Lauder's Share, Elmroth and Gardfjäll's Grid-wide fair share and Hazel's
    Cambridge scheme. FILE is a policy file, with a [usage] table (full dotted leaf name = usage) or
    without (no usage), or a scenario (its owners, no usage; a bundled one by name). The table shows
    each model's main columns in 100 columns; --wide, JSON and CSV show them all.
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
    if wide and fmt != "table":
        raise click.UsageError("--wide goes with --format table (JSON and CSV have every column)")
    from osep.config.sharesfile import load_shares_file
    from osep.fairshare import MODELS, Params
    from osep.ui.shares import SHARES_RENDERERS, shares_document, shares_table

    loaded = load_shares_file(file_or_scenario(file))
    chosen = [m for m in MODELS if not models or m.name in models]
    params = Params(dampening=dampening, demand=demand, estimate=estimate)
    doc = shares_document(loaded, chosen, params)
    click.echo(shares_table(doc, wide) if fmt == "table" else SHARES_RENDERERS[fmt](doc), nl=False)


def _shares_from_pool(pool: str | None) -> None:
    from osep.config.livepool import LiveSettings
    from osep.htcondor import group_reader, quota_shares, reach
    from osep.htcondor.reading import classad_value

    settings = parse_knobs(reach.knobs(KNOBS), Overrides(pool=pool))
    read = group_reader.read_group_quotas(LiveSettings(pool=settings.pool, retries=1))
    result = quota_shares.translate(read.knobs, read.pool_size, classad_value)
    click.echo(result.text, nl=False)
    if result.problems:  # each is a comment in the text too
        click.echo(f"osep: warning: {len(result.problems)} problem(s) in the negotiator's group "
                   "quotas: see the comments in the output", err=True)

"""Running a scenario under several policies (:mod:`osep.sim.variants`), side by side.

Each run's metrics are fed as it goes (:class:`osep.sim.watch.Metering`): a run keeps the jobs in
flight, not a record of every job, unless its records are asked for (plots, tests).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from osep.act.actuator import Limits
from osep.config.scenario import Scenario
from osep.core.model import Snapshot
from osep.core.plan import Target
from osep.core.policy import PolicySettings
from osep.core.resources import RESOURCES, Unit, Vec, held, measure
from osep.core.tree import ShareTree
from osep.errors import OsepError
from osep.measure.documents import column, document
from osep.measure.meter import Meter
from osep.measure.metrics import Metrics
from osep.measure.pieces import Ideal
from osep.measure.records import Dominant, JobRecord
from osep.measure.trees import group_shares, top_group, tree_ideal
from osep.sim.driver import simulate
from osep.sim.horizon import Horizon
from osep.sim.specs import Checkpointing, JobSpec, Order, PoolSettings, SimResult
from osep.sim.variants import VARIANTS, Variant
from osep.sim.watch import Metering, Weigh, in_slots


@dataclass(frozen=True, slots=True)
class Outcome:
    """One policy's run. ``shares``, ``capacity`` and the weights of ``records`` are in
    ``resource`` (see :func:`measured_in`), as are the metrics' areas."""

    variant: Variant
    policy: PolicySettings
    interval: float
    shares: dict[str, float]
    result: SimResult
    metrics: Metrics
    resource: str = "slots"
    capacity: float = 0.0
    records: tuple[JobRecord, ...] = ()  # kept only when asked for
    dominant: Dominant | None = None  # PV in dominant shares (unit = "dominant")
    groups: Metrics | None = None  # an owner tree's top-level groups, measured as owners
    negotiator: str = "fairshare"  # the simulated negotiator's order (osep.sim.orderings)
    min_run_time: float = 0.0  # the youngest job a vacate took (s; enforcing variants)


def measured_in(settings: PolicySettings) -> str:
    """The resource a run is measured in: the policy's unit (cores for dominant shares)."""
    return "cpus" if settings.unit is Unit.DOMINANT else settings.unit.value


def capacity_in(scenario: Scenario, resource: str) -> float:
    return totals(scenario)[RESOURCES.index(resource)]


def weigher(resource: str) -> Weigh:
    """What a job weighs in ``resource`` (what it asked for of it; 1 in slots), and holds of every
    resource (its request)."""
    if resource == "slots":
        return in_slots
    return lambda spec: (float(getattr(spec, resource)), held(spec.shape))


def weighed(records: tuple[JobRecord, ...], jobs: Mapping[Hashable, JobSpec], resource: str
            ) -> tuple[JobRecord, ...]:
    """The records with each job weighing what it asked for of ``resource`` (1 in slots), and
    holding its request of every resource."""
    if resource == "slots":
        return records
    weigh = weigher(resource)
    return tuple(replace(r, weight=w, amount=a) for r in records for w, a in (weigh(jobs[r.id]),))


def totals(scenario: Scenario) -> Vec:
    """The scenario's pool in every resource, counted as a snapshot of it empty counts it."""
    return Snapshot(0.0, tuple(s.as_slot() for s in scenario.slots), ()).totals()


def dominant_measures(scenario: Scenario, settings: PolicySettings) -> Dominant | None:
    """Each owner's dominant-share measure for the scenario's pool (None unless the unit is dominant)."""
    if settings.unit is not Unit.DOMINANT:
        return None
    capacity = totals(scenario)
    owners = {}
    for owner, shares in settings.shares.resolve_all(capacity).items():
        owned, entitled = measure(Unit.DOMINANT, shares, capacity)
        if entitled > 0:
            owners[owner] = owned
    return owners, measure(Unit.DOMINANT, {}, capacity)[0]


def pool_settings(scenario: Scenario, variant: Variant) -> PoolSettings:
    """The scenario's pool with the variant's negotiator (for an enforcing one, the policy's
    ``excess``), and checkpointing only where it has it."""
    return replace(
        scenario.pool,
        order=scenario.excess if variant.enforce else variant.order,
        checkpointing=scenario.pool.checkpointing if variant.checkpoint else Checkpointing.NONE,
    )


def run_policy(
    scenario: Scenario, name: str, policy: PolicySettings | None = None,
    interval: float | None = None, logger: Any = None, records: bool = False,
    min_run_time: float | None = None,
) -> Outcome:
    """Simulate ``scenario`` under the policy called ``name``.

    ``policy``, ``interval`` and ``min_run_time`` replace the scenario's own (the CLI uses them for
    option overrides). An enforcing policy's actuator vacates no job that has run less than
    ``min_run_time``: it is left alone that cycle, and the next cycle decides again.
    ``records``: keep every job's record in the outcome (for a plot).
    """
    variant = VARIANTS[name]
    settings = policy if policy is not None else scenario.policy
    if variant.enforce and settings.target is Target.FEASIBLE and scenario.excess is not Order.FAIRSHARE:
        raise OsepError(f"{scenario.name}: with feasible targets osep itself shares what owners leave "
                        f"unused; the policy's excess = \"{scenario.excess.value}\" needs owner targets")
    resource = measured_in(settings)
    capacity = capacity_in(scenario, resource)
    shares = settings.shares.resolve(capacity, resource)
    log = logger if logger is not None else structlog.get_logger("osep")
    interval = interval if interval is not None else scenario.interval
    least = min_run_time if min_run_time is not None else scenario.min_run_time
    jobs = placed(scenario.jobs, settings)
    pool = pool_settings(scenario, variant)
    dominant = dominant_measures(scenario, settings)
    meter = Meter(shares, capacity, origin=0.0, dominant=dominant, ideal=ideal(settings))
    meters: list[tuple[Meter, Callable[[str], str] | None]] = [(meter, None)]
    groups = group_meter(capacity, settings)
    if groups is not None:
        meters.append(groups)
    result = simulate(
        scenario.slots,
        jobs,
        pool,
        shares,
        policy=settings if variant.enforce else None,
        interval=interval,
        limits=Limits(min_run_time=least),
        logger=log.bind(policy=name, scenario=scenario.name),
        tree=settings.shares,
        resource=resource,
        watch=Metering(meters, weigher(resource)),
        records=records,
    )
    kept = weighed(result.jobs, {j.id: j for j in jobs}, resource) if records else ()
    return Outcome(variant, settings, interval, shares, result, meter.result(), resource, capacity,
                   kept, dominant, groups[0].result() if groups is not None else None,
                   pool.order.value, least)


def group_meter(capacity: float, settings: PolicySettings
                ) -> tuple[Meter, Callable[[str], str]] | None:
    """With an owner tree, a meter of its top-level groups, and the group each owner is counted
    for: each group's ideal is its feasible share among the groups."""
    tree = settings.shares
    if not isinstance(tree, ShareTree):
        return None
    tops: dict[str, str] = {}

    def top(owner: str) -> str:
        group = tops.get(owner)
        if group is None:
            group = tops[owner] = top_group(tree, owner)
        return group

    return Meter(group_shares(tree, capacity), capacity, origin=0.0), top


def placed(jobs: tuple[JobSpec, ...], settings: PolicySettings) -> tuple[JobSpec, ...]:
    """The jobs with each owner named as the policy's owner tree places it (a scenario names its
    jobs' owners by accounting name, ``vo1.project2.user3``); unchanged with flat shares."""
    tree = settings.shares
    if not isinstance(tree, ShareTree):
        return jobs
    return tuple(j if tree.owner_of(j.owner) == j.owner else replace(j, owner=tree.owner_of(j.owner))
                 for j in jobs)


def ideal(settings: PolicySettings) -> Ideal | None:
    """An owner tree's feasible shares for the metrics (None: flat water-filling)."""
    return tree_ideal(settings.shares if isinstance(settings.shares, ShareTree) else None)


def run_scenario(
    scenario: Scenario,
    names: tuple[str, ...] | None = None,
    policy: PolicySettings | None = None,
    interval: float | None = None,
    logger: Any = None,
    records: bool = False,
    min_run_time: float | None = None,
) -> dict[str, Outcome]:
    return {n: run_policy(scenario, n, policy, interval, logger, records, min_run_time)
            for n in (names or scenario.policies)}


def with_overrides(settings: PolicySettings, **changes: Any) -> PolicySettings:
    """``settings`` with every change that is not None applied."""
    return replace(settings, **{k: v for k, v in changes.items() if v is not None})


def outcome_column(out: Outcome, pool: Vec, horizon: Horizon | None = None) -> dict[str, Any]:
    """``pool``: the scenario's, in every resource (p depends on it as the decision saw it);
    ``horizon``: where its run was to stop at the latest, and why (see :func:`stopped_short`)."""
    settings = None
    if out.variant.enforce:
        settings = {
            "target": out.policy.target.value,
            "victim_order": out.policy.victim_order.value,
            "max_vacates": out.policy.budget_for(pool),
            "interval": out.interval,
            "min_run_time": out.min_run_time,
            "unit": out.policy.unit.value,
            "excess": out.negotiator,
        }
    extra: dict[str, Any] = {}
    unfinished = out.result.unfinished
    if unfinished:  # the run stopped at its horizon with these still queued or running
        extra["unfinished"] = unfinished
        if horizon is not None:
            extra["stopped_short"] = stopped_short(out.result, horizon)
    if out.groups is not None:
        extra["groups"] = column(out.groups, "top-level groups")["owners"]
    return column(out.metrics, out.variant.description, settings, **extra)


def stopped_short(result: SimResult, horizon: Horizon) -> dict[str, Any]:
    """Where and why a run with jobs left stopped: ``at`` the last event or cycle by its horizon
    (``horizon``, in seconds), set ``by`` the simulator's bound (``"bound"``: the run was cut
    short) or the file or option that gave it; ``why`` and ``advice`` (how to run longer) in words."""
    return {"at": result.end, "horizon": horizon.seconds, "by": horizon.by, "why": horizon.named(),
            "advice": horizon.advice()}


def pool_facts(scenario: Scenario) -> dict[str, int]:
    """What a scenario's pool is made of, as a document says it: its ``slots`` (a static slot or a
    core of a partitionable machine each) and, where it has any, its partitionable ``machines`` and
    their ``machine_cores`` (:func:`osep.ui.render.pool_size` puts it in words)."""
    facts = {"slots": scenario.capacity}
    machines = [s for s in scenario.slots if s.partitionable]
    if machines:
        facts["machines"] = len(machines)
        facts["machine_cores"] = sum(s.cpus for s in machines)
    return facts


def comparison(scenario: Scenario, outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    """The JSON document for a side-by-side run (also the source of the table and CSV)."""
    info = {
        "name": scenario.name,
        "file": scenario.path,
        "description": scenario.description,
        **pool_facts(scenario),
        "jobs": len(scenario.jobs),
    }
    first = next(iter(outcomes.values()), None)
    resource = first.resource if first is not None else "slots"
    dominant = first is not None and first.dominant is not None
    pool = totals(scenario)
    return document(info, {n: outcome_column(o, pool, scenario.horizon) for n, o in outcomes.items()},
                    resource, dominant)

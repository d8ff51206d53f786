"""Running a scenario under several policies, side by side.

A policy name stands for a negotiator and an enforcement setting; all of them run on the same pool,
workload and owner shares:

- ``none``: first come, first served matching, no preemption;
- ``fairshare``: matching ordered by the Fair-Share factor 2^(-U/S), no preemption;
- ``osep``: the Fair-Share negotiator (as in a real HTCondor pool) plus the OSEP enforcement loop;
  vacated jobs start over;
- ``osep-ckpt``: the same with checkpointing as the scenario's [checkpoint] table says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import structlog

from osep.metrics import Metrics, compute
from osep.policy import PolicySettings
from osep.scenario import Scenario
from osep.simulator import Checkpointing, Order, PoolSettings, SimResult, simulate


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    description: str
    order: Order
    enforce: bool
    checkpoint: bool


VARIANTS = {
    v.name: v
    for v in (
        Variant("none", "first come, first served; no preemption", Order.FIFO, False, False),
        Variant("fairshare", "Fair-Share priority orders matching; no preemption",
                Order.FAIRSHARE, False, False),
        Variant("osep", "OSEP enforcement over a Fair-Share negotiator; no checkpointing",
                Order.FAIRSHARE, True, False),
        Variant("osep-ckpt", "OSEP enforcement with checkpointing", Order.FAIRSHARE, True, True),
    )
}


@dataclass(frozen=True, slots=True)
class Outcome:
    variant: Variant
    policy: PolicySettings
    shares: dict[str, float]
    result: SimResult
    metrics: Metrics


def pool_settings(scenario: Scenario, variant: Variant) -> PoolSettings:
    return PoolSettings(
        negotiation_interval=scenario.negotiation_interval,
        vacate_delay=scenario.vacate_delay,
        reservation_timeout=scenario.reservation_timeout,
        order=variant.order,
        half_life=scenario.half_life,
        initial_usage=scenario.initial_usage,
        checkpointing=scenario.checkpointing if variant.checkpoint else Checkpointing.NONE,
        checkpoint_interval=scenario.checkpoint_interval,
        horizon=scenario.horizon,
    )


def run_policy(
    scenario: Scenario, name: str, policy: PolicySettings | None = None, logger: Any = None
) -> Outcome:
    """Simulate ``scenario`` under the policy called ``name``.

    ``policy`` replaces the scenario's own settings (the CLI uses it for option overrides).
    """
    variant = VARIANTS[name]
    settings = policy if policy is not None else scenario.policy
    shares = settings.shares.resolve(scenario.capacity)
    log = logger if logger is not None else structlog.get_logger("osep")
    result = simulate(
        scenario.slots,
        scenario.jobs,
        pool_settings(scenario, variant),
        shares,
        policy=settings if variant.enforce else None,
        logger=log.bind(policy=name, scenario=scenario.name),
    )
    return Outcome(variant, settings, shares, result, compute(result.jobs, result.capacity, shares))


def run_scenario(
    scenario: Scenario,
    names: tuple[str, ...] | None = None,
    policy: PolicySettings | None = None,
    logger: Any = None,
) -> dict[str, Outcome]:
    return {n: run_policy(scenario, n, policy, logger) for n in (names or scenario.policies)}


def with_overrides(settings: PolicySettings, **changes: Any) -> PolicySettings:
    """``settings`` with every change that is not None applied."""
    return replace(settings, **{k: v for k, v in changes.items() if v is not None})

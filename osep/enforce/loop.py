"""One enforcement cycle: snapshot, decide, act, log. The daemon calls it on a timer against the live
pool; the simulator calls it on virtual time against the simulated pool. Same code, different pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from osep.core.plan import Claim, Plan, Vacate
from osep.core.policy import PolicySettings, decide
from osep.core.pool import Pool
from osep.enforce.actuator import ActionResult, Actuator, Limits
from osep.enforce.decisionlog import Outcome, Recorder
from osep.measure.sampled import SampledMetrics


@dataclass(frozen=True, slots=True)
class CycleReport:
    cycle: int
    plan: Plan
    results: tuple[ActionResult, ...]

    @property
    def sent(self) -> list[Vacate]:
        """Vacates actually sent to the pool this cycle."""
        return [r.action for r in self.results
                if isinstance(r.action, Vacate) and r.outcome is Outcome.DONE]

    @property
    def vacated(self) -> int:
        return len(self.sent)

    @property
    def skipped(self) -> int:
        """Planned actions the actuator did not carry out (dry run, re-check, rate limit, failure)."""
        return sum(1 for r in self.results if r.outcome is not Outcome.DONE)


class Enforcer:
    """Runs cycles of the policy against one pool through one actuator."""

    def __init__(self, settings: PolicySettings, actuator: Actuator, logger: Any = None) -> None:
        self.settings = settings
        self.actuator = actuator
        self.record = Recorder(logger if logger is not None else structlog.get_logger("osep"))
        self.cycles = 0
        self.metrics = SampledMetrics()

    def reconfigure(self, settings: PolicySettings, limits: Limits) -> None:
        """A new policy and limits (a reload); the cycle count, metrics and the actuator's memory of
        recent vacates stay."""
        self.settings = settings
        self.actuator.limits = limits

    def run_cycle(self, pool: Pool) -> CycleReport:
        self.cycles += 1
        snapshot = pool.snapshot()
        plan = decide(snapshot, self.settings)
        record = self.record.bind(cycle=self.cycles, time=plan.time)
        for view in plan.owners:
            if (view.gap > 0 and view.idle > view.reserved) or view.gap <= -1:
                record.owner(view)
        planned: tuple[Vacate | Claim, ...] = (*plan.vacates, *plan.claims)
        for action in planned:
            record.decision(action)
        results = tuple(self.actuator.apply(plan, record))
        report = CycleReport(cycle=self.cycles, plan=plan, results=results)
        self.metrics.add(plan, report.sent)
        record.cycle(plan, report.vacated, report.skipped, self.metrics.fields())
        return report

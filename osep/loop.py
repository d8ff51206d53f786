"""One enforcement cycle: snapshot, decide, act, log. The daemon calls it on a timer against the live
pool; the simulator calls it on virtual time against the simulated pool. Same code, different pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from osep.actuator import ActionResult, Actuator, Outcome
from osep.model import Plan, Vacate
from osep.policy import PolicySettings, decide
from osep.pool import Pool


@dataclass(frozen=True, slots=True)
class CycleReport:
    cycle: int
    plan: Plan
    results: tuple[ActionResult, ...]

    @property
    def vacated(self) -> int:
        """Vacates actually sent to the pool this cycle."""
        return sum(
            1 for r in self.results if isinstance(r.action, Vacate) and r.outcome is Outcome.DONE
        )

    @property
    def skipped(self) -> int:
        """Planned actions the actuator did not carry out (dry run, re-check, rate limit, failure)."""
        return sum(1 for r in self.results if r.outcome is not Outcome.DONE)


class Enforcer:
    """Runs cycles of the policy against one pool through one actuator."""

    def __init__(self, settings: PolicySettings, actuator: Actuator, logger: Any = None) -> None:
        self.settings = settings
        self.actuator = actuator
        self.log = logger if logger is not None else structlog.get_logger("osep")
        self.cycles = 0

    def run_cycle(self, pool: Pool) -> CycleReport:
        self.cycles += 1
        log = self.log.bind(cycle=self.cycles)
        snapshot = pool.snapshot()
        plan = decide(snapshot, self.settings)
        log = log.bind(time=plan.time)
        for view in plan.owners:
            if (view.gap > 0 and view.idle > view.reserved) or view.gap <= -1:
                log.debug(
                    "owner",
                    owner=view.owner,
                    share=view.share,
                    target=view.target,
                    feasible=view.feasible,
                    running=view.running,
                    idle=view.idle,
                    reserved=view.reserved,
                    gap=view.gap,
                )
        for vacate in plan.vacates:
            log.info(
                "decision",
                kind="vacate",
                job=vacate.job,
                owner=vacate.owner,
                beneficiary=vacate.beneficiary,
                run_time=vacate.run_time,
                lost_work=vacate.lost_work,
                reason=vacate.reason.text(),
            )
        for claim in plan.claims:
            log.info(
                "decision",
                kind="claim",
                slot=claim.slot,
                beneficiary=claim.beneficiary,
                reason=claim.reason.text(),
            )
        results = tuple(self.actuator.apply(plan, log))
        report = CycleReport(cycle=self.cycles, plan=plan, results=results)
        log.info(
            "cycle",
            capacity=plan.capacity,
            owners=len(plan.owners),
            planned_vacates=len(plan.vacates),
            vacated=report.vacated,
            claims=len(plan.claims),
            skipped=report.skipped,
            notes=list(plan.notes),
        )
        return report

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


@dataclass(slots=True)
class Tally:
    """The paper's metrics as the loop itself sees them, accrued from cycle to cycle.

    Between two cycles the pool is taken to stay as the earlier snapshot showed it, so these are
    sampled estimates at the loop's own resolution (t); replay of the event logs gives exact figures.
    PV: sum over owners of max(0, feasible share - running jobs), times the time to the next cycle.
    LC: slots reserved for an owner and not yet running its job, times the same.
    PC: work lost by the vacates actually sent (since each job's last checkpoint); ``lost_work_
    without_checkpoints`` is what they would have lost with no checkpoint at all (their run time).
    """

    last: float | None = None
    violation: float = 0.0
    capacity_loss: float = 0.0
    cost: float = 0.0
    lost_work_without_checkpoints: float = 0.0
    vacates: int = 0
    _shortfall: float = 0.0
    _idle_reserved: float = 0.0

    def add(self, plan: Plan, results: tuple[ActionResult, ...]) -> None:
        if self.last is not None and plan.time > self.last:
            elapsed = plan.time - self.last
            self.violation += self._shortfall * elapsed
            self.capacity_loss += self._idle_reserved * elapsed
        self.last = plan.time
        self._shortfall = sum(max(0.0, v.feasible - v.running) for v in plan.owners)
        self._idle_reserved = sum(v.reserved for v in plan.owners)
        for result in results:
            if isinstance(result.action, Vacate) and result.outcome is Outcome.DONE:
                self.vacates += 1
                self.cost += result.action.lost_work
                self.lost_work_without_checkpoints += result.action.run_time
                self._idle_reserved += 1


class Enforcer:
    """Runs cycles of the policy against one pool through one actuator."""

    def __init__(self, settings: PolicySettings, actuator: Actuator, logger: Any = None) -> None:
        self.settings = settings
        self.actuator = actuator
        self.log = logger if logger is not None else structlog.get_logger("osep")
        self.cycles = 0
        self.tally = Tally()

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
        self.tally.add(plan, results)
        log.info(
            "cycle",
            capacity=plan.capacity,
            owners=len(plan.owners),
            planned_vacates=len(plan.vacates),
            vacated=report.vacated,
            claims=len(plan.claims),
            skipped=report.skipped,
            notes=list(plan.notes),
            PV=self.tally.violation,
            LC=self.tally.capacity_loss,
            PC=self.tally.cost,
            vacates_total=self.tally.vacates,
            lost_work_without_checkpoints=self.tally.lost_work_without_checkpoints,
        )
        return report

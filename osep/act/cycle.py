"""One enforcement cycle: snapshot, decide, act, log. The daemon calls it on a timer against the live
pool; the simulator calls it on virtual time against the simulated pool. Same code, different pool.

Given clocks (the daemon's), each cycle's ``cycle`` event says where its time went (see
:mod:`osep.timing`); a pool with ``timed_snapshot`` (the live one) splits its snapshot into queries and
translation. The simulator's cycles are not timed: their time is virtual, and their logs stay the same
from run to run."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import structlog

from osep.act.actuator import ActionResult, Actuator, Limits, logs
from osep.act.records import Outcome, Recorder
from osep.core.model import Snapshot
from osep.core.plan import Claim, Plan, Vacate
from osep.core.policy import PolicySettings, decide
from osep.core.pool import Pool
from osep.measure.sampled import SampledMetrics
from osep.timing import ACT, DECIDE, SNAPSHOT, Clocks, Phases


@runtime_checkable
class TimedPool(Protocol):
    """A pool that says where its snapshot's time went: its queries (per daemon) and translating
    their answers."""

    def timed_snapshot(self, phases: Phases) -> Snapshot: ...


@dataclass(frozen=True, slots=True)
class CycleReport:
    cycle: int
    plan: Plan
    results: tuple[ActionResult, ...]
    # Wall seconds per phase, and the whole cycle ("cycle"); empty when the cycle was not timed.
    seconds: Mapping[str, float] = field(default_factory=dict)
    # The holds this cycle set (owner -> allowance; none in a dry run or when they could not be
    # set), and the steps beside ``results`` that failed: "hold" and "reserve", with their counts.
    held: Mapping[str, int] = field(default_factory=dict)
    steps_failed: Mapping[str, int] = field(default_factory=dict)

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

    def __init__(self, settings: PolicySettings, actuator: Actuator, logger: Any = None,
                 clocks: Clocks | None = None) -> None:
        self.settings = settings
        self.clocks = clocks  # None: cycles are not timed
        self.actuator = actuator
        self.record = Recorder(logger if logger is not None else structlog.get_logger("osep"))
        self.cycles = 0
        self.metrics = SampledMetrics()

    def reconfigure(self, settings: PolicySettings, limits: Limits) -> None:
        """A new policy and limits (a reload); the cycle count, metrics and the actuator's memory of
        recent vacates stay."""
        self.settings = settings
        self.actuator.limits = limits

    def _act(self, plan: Plan, record: Recorder) -> tuple[ActionResult, ...]:
        """Log the plan's decisions (as far as the log keeps them) and carry out its actions."""
        if logs(record, logging.DEBUG):
            for view in plan.owners:
                if (view.gap > 0 and view.idle > view.reserved) or view.gap <= -1:
                    record.owner(view)
        if logs(record, logging.INFO):
            planned: tuple[Vacate | Claim, ...] = (*plan.vacates, *plan.claims)
            for action in planned:
                record.decision(action)
        return tuple(self.actuator.apply(plan, record))

    def run_cycle(self, pool: Pool, phases: Phases | None = None) -> CycleReport:
        """One cycle. ``phases``: where the caller's part of the cycle went already (the daemon's
        lease and state file); a timed cycle makes its own if none is given."""
        self.cycles += 1
        timed = phases is not None or self.clocks is not None
        if not timed:  # (the simulator's cycles: the same steps, without timing each)
            plan = decide(pool.snapshot(), self.settings)
            record = self.record.bind(cycle=self.cycles, time=plan.time)
            results = self._act(plan, record)
        else:
            if phases is None:
                phases = Phases(self.clocks)
            if isinstance(pool, TimedPool):
                snapshot = pool.timed_snapshot(phases)
            else:
                with phases.timing(SNAPSHOT):
                    snapshot = pool.snapshot()
            with phases.timing(DECIDE):
                plan = decide(snapshot, self.settings)
            # Nothing after the decision reads the snapshot. One taken from a kept pool view (the
            # simulator's) would otherwise copy every job out of the view at the view's next
            # change.
            del snapshot
            record = self.record.bind(cycle=self.cycles, time=plan.time)
            with phases.timing(ACT):
                results = self._act(plan, record)
        # What CycleReport.sent and .skipped say, worked out once (a cycle may have a thousand).
        done = Outcome.DONE
        sent = [r.action for r in results if r.outcome is done and isinstance(r.action, Vacate)]
        skipped = sum(1 for r in results if r.outcome is not done)
        self.metrics.add(plan, sent)
        timing = phases.fields() if phases is not None else {}
        report = CycleReport(cycle=self.cycles, plan=plan, results=results,
                             seconds=timing.get("seconds", {}), held=self.actuator.holds_set,
                             steps_failed=self.actuator.steps_failed)
        if logs(record, logging.INFO):
            (record.bind(**timing) if timing else record).cycle(plan, len(sent), skipped,
                                                                self.metrics.fields())
        return report

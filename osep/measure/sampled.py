"""The paper's metrics as the enforcement loop itself sees them, accrued from cycle to cycle.

Between two cycles the pool is taken to stay as the earlier plan showed it, so these are sampled
estimates at the loop's own resolution (t), for the daemon's log and ad; replay of the event logs
(:mod:`osep.measure.meter`) gives exact figures.

- PV: sum over owners of max(0, feasible share - running jobs), times the time to the next cycle.
- LC: slots reserved for an owner and not yet running its job, times the same.
- PC: work lost by the vacates actually sent (since each job's last checkpoint);
  ``lost_work_without_checkpoints`` is what they would have lost with no checkpoint at all (their run
  time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from osep.core.plan import Plan, Vacate


@dataclass(slots=True)
class SampledMetrics:
    last: float | None = None
    violation: float = 0.0
    capacity_loss: float = 0.0
    cost: float = 0.0
    lost_work_without_checkpoints: float = 0.0
    vacates: int = 0
    _shortfall: float = 0.0
    _idle_reserved: float = 0.0

    def add(self, plan: Plan, sent: Sequence[Vacate]) -> None:
        """One cycle: its plan, and the vacates actually sent."""
        if self.last is not None and plan.time > self.last:
            elapsed = plan.time - self.last
            self.violation += self._shortfall * elapsed
            self.capacity_loss += self._idle_reserved * elapsed
        self.last = plan.time
        self._shortfall = sum(max(0.0, v.feasible - v.running) for v in plan.owners)
        self._idle_reserved = sum(v.reserved for v in plan.owners)
        for vacate in sent:
            self.vacates += 1
            self.cost += vacate.lost_work
            self.lost_work_without_checkpoints += vacate.run_time
            self._idle_reserved += 1

    def fields(self) -> dict[str, float]:
        """As the cycle event of the decision log carries them."""
        return {"PV": self.violation, "LC": self.capacity_loss, "PC": self.cost,
                "vacates_total": self.vacates,
                "lost_work_without_checkpoints": self.lost_work_without_checkpoints}

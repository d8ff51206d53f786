"""The decision log's events, as the enforcement cycle and the actuator write them.

Every cycle logs a ``decision`` event per planned vacate or claim (with the rule that justified it),
an ``action`` event per step carried out (with its :class:`Outcome`) and a ``cycle`` event with the
cycle's figures; each carries the cycle number, so a decision is joined to its action by run, cycle
and job. Cycle numbers start again at 1 whenever the daemon starts (a ``started`` event). The one
reader of these events is :mod:`osep.replay.decisions`; it takes its event names from here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from osep.core.plan import Claim, OwnerView, Plan, Vacate

STARTED, CYCLE_FAILED, DECISION, ACTION, CYCLE = "started", "cycle_failed", "decision", "action", "cycle"


class Outcome(enum.Enum):
    """What became of a planned action."""

    DONE = "done"
    DRY_RUN = "dry-run"
    CHANGED = "skipped-changed"
    RATE_LIMITED = "skipped-rate-limit"
    FAILED = "failed"


OUTCOMES = frozenset(o.value for o in Outcome)
_DRY: dict[str, Any] = {"dry_run": True}  # beside the outcome of every action a dry run logs


class Recorder:
    """Writes the decision log's events through a structlog logger (with whatever context it has
    bound: the policy and scenario in a simulation, the cycle and its time in the daemon)."""

    def __init__(self, log: Any) -> None:
        self.log = log

    def bind(self, **context: Any) -> Recorder:
        return Recorder(self.log.bind(**context))

    def started(self, **details: Any) -> None:
        self.log.info(STARTED, **details)

    def cycle_failed(self, cycle: int, problem: str) -> None:
        self.log.error(CYCLE_FAILED, cycle=cycle, problem=problem)

    def owner(self, view: OwnerView) -> None:
        self.log.debug("owner", owner=view.owner, share=view.share, target=view.target,
                       feasible=view.feasible, running=view.running, idle=view.idle,
                       reserved=view.reserved, gap=view.gap)

    def decision(self, action: Vacate | Claim) -> None:
        if isinstance(action, Vacate):
            self.log.info(DECISION, kind="vacate", job=str(action.job), owner=action.owner,
                          beneficiary=action.beneficiary, run_time=action.run_time,
                          lost_work=action.lost_work, reason=action.reason.text())
        else:
            self.log.info(DECISION, kind="claim", slot=action.slot,
                          beneficiary=action.beneficiary, reason=action.reason.text())

    def action(self, action: Vacate | Claim, outcome: Outcome, detail: str) -> None:
        """A vacate or claim carried out (or not: ``outcome``); a dry run's with ``dry_run`` true."""
        dry: dict[str, Any] = _DRY if outcome is Outcome.DRY_RUN else {}
        if isinstance(action, Vacate):
            self.log.info(ACTION, kind="vacate", job=str(action.job), owner=action.owner,
                          slot=action.slot, place=action.place, group=action.group,
                          room=list(action.room), beneficiary=action.beneficiary,
                          run_time=action.run_time, lost_work=action.lost_work,
                          outcome=outcome.value, detail=detail, **dry)
        else:
            self.log.info(ACTION, kind="claim", slot=action.slot, room=list(action.shape),
                          beneficiary=action.beneficiary, outcome=outcome.value, detail=detail, **dry)

    def reserve_failed(self, vacate: Vacate, problem: str) -> None:
        """The room a group of vacates made could not be kept for its beneficiary."""
        self.log.error(ACTION, kind="reserve", slot=vacate.place, beneficiary=vacate.beneficiary,
                       outcome=Outcome.FAILED.value, detail=problem)

    def hold(self, holds: Mapping[str, int], outcome: Outcome, detail: str = "") -> None:
        """The holds set (owner -> allowance), all in one event; a dry run's, one event each."""
        level = self.log.error if outcome is Outcome.FAILED else self.log.info
        fields: dict[str, Any] = {"owners": list(holds), "allowance": dict(holds),
                                  "outcome": outcome.value}
        if detail:
            fields["detail"] = detail
        if outcome is Outcome.DRY_RUN:
            fields.update(_DRY)
        level(ACTION, kind="hold", **fields)

    def cycle(self, plan: Plan, vacated: int, skipped: int, metrics: Mapping[str, float]) -> None:
        self.log.info(CYCLE, capacity=plan.size, unit=plan.unit.value, slots=plan.capacity,
                      owners=len(plan.owners),
                      planned_vacates=len(plan.vacates), vacated=vacated, claims=len(plan.claims),
                      skipped=skipped, notes=list(plan.notes), **metrics)

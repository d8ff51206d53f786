"""The daemon's decision log: the one writer of the events below and the one reader of them.

Every cycle logs a ``decision`` event per planned vacate or claim (with the rule that justified it) and
then an ``action`` event per carried-out step (with its :class:`Outcome`); both carry the cycle number,
so one is joined to the other by run, cycle and job, and a ``cycle`` event with the cycle's figures.
Cycle numbers start again at 1 whenever the daemon starts (a ``started`` event), hence the run
counter. The loop and the actuator write through :class:`Recorder`; ``osep report --history``
summarises what :func:`read_decisions` reads back, and ``osep replay`` uses the vacates that were sent
to date each eviction's signal and to tell osep's evictions from anybody else's.

Other events in the same log (``reloaded``, ``stopped``, ``ceiling``...) are for people; the reader
passes over them.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osep.core.model import JobId
from osep.core.plan import Claim, OwnerView, Plan, Vacate
from osep.errors import LogError

STARTED, CYCLE_FAILED, DECISION, ACTION, CYCLE = "started", "cycle_failed", "decision", "action", "cycle"


class Outcome(enum.Enum):
    """What became of a planned action."""

    DONE = "done"
    DRY_RUN = "dry-run"
    CHANGED = "skipped-changed"
    RATE_LIMITED = "skipped-rate-limit"
    FAILED = "failed"


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
        if isinstance(action, Vacate):
            self.log.info(ACTION, kind="vacate", job=str(action.job), owner=action.owner,
                          slot=action.slot, place=action.place, group=action.group,
                          room=list(action.room), beneficiary=action.beneficiary,
                          run_time=action.run_time, lost_work=action.lost_work,
                          outcome=outcome.value, detail=detail)
        else:
            self.log.info(ACTION, kind="claim", slot=action.slot, room=list(action.shape),
                          beneficiary=action.beneficiary, outcome=outcome.value, detail=detail)

    def reserve_failed(self, vacate: Vacate, problem: str) -> None:
        """The room a group of vacates made could not be kept for its beneficiary."""
        self.log.error(ACTION, kind="reserve", slot=vacate.place, beneficiary=vacate.beneficiary,
                       outcome=Outcome.FAILED.value, detail=problem)

    def hold(self, holds: Mapping[str, int], outcome: Outcome, detail: str = "") -> None:
        level = self.log.error if outcome is Outcome.FAILED else self.log.info
        fields: dict[str, Any] = {"owners": list(holds), "allowance": dict(holds),
                                  "outcome": outcome.value}
        if detail:
            fields["detail"] = detail
        level(ACTION, kind="hold", **fields)

    def cycle(self, plan: Plan, vacated: int, skipped: int, metrics: Mapping[str, float]) -> None:
        self.log.info(CYCLE, capacity=plan.capacity, owners=len(plan.owners),
                      planned_vacates=len(plan.vacates), vacated=vacated, claims=len(plan.claims),
                      skipped=skipped, notes=list(plan.notes), **metrics)


@dataclass(frozen=True, slots=True)
class Action:
    run: int
    cycle: int
    time: float
    kind: str  # vacate | claim
    outcome: Outcome
    owner: str | None  # vacate: whose job
    beneficiary: str | None
    job: JobId | None = None
    slot: str | None = None
    run_time: float = 0.0
    lost_work: float = 0.0
    detail: str | None = None
    reason: str | None = None



@dataclass(slots=True)
class DecisionLog:
    path: str
    actions: list[Action] = field(default_factory=list)
    cycles: int = 0
    failed_cycles: int = 0
    runs: int = 0
    capacity: int | None = None  # the largest pool the loop saw
    first: float | None = None
    last: float | None = None
    held_cycles: dict[str, int] = field(default_factory=dict)  # owner -> cycles spent held

    def vacates_sent(self) -> dict[JobId, list[float]]:
        """The job as its schedd's event logs name it (no schedd) -> times a vacate was sent for it,
        oldest first."""
        out: dict[JobId, list[float]] = {}
        for a in self.actions:
            if a.kind == "vacate" and a.outcome is Outcome.DONE and a.job is not None:
                out.setdefault(a.job.in_schedd, []).append(a.time)
        for times in out.values():
            times.sort()
        return out


def read_decisions(
    path: Path,
    warn: Callable[[str], None],
    since: float | None = None,
    until: float | None = None,
) -> DecisionLog:
    """The log's cycles and actions with ``since <= time < until``. Lines that are not JSON objects
    (a cut-off last line, something else written to the same file) are passed to ``warn``."""
    log = DecisionLog(str(path))
    reasons: dict[tuple[int, int, str, str], str] = {}
    cycle_time: float | None = None
    try:
        handle = path.open("r", encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LogError(f"cannot read the decision log {path}: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
                if not isinstance(event, dict):
                    raise ValueError("not an object")
            except ValueError:
                warn(f"{path}: line {number}: not a JSON log event, skipped")
                continue
            name = event.get("event")
            if name == STARTED:
                log.runs += 1
                reasons.clear()
                continue
            time = _number(event.get("time"))
            if time is None:
                if name == CYCLE_FAILED and _inside(cycle_time, since, until):
                    log.failed_cycles += 1
                continue
            cycle_time = time
            if not _inside(time, since, until):
                continue
            run, cycle = max(1, log.runs), int(_number(event.get("cycle")) or 0)
            try:
                _take(log, event, name, run, cycle, time, reasons)
            except (KeyError, TypeError, ValueError) as exc:
                warn(f"{path}: line {number}: {name} event with a bad field ({exc}), skipped")
    return log


def _take(log: DecisionLog, event: dict[str, Any], name: Any, run: int, cycle: int, time: float,
          reasons: dict[tuple[int, int, str, str], str]) -> None:
    kind = event.get("kind")
    if name == DECISION and kind in ("vacate", "claim"):
        what = str(event.get("job") if kind == "vacate" else event.get("slot"))
        reasons[(run, cycle, kind, what)] = str(event.get("reason", ""))
    elif name == ACTION and kind in ("vacate", "claim"):
        what = str(event.get("job") if kind == "vacate" else event.get("slot"))
        job = _text(event.get("job"))
        log.actions.append(Action(
            run=run, cycle=cycle, time=time, kind=kind, outcome=Outcome(event["outcome"]),
            owner=_text(event.get("owner")), beneficiary=_text(event.get("beneficiary")),
            job=JobId.parse(job) if job is not None else None, slot=_text(event.get("slot")),
            run_time=float(event.get("run_time") or 0.0),
            lost_work=float(event.get("lost_work") or 0.0),
            detail=_text(event.get("detail")),
            reason=reasons.pop((run, cycle, kind, what), None),
        ))
    elif name == ACTION and kind == "hold" and event.get("outcome") == Outcome.DONE.value:
        for owner in event.get("owners") or ():
            log.held_cycles[str(owner)] = log.held_cycles.get(str(owner), 0) + 1
    elif name == CYCLE:
        log.cycles += 1
        capacity = _number(event.get("capacity"))
        if capacity is not None:
            log.capacity = max(log.capacity or 0, int(capacity))
        log.first = time if log.first is None else min(log.first, time)
        log.last = time if log.last is None else max(log.last, time)


def _inside(time: float | None, since: float | None, until: float | None) -> bool:
    if time is None:
        return False
    return (since is None or time >= since) and (until is None or time < until)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)

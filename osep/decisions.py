"""Reading the daemon's own JSON log back: what the loop decided, what it did, and why.

Every cycle logs a ``decision`` event per planned vacate or claim (with the rule that justified it) and
then an ``action`` event per carried-out step (with its outcome); both carry the cycle number, so one is
joined to the other by run, cycle and job. Cycle numbers start again at 1 whenever the daemon starts
(a ``started`` event), hence the run counter. ``osep report --history`` summarises these; ``osep
replay`` uses the vacates that were sent to date each eviction's signal and to tell osep's evictions
from anybody else's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osep.errors import LogError


@dataclass(frozen=True, slots=True)
class Action:
    run: int
    cycle: int
    time: float
    kind: str  # vacate | claim
    outcome: str  # done | dry-run | changed | rate-limited | failed
    owner: str | None  # vacate: whose job
    beneficiary: str | None
    job: str | None = None
    slot: str | None = None
    run_time: float = 0.0
    lost_work: float = 0.0
    detail: str | None = None
    reason: str | None = None

    @property
    def job_key(self) -> str | None:
        """``cluster.proc``, as the job event logs name the job (live ids are ``schedd#cluster.proc``)."""
        return None if self.job is None else self.job.rsplit("#", 1)[-1]


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

    def vacates_sent(self) -> dict[str, list[float]]:
        """``cluster.proc`` -> times a vacate was sent for it, oldest first."""
        out: dict[str, list[float]] = {}
        for a in self.actions:
            if a.kind == "vacate" and a.outcome == "done" and a.job_key is not None:
                out.setdefault(a.job_key, []).append(a.time)
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
            if name == "started":
                log.runs += 1
                reasons.clear()
                continue
            time = _number(event.get("time"))
            if time is None:
                if name == "cycle_failed" and _inside(cycle_time, since, until):
                    log.failed_cycles += 1
                continue
            cycle_time = time
            if not _inside(time, since, until):
                continue
            run, cycle = max(1, log.runs), int(_number(event.get("cycle")) or 0)
            try:
                _take(log, event, name, run, cycle, time, reasons)
            except (TypeError, ValueError) as exc:
                warn(f"{path}: line {number}: {name} event with a bad field ({exc}), skipped")
    return log


def _take(log: DecisionLog, event: dict[str, Any], name: Any, run: int, cycle: int, time: float,
          reasons: dict[tuple[int, int, str, str], str]) -> None:
    kind = event.get("kind")
    if name == "decision" and kind in ("vacate", "claim"):
        what = str(event.get("job") if kind == "vacate" else event.get("slot"))
        reasons[(run, cycle, kind, what)] = str(event.get("reason", ""))
    elif name == "action" and kind in ("vacate", "claim"):
        what = str(event.get("job") if kind == "vacate" else event.get("slot"))
        log.actions.append(Action(
            run=run, cycle=cycle, time=time, kind=kind, outcome=str(event["outcome"]),
            owner=_text(event.get("owner")), beneficiary=_text(event.get("beneficiary")),
            job=_text(event.get("job")), slot=_text(event.get("slot")),
            run_time=float(event.get("run_time") or 0.0),
            lost_work=float(event.get("lost_work") or 0.0),
            detail=_text(event.get("detail")),
            reason=reasons.pop((run, cycle, kind, what), None),
        ))
    elif name == "action" and kind == "hold" and event.get("outcome") == "done":
        for owner in event.get("owners") or ():
            log.held_cycles[str(owner)] = log.held_cycles.get(str(owner), 0) + 1
    elif name == "cycle":
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

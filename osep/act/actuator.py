"""Where plans become actions, and so where every safety rule lives.

The policy may plan whatever it likes; only this module touches a pool. It refuses a vacate in dry
run, past the cycle's cap, when the victim changed since the snapshot, ran less than the minimum run
time or was vacated too often this hour, and when another vacate for the same room may not go.
docs/policy.md gives each refusal. Holds are set before any vacate is sent, so no negotiation cycle
falls between a vacate and the hold that keeps its room; if they cannot be set, no vacate is sent.
The victims are re-checked together in one look at the pool; a look that fails fails every re-check
it was for, so nothing is vacated unchecked. A fault in one action is that action's failure, logged;
the rest of the cycle goes on. A vacate that may have gone through (no answer, or a fault) counts as
sent for the caps, and the room it was for stays kept.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import structlog

from osep.act.records import Outcome, Recorder
from osep.core.drafts import maker
from osep.core.model import JobId, JobState
from osep.core.plan import Claim, Plan, Vacate
from osep.core.pool import Look, Pool
from osep.errors import PoolError, UnknownOutcome

HOUR = 3600.0
# (A module's name is read several times faster than an enum's member.)
_RUNNING = JobState.RUNNING
_DONE, _DRY_RUN, _FAILED = Outcome.DONE, Outcome.DRY_RUN, Outcome.FAILED
_CHANGED, _RATE_LIMITED = Outcome.CHANGED, Outcome.RATE_LIMITED
FORGET_AT = 4096  # jobs with recent vacates kept before those older than an hour are forgotten


@dataclass(frozen=True, slots=True)
class Limits:
    dry_run: bool = False
    # None: the plan's own budget is the only cap.
    max_vacates_per_cycle: int | None = None
    max_vacates_per_job_per_hour: int | None = None
    min_run_time: float = 0.0


@dataclass(frozen=True, slots=True)
class ActionResult:
    action: Vacate | Claim
    outcome: Outcome
    detail: str = ""
    possibly_done: bool = False  # failed with no answer: it may have been carried out


# ``ActionResult(...)`` with every field given, positionally, at a fraction of the cost (a simulated
# week has some 500,000 results).
_result = cast(Callable[[Vacate | Claim, Outcome, str, bool], ActionResult], maker(ActionResult))


class Actuator:
    """Applies plans to one pool. Keeps the little state safety needs (recent vacates per job)."""

    def __init__(self, pool: Pool, limits: Limits = Limits(),
                 recent: dict[JobId, deque[float]] | None = None) -> None:
        self.pool = pool
        self.limits = limits
        # job -> when it was vacated; given, it is the pool's (which keeps it between runs)
        self._recent: dict[JobId, deque[float]] = recent if recent is not None else {}
        self._forget_at = max(FORGET_AT, 2 * len(self._recent))
        self._held = False
        # What the last apply did beyond its results, for the daemon's metrics: the holds it set
        # (none in a dry run, or when they could not be set), and how many times setting them
        # failed ("hold") and a room made could not be kept for its beneficiary ("reserve").
        self.holds_set: Mapping[str, int] = {}
        self.steps_failed: dict[str, int] = {}

    def apply(self, plan: Plan, record: Recorder | None = None) -> list[ActionResult]:
        """Carry ``plan`` out: re-check its victims, hold, vacate, keep the rooms made, claim.

        The holds go first. Each held owner is held at what it will run once this cycle's vacates
        are done, before the first of them is sent, so that no negotiation between a vacate and its
        hold can hand the room back to the victim's owner or to anyone else over its share. Holds
        that cannot be set stop every vacate of the cycle (each reported as not sent): room freed
        without them is work thrown away. A vacate refused after the holds went out leaves its owner
        held one job lower than it runs, so the holds are set again with what did go."""
        record = record if record is not None else Recorder(structlog.get_logger("osep"))
        told = logs(record, logging.INFO)  # the actions' events are made only to be kept
        now = plan.time
        if len(self._recent) > self._forget_at:
            self._forget(now)
        dry_run = self.limits.dry_run
        self.steps_failed = {}
        decided = self._decide(plan, now, self._look(plan.vacates, record))
        leaving = [v.job for v, refused in decided if refused is None]
        if dry_run:  # the holds a real run would set, one event each, and none set
            held = None
            if told:
                for owner, allowance in plan.holds.items():
                    record.hold({owner: allowance}, _DRY_RUN)
        else:
            held = self._hold(plan, record, leaving)
        self.holds_set = plan.holds if not dry_run and held is None else {}
        results: list[ActionResult] = []
        made: dict[int, Vacate] = {}  # group -> a vacate of it that went through
        refused_late = False
        for vacate, refused in decided:
            if refused is not None:
                result = refused
            elif held is not None:
                result = _result(vacate, _FAILED,
                                 f"not sent: the holds that keep its room could not be set: {held}", False)
            else:
                result = self._send(vacate, now)
                if result.outcome is _DONE or result.possibly_done:
                    made.setdefault(vacate.group, vacate)
                elif result.outcome is _FAILED:
                    refused_late = True
            results.append(result)
            if told:
                record.action(vacate, result.outcome, result.detail)
        # The room a group of vacates makes is kept once for its beneficiary, if any of them went.
        for vacate in made.values():
            try:
                self.pool.reserve(vacate.place or vacate.slot, vacate.beneficiary, vacate.room)
            except Exception as exc:  # noqa: BLE001 - contained to this room
                record.reserve_failed(vacate, _problem(exc))
                self._failed("reserve")
        for claim in plan.claims:
            if claim.after is not None and claim.after not in made and not dry_run:
                result = _result(claim, _CHANGED,
                                 "the vacates that were to leave this room did not go", False)
            else:
                result = self._claim(claim, dry_run)
            results.append(result)
            if told:
                record.action(claim, result.outcome, result.detail)
        if refused_late:
            self._hold(plan, record, (), again=True)
        return results

    def _decide(self, plan: Plan, now: float, looked: Look | str
                ) -> list[tuple[Vacate, ActionResult | None]]:
        """Each of the plan's vacates, group by group in the plan's order, with why it may not be
        sent (None: it goes). The vacates of a group make one room together: all of them go, or
        none does; and none goes past the cycle's cap (the plan's own budget, or the limits' if
        lower)."""
        cap = plan.max_vacates
        if self.limits.max_vacates_per_cycle is not None:
            cap = min(cap, self.limits.max_vacates_per_cycle)
        groups: dict[int, list[Vacate]] = {}
        for vacate in plan.vacates:
            groups.setdefault(vacate.group, []).append(vacate)
        going = 0
        out: list[tuple[Vacate, ActionResult | None]] = []
        for group in groups.values():
            refusals = self._group(group, now, cap, going, looked)
            out.extend(zip(group, refusals, strict=True))
            going += refusals.count(None)
        return out

    def _hold(self, plan: Plan, record: Recorder, leaving: Sequence[JobId],
              again: bool = False) -> str | None:
        """Set the plan's holds, each held owner at what it runs once ``leaving`` have left; why
        they could not be set, or None. ``again``: the same holds once more (logged only if that
        fails)."""
        try:
            self.pool.hold(plan.holds, leaving)
        except Exception as exc:  # noqa: BLE001 - contained to the holds
            problem = _problem(exc)
            record.hold(plan.holds, Outcome.FAILED, problem)
            self._failed("hold")
            return problem
        if not again and logs(record, logging.INFO) and (plan.holds or self._held):
            record.hold(plan.holds, Outcome.DONE)
        self._held = bool(plan.holds)
        return None

    def _failed(self, step: str) -> None:
        self.steps_failed[step] = self.steps_failed.get(step, 0) + 1

    def _forget(self, now: float) -> None:
        """Forget the vacates older than an hour, and the jobs left with none: they count for no
        cap. (A simulated week vacates some 250,000 jobs, most of them once; the live pool prunes
        the same dict at every snapshot as well.)"""
        recent = self._recent
        for job_id, times in list(recent.items()):
            while times and times[0] <= now - HOUR:
                times.popleft()
            if not times:
                del recent[job_id]
        self._forget_at = max(FORGET_AT, 2 * len(recent))

    def _look(self, vacates: tuple[Vacate, ...], record: Recorder) -> Look | str:
        """The plan's victims as the pool has them now, in one look; or why the look failed."""
        if not vacates:
            return Look()
        try:
            return self.pool.look([v.job for v in vacates])
        except Exception as exc:  # noqa: BLE001 - contained to the re-checks
            problem = _problem(exc)
            record.log.error("recheck_failed", jobs=len(vacates), problem=problem)
            return problem

    def _group(self, group: Sequence[Vacate], now: float, cap: int, going: int,
               looked: Look | str) -> list[ActionResult | None]:
        """Why each vacate of one group may not be sent (None: it goes): each is re-checked, and if
        any of them may not go (or the group does not fit in what is left of the cycle's cap),
        none goes."""
        if going + len(group) > cap:
            return [_result(v, _RATE_LIMITED, f"cycle cap of {cap} reached", False) for v in group]
        refusals = [(v, self._check(v, now, looked)) for v in group]
        refused = next(((v, r) for v, r in refusals if r is not None), None)
        if refused is None:
            return [None] * len(group)
        job, why = refused[0].job, refused[1]
        assert why is not None
        return [r if r is not None else ActionResult(
                    v, why.outcome, f"not sent: {job}, needed for the same room: {why.detail}")
                for v, r in refusals]

    def _check(self, vacate: Vacate, now: float, looked: Look | str) -> ActionResult | None:
        """Why ``vacate`` may not be sent now (the pool's fresh look at its job: ``looked``, or why
        that look failed), or None if it may."""
        why = looked if isinstance(looked, str) else looked.failed.get(vacate.job)
        if why is not None:
            return ActionResult(vacate, Outcome.FAILED, f"re-check failed: {why}")
        assert isinstance(looked, Look)
        current = looked.jobs.get(vacate.job)
        if current is None or current.state is not _RUNNING:
            state = "gone" if current is None else current.state.value
            return ActionResult(vacate, Outcome.CHANGED, f"job is {state}")
        if current.owner != vacate.owner:
            return ActionResult(vacate, Outcome.CHANGED, f"job is now {current.owner}'s")
        if (current.slot or "") != vacate.slot:
            return ActionResult(vacate, Outcome.CHANGED, f"job moved to {current.slot} since the snapshot")
        if not current.vacatable:
            return ActionResult(vacate, Outcome.CHANGED, "job is transferring output or suspended")
        if current.start_time != vacate.start_time:
            return ActionResult(vacate, Outcome.CHANGED, "job restarted since the snapshot")
        ran = current.run_time(now)
        if ran < self.limits.min_run_time:
            return ActionResult(
                vacate, Outcome.RATE_LIMITED,
                f"ran {ran:.0f} s, less than the minimum {self.limits.min_run_time:g} s",
            )
        per_hour = self.limits.max_vacates_per_job_per_hour
        if per_hour is None:
            return None
        history = self._recent.get(vacate.job)
        while history and history[0] <= now - HOUR:
            history.popleft()
        done = len(history) if history is not None else 0
        if done >= per_hour:
            return ActionResult(vacate, Outcome.RATE_LIMITED, f"already vacated {done} time(s) this hour")
        return None

    def _sent(self, job: JobId, now: float) -> None:
        """``job`` was vacated (or may have been) at ``now``."""
        history = self._recent.get(job)
        if history is None:
            self._recent[job] = deque((now,))
        else:
            history.append(now)

    def _send(self, vacate: Vacate, now: float) -> ActionResult:
        if self.limits.dry_run:
            return ActionResult(vacate, Outcome.DRY_RUN)
        try:
            self.pool.vacate(vacate.job)
        except UnknownOutcome as exc:
            self._sent(vacate.job, now)
            return ActionResult(vacate, Outcome.FAILED, f"no answer, taken as possibly done: {exc}",
                                possibly_done=True)
        except PoolError as exc:
            return ActionResult(vacate, Outcome.FAILED, str(exc))
        except Exception as exc:  # noqa: BLE001 - contained to this job; it may have gone out
            self._sent(vacate.job, now)
            return ActionResult(vacate, Outcome.FAILED,
                                f"{_problem(exc)}; taken as possibly done", possibly_done=True)
        self._sent(vacate.job, now)
        return _result(vacate, _DONE, "", False)

    def _claim(self, claim: Claim, dry_run: bool) -> ActionResult:
        if dry_run:
            return _result(claim, _DRY_RUN, "", False)
        try:
            self.pool.reserve(claim.slot, claim.beneficiary, claim.shape)
        except Exception as exc:  # noqa: BLE001 - contained to this claim
            return _result(claim, _FAILED, _problem(exc), False)
        return _result(claim, _DONE, "", False)


def logs(record: Recorder, level: int) -> bool:
    """Whether ``record``'s logger keeps events of ``level`` (a logging level; a logger that cannot
    say is taken to keep them all). A cycle makes its decision log's events only for a logger that
    keeps them: a simulation logging warnings made a reason's text for every claim and vacate."""
    enabled = getattr(record.log, "is_enabled_for", None)
    return True if enabled is None else bool(enabled(level))


def _problem(exc: Exception) -> str:
    """An error as one line: the pool's own errors as they say, anything else with its type (a
    fault of osep's or of the bindings, whose traceback goes to the log as an ``internal_error``)."""
    if isinstance(exc, PoolError):
        return str(exc)
    structlog.get_logger("osep").error("internal_error", exc_info=exc)
    return f"internal error: {type(exc).__name__}: {exc}"

"""Running candidates: one on a period of a history (:func:`run`), and many on this machine, in
worker processes (:func:`run_local`).

A candidate runs as ``osep simulate`` runs the policy ``osep`` with a policy file holding its
settings: the same scenario, the same ``decide``, so a recommendation written as a policy file and
simulated gives the figures the sweep measured.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import structlog

from osep.experiment.runs import run_policy
from osep.measure.metrics import Metrics
from osep.tune.candidates import Candidate
from osep.tune.history import History


@dataclass(frozen=True, slots=True)
class Figures:
    """What one candidate's run measured, in the policy's unit (``resource``): PV, LC, PC and its
    parts, the vacates, and the worst satisfaction (A_US, percent) of an owner with a share and a
    finished job (None: no such owner). ``unfinished``: jobs its run left queued or running at its
    horizon (its figures then cover less than the whole workload)."""

    pv: float
    lc: float
    pc: float
    vacates: int
    work_redone: float
    vacate_time: float
    worst_us: float | None
    worst_owner: str | None
    unfinished: int
    makespan: float
    resource: str = "slots"

    @property
    def cost(self) -> float:
        """What enforcing cost: the capacity left idle after vacates and the work lost to them."""
        return self.lc + self.pc

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Figures:
        """The inverse of :meth:`as_dict`; KeyError, TypeError or ValueError on anything else."""
        out = cls(float(data["pv"]), float(data["lc"]), float(data["pc"]), int(data["vacates"]),
                  float(data["work_redone"]), float(data["vacate_time"]),
                  None if data["worst_us"] is None else float(data["worst_us"]),
                  None if data["worst_owner"] is None else str(data["worst_owner"]),
                  int(data["unfinished"]), float(data["makespan"]), str(data["resource"]))
        if min(out.pv, out.lc, out.pc, out.vacates, out.work_redone, out.unfinished) < 0:
            raise ValueError("a negative figure")
        return out


def figures(metrics: Metrics, unfinished: int, resource: str) -> Figures:
    """A run's figures from its metrics."""
    served = [o for o in metrics.owners if o.share > 0 and o.satisfaction is not None]
    worst = min(served, key=lambda o: (o.satisfaction, o.owner)) if served else None
    return Figures(metrics.violation, metrics.capacity_loss, metrics.cost, metrics.vacates, metrics.lost_work,
                   metrics.vacate_time, worst.satisfaction if worst is not None else None,
                   worst.owner if worst is not None else None, unfinished, metrics.makespan, resource)


def _drop(*_: Any) -> Any:
    raise structlog.DropEvent


# Runs log nothing: a sweep's output is its table.
_QUIET = structlog.wrap_logger(None, processors=[_drop])


def run(history: History, period: str, candidate: Candidate) -> Figures:
    """``candidate`` on ``history``'s ``period``."""
    scenario = history.scenario(period, candidate.interval)
    scenario = replace(scenario, excess=candidate.excess, min_run_time=candidate.min_run_time)
    outcome = run_policy(scenario, "osep", candidate.settings(scenario.policy), candidate.interval,
                         logger=_QUIET)
    return figures(outcome.metrics, outcome.result.unfinished, outcome.resource)


Task = tuple[str, Candidate]  # a period and a candidate
Done = Callable[[Task, Figures], None]

_installed: dict[str, History] = {}  # the history a worker process runs its tasks on


def _install(history: History) -> None:
    _installed["history"] = history
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the sweep, and the workers


def _run_task(task: Task) -> tuple[Task, Figures]:
    return task, run(_installed["history"], *task)


def run_local(history: History, tasks: Iterable[Task], done: Done, processes: int = 1) -> None:
    """Run every task, calling ``done`` with each one's figures as it finishes (in the order they
    finish). With ``processes`` > 1, that many worker processes run them, each with a copy of the
    history; an interrupt (or an error in a task) stops them all at once."""
    todo = list(tasks)
    if processes <= 1 or len(todo) <= 1:
        for task in todo:
            done(task, run(history, *task))
        return
    pool = multiprocessing.get_context().Pool(min(processes, len(todo)), _install, (history,))
    try:
        for task, result in pool.imap_unordered(_run_task, todo):
            done(task, result)
        pool.close()
    finally:
        pool.terminate()
        pool.join()

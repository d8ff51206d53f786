"""What happened to each job: the common currency of the simulator, replay and the metrics.

Whoever produces these (the simulated pool, or replay of HTCondor event logs) can be measured by
:mod:`osep.metrics` without either side knowing about the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Run:
    """One stay of a job on a slot. ``useful`` is the work it kept (all of it for a run that
    completed; what a checkpoint saved for one that was vacated)."""

    slot: str
    start: float
    end: float
    vacated: bool
    useful: float
    vacate_sent: float | None = None


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: str
    owner: str
    submit: float
    runtime: float
    finish: float | None
    runs: tuple[Run, ...]

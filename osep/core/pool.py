"""The narrow interface every pool adapter implements: the simulated pool (:mod:`osep.sim`) and the
live HTCondor pool (:mod:`osep.htcondor`). The enforcement loop and the actuator know nothing else
about a pool."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from osep.core.model import Job, JobId, Snapshot
from osep.core.resources import Shape


@dataclass(frozen=True, slots=True)
class Look:
    """What a fresh look at several jobs found: each job still in its queue (``jobs``), and each that
    could not be looked at, with why (``failed``: its schedd did not answer, or its ad cannot be
    read). A job in neither is gone."""

    jobs: Mapping[JobId, Job] = field(default_factory=dict)
    failed: Mapping[JobId, str] = field(default_factory=dict)


class Pool(Protocol):
    def snapshot(self) -> Snapshot:
        """A consistent view of slots and jobs, stamped with the pool's own notion of now."""
        ...

    def look(self, job_ids: Collection[JobId]) -> Look:
        """A fresh look at several jobs at once (the re-check of a plan's victims just before acting):
        one query per schedd, not one per job."""
        ...

    def vacate(self, job_id: JobId) -> None:
        """Ask the job to leave its slot gracefully; it goes back to the queue, it is never removed."""
        ...

    def reserve(self, slot: str, owner: str, shape: Shape) -> None:
        """Keep room for a job of ``shape`` on ``slot`` (a static slot, or a partitionable slot) for
        ``owner`` until one of its jobs starts there (or the reservation lapses)."""
        ...

    def hold(self, holds: Mapping[str, int], leaving: Collection[JobId] = ()) -> None:
        """Until the next call, give each owner in ``holds`` at most that many more cores than it
        runs once the running jobs ``leaving`` are gone (the vacates about to be sent: a hold goes
        out before them); they keep what they run, and everyone else is free again. An empty
        mapping lifts every hold."""
        ...

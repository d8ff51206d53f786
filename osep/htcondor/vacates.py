"""What a live pool keeps between cycles besides its ceilings: the vacates it sent that have not
taken effect yet, and its reservation book (both saved in the state file between ``--once`` runs)."""

from __future__ import annotations

from collections.abc import Iterable

from osep.core.model import Job, JobId, JobState
from osep.core.reservations import ReservationBook

VACATE_TIMEOUT = 600.0  # after this a vacate that never took effect is forgotten (and logged)


class Vacates:
    """The vacates this pool sent and that have not taken effect yet: such a job still runs in the
    schedd's eyes, but the policy must see it VACATING (its slot is on its way to the beneficiary,
    and it is no victim twice). A job that restarted (another start) is running again."""

    def __init__(self, saved: Iterable[tuple[JobId, float | None, float]] = ()) -> None:
        # job -> (start of its run, sent at)
        self._sent: dict[JobId, tuple[float | None, float]] = {j: (start, at) for j, start, at in saved}

    def sent(self, job_id: JobId, start: float | None, at: float) -> None:
        self._sent[job_id] = (start, at)

    def forget(self, job_id: JobId) -> None:
        """The vacate was refused: the job stays what it is."""
        self._sent.pop(job_id, None)

    def entries(self) -> list[tuple[JobId, float | None, float]]:
        """What the state file keeps, for a ``--once`` run to hand to the next one."""
        return [(j, start, at) for j, (start, at) in self._sent.items()]

    def state(self, job: Job) -> JobState:
        sent = self._sent.get(job.id)
        if job.state is JobState.RUNNING and sent is not None and sent[0] == job.start_time:
            return JobState.VACATING
        return job.state

    def settle(self, jobs: Iterable[Job], now: float) -> list[tuple[JobId, float]]:
        """Forget vacates whose job no longer runs that run; returns those given up on after
        ``VACATE_TIMEOUT``, with the seconds since each was sent."""
        still = {j.id for j in jobs if j.state is JobState.VACATING}
        late = []
        for job_id, (_, at) in list(self._sent.items()):
            if job_id not in still:
                del self._sent[job_id]
            elif now - at > VACATE_TIMEOUT:
                late.append((job_id, now - at))
                del self._sent[job_id]
        return late


class KeptBook(ReservationBook):
    """The reservation book, as the state file keeps it between ``--once`` runs
    (:meth:`ReservationBook.entries` and :meth:`ReservationBook.restore`)."""


"""The jobs a pool view has, by id: each as the :class:`Job` a pool put, or as the :data:`Row` of
fields a pool told (no :class:`Job` made until something reads it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from osep.core.model import Job, JobId, JobState
from osep.core.resources import Shape

# A job as the view keeps it when a pool tells it the fields (no Job made): owner, state, submit
# time, slot, start, checkpoint, shape (cpus, memory, gpus, disk), vacatable.
Row = tuple[str, JobState, float, str | None, float | None, float | None, Shape, bool]


def row_of(job: Job) -> Row:
    """The row of ``job``."""
    return (job.owner, job.state, job.submit_time, job.slot, job.start_time, job.checkpoint_time,
            (job.cpus, job.memory, job.gpus, job.disk), job.vacatable)


class JobTable(Mapping[JobId, Job]):
    """The view's jobs by id, in the order they were added. A job given as a :class:`Job` (a view
    built in one pass) is that object; a job a pool told as a row (:meth:`osep.core.view.PoolView.tell`)
    is kept as a :data:`Row` and made a :class:`Job` when first read, that same object then read
    until the job changes. A decision reads a victim
    candidate's :meth:`row` (no :class:`Job` made) unless it weighs several on one partitionable
    slot."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[JobId, Job | Row] = {}

    def __getitem__(self, job_id: JobId) -> Job:
        entry = self.entries[job_id]
        if isinstance(entry, tuple):
            owner, state, submit, slot, start, checkpoint, shape, vacatable = entry
            cpus, memory, gpus, disk = shape
            entry = self.entries[job_id] = Job(job_id, owner, state, submit, slot, start, checkpoint,
                                               cpus, memory, gpus, disk, vacatable)
        return entry

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[JobId]:
        return iter(self.entries)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.entries

    def row(self, job_id: JobId) -> Row | None:
        """What the view keeps of ``job_id`` (None if it has no such job)."""
        entry = self.entries.get(job_id)
        if entry is None or isinstance(entry, tuple):
            return entry
        return row_of(entry)

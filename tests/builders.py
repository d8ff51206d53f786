"""Builders shared by the tests: small snapshots written the way one would sketch them on paper."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from osep.core.model import Job, JobId, JobState, Slot, Snapshot


def snap(
    now: float = 10_000.0,
    *,
    running: Mapping[str, Sequence[float]] | None = None,
    idle: Mapping[str, int] | None = None,
    free: int = 0,
    slot_cpus: int = 1,
    idle_cpus: int = 1,
) -> Snapshot:
    """A snapshot with one slot per running job (``owner -> start times``), ``free`` empty slots,
    and ``idle`` queued jobs per owner. Running job k of an owner is ``owner#0.k`` (see :func:`name`),
    its idle job k ``owner#1.k``; the slot of running job number n (in the order given) is ``s{n}``."""
    slots: list[Slot] = []
    jobs: list[Job] = []
    for owner, starts in (running or {}).items():
        for k, start in enumerate(starts):
            name = f"s{len(slots)}"
            slots.append(Slot(name, cpus=slot_cpus))
            jobs.append(Job(JobId(owner, 0, k), owner, JobState.RUNNING, 0.0, slot=name,
                            start_time=start))
    for _ in range(free):
        slots.append(Slot(f"s{len(slots)}", cpus=slot_cpus))
    for owner, count in (idle or {}).items():
        for k in range(count):
            jobs.append(Job(JobId(owner, 1, k), owner, JobState.IDLE, 1.0, cpus=idle_cpus))
    return Snapshot(now, tuple(slots), tuple(jobs))


def jid(name: str) -> JobId:
    """A job id from a short name: ``a.3`` is owner a's running job 3, ``a.i3`` its idle job 3."""
    owner, _, rest = name.partition(".")
    if rest.startswith("i"):
        return JobId(owner, 1, int(rest[1:]))
    return JobId(owner, 0, int(rest))


def name(job: JobId) -> str:
    """The short name of a job id made by :func:`jid` or :func:`snap`."""
    return f"{job.schedd}.{'i' if job.cluster == 1 else ''}{job.proc}"

"""Builders shared by the tests: small snapshots written the way one would sketch them on paper."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from osep.model import Job, JobState, Slot, Snapshot


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
    and ``idle`` queued jobs per owner. Running jobs are called ``owner.k``, idle ones ``owner.iK``;
    the slot of running job number n (in the order given) is ``s{n}``."""
    slots: list[Slot] = []
    jobs: list[Job] = []
    for owner, starts in (running or {}).items():
        for k, start in enumerate(starts):
            name = f"s{len(slots)}"
            slots.append(Slot(name, cpus=slot_cpus))
            jobs.append(Job(f"{owner}.{k}", owner, JobState.RUNNING, 0.0, slot=name,
                            start_time=start))
    for _ in range(free):
        slots.append(Slot(f"s{len(slots)}", cpus=slot_cpus))
    for owner, count in (idle or {}).items():
        for k in range(count):
            jobs.append(Job(f"{owner}.i{k}", owner, JobState.IDLE, 1.0, cpus=idle_cpus))
    return Snapshot(now, tuple(slots), tuple(jobs))

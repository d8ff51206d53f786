"""Step one of a decision: count what each owner runs, waits for and is owed in a snapshot.

Per owner: running jobs, idle jobs, jobs being vacated, and slots already reserved for it (free or
still being vacated). ``active = running + reserved``; demand ``d = running + vacating + idle``. Held
jobs are not demand. Shares are resolved for the snapshot's capacity (:mod:`osep.core.shares`),
feasible shares computed from the demand, and each owner's target is its owner share (the paper) or
its feasible share.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from osep.core.model import Job, JobState, Slot, Snapshot
from osep.core.plan import OwnerView, Target
from osep.core.shares import ShareTable, feasible_shares


@dataclass(frozen=True, slots=True)
class Census:
    """A snapshot counted per owner: what the later steps of a decision start from."""

    views: dict[str, OwnerView]
    slots: dict[str, Slot]  # by name
    running: dict[str, list[Job]]  # owner -> its running jobs
    idle: dict[str, list[Job]]  # owner -> its idle jobs
    free: list[Slot]  # neither busy, nor being vacated, nor reserved; in snapshot order
    unplaced: int  # running jobs on slots the snapshot does not have

    def gaps(self) -> dict[str, float]:
        return {o: v.gap for o, v in self.views.items()}


def count(snapshot: Snapshot, shares: ShareTable, target: Target) -> Census:
    capacity = snapshot.capacity
    slots = {s.name: s for s in snapshot.slots}
    running: dict[str, list[Job]] = defaultdict(list)
    idle: dict[str, list[Job]] = defaultdict(list)
    vacating: Counter[str] = Counter()
    busy: set[str] = set()  # slots with a running job
    leaving: set[str] = set()  # slots whose job is being vacated
    unplaced = 0
    for job in snapshot.jobs:
        state = job.state
        if state is JobState.RUNNING:
            running[job.owner].append(job)
            if job.slot is not None and job.slot in slots:
                busy.add(job.slot)
            else:
                unplaced += 1
        elif state is JobState.IDLE:
            idle[job.owner].append(job)
        elif state is JobState.VACATING:
            vacating[job.owner] += 1
            if job.slot is not None:
                leaving.add(job.slot)

    # Reservations count for their owner only while the slot is not running a job and the owner has
    # idle jobs to put there; anything else is stale and left for the pool to expire.
    reserved: Counter[str] = Counter()
    free: list[Slot] = []
    for slot in snapshot.slots:
        if slot.name in busy:
            continue
        if slot.reserved_for is not None:
            if reserved[slot.reserved_for] < len(idle.get(slot.reserved_for, ())):
                reserved[slot.reserved_for] += 1
        elif slot.name not in leaving:
            free.append(slot)

    resolved = shares.resolve(capacity)
    owners = sorted(set(resolved) | set(running) | set(idle) | set(vacating))
    demand = {o: len(running.get(o, ())) + vacating[o] + len(idle.get(o, ())) for o in owners}
    fes = feasible_shares(resolved, demand, capacity)
    views = {
        o: OwnerView(
            owner=o,
            share=resolved.get(o, 0.0),
            running=len(running.get(o, ())),
            idle=len(idle.get(o, ())),
            vacating=vacating[o],
            reserved=reserved[o],
            demand=demand[o],
            feasible=fes[o],
            target=fes[o] if target is Target.FEASIBLE else resolved.get(o, 0.0),
        )
        for o in owners
    }
    return Census(views, slots, dict(running), dict(idle), free, unplaced)

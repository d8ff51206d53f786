"""Choosing victims and their order: the running jobs whose leaving makes room for one idle job of
a beneficiary, found by :class:`Search` (its plan-wide state) in the order :class:`osep.core.vacates`
asks for them.

1. One victim, if any will do (:meth:`Search.single`): the owner furthest above its target whose
   running job, once gone, leaves room for the job on its place (its static slot, or its
   partitionable slot with what is unclaimed there); within that owner the job with the lowest wall
   clock (or least work to lose), ties by job id.
2. Else a set of victims on one partitionable slot (:meth:`Search.several`): on every partitionable
   slot, the running jobs of owners above target are added (most-over owner first, lowest wall clock
   first; and again largest job first) until the room fits the job, and then every victim the room
   does not need is dropped. The place needing the fewest victims wins, then the lowest summed wall
   clock (or lost work), then the place's name.

No victim's loss takes its owner below target, or a group the beneficiary is not in below its own
(:meth:`osep.core.ledger.Ledger.may_lose`); an owner given room in the plan is never a victim in it,
and a job whose start is unknown is never a victim (the view leaves it out).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, MutableMapping
from operator import itemgetter
from typing import NamedTuple

from osep.core.jobtable import JobTable
from osep.core.ledger import Holds, Ledger, Rank
from osep.core.model import Job, JobId
from osep.core.plan import VictimOrder
from osep.core.resources import EPS, NO_ROOM, ZERO, Room, Shape, Vec, add_room, fits, held, less, plus
from osep.core.tally import Tally
from osep.core.view import PoolView

VictimKey = tuple[float, float, JobId]  # how a victim candidate ranks: ascending comes first


def _victim_key(order: VictimOrder, now: float) -> Callable[[Job], VictimKey]:
    """How victims are ordered at ``now``, ascending: the lowest wall clock first (or the least
    work to lose, then the lowest wall clock); equal ones by job id (schedd, then cluster and proc,
    the order in which HTCondor numbers jobs)."""
    if order is VictimOrder.WALLCLOCK:
        def wallclock(job: Job) -> VictimKey:
            return (job.run_time(now), 0.0, job.id)
        return wallclock

    def lost_work(job: Job) -> VictimKey:
        return (job.lost_work(now), job.run_time(now), job.id)
    return lost_work


class Victim(NamedTuple):
    """A running job as a plan vacates it, its figures at the decision's time: what a
    :class:`osep.core.plan.Vacate` records of it, and what a victim search weighs."""

    id: JobId
    owner: str
    slot: str
    start_time: float | None
    run_time: float  # Job.run_time at the decision's time
    lost_work: float  # Job.lost_work
    shape: Shape

    @staticmethod
    def of(job: Job, now: float) -> Victim:
        return Victim(job.id, job.owner, job.slot or "", job.start_time, job.run_time(now),
                      job.lost_work(now), job.shape)


class _Queue:
    """One owner's victim candidates in the exact order of :func:`_victim_key`, read from the
    view's kept order only as far as a search goes. The kept order does not depend on the time:
    candidates whose key's first figure ties at the snapshot's time (a start in the future, or
    times rounded together) are neighbours in it, and are put in exact order as they are read.

    Each is read as a :class:`Victim` straight from what the view keeps, never as a :class:`Job`
    (a simulated week vacates 250,000 jobs)."""

    __slots__ = ("_candidates", "_ids", "_next", "_now", "_owner", "_rows", "_runs", "_wallclock",
                 "jobs")

    def __init__(self, ids: Iterator[JobId], tally: Tally, jobs: JobTable, now: float,
                 wallclock: bool, owner: str) -> None:
        self._ids = ids
        self._candidates = tally.candidates
        self._runs = tally.runs
        self._owner = owner
        self._rows = jobs.row
        self._now = now
        self._wallclock = wallclock
        self.jobs: list[Victim] = []  # the order read so far
        self._next = self._pull()  # the next candidate not in it yet, with its key

    def _pull(self) -> tuple[VictimKey, Victim] | None:
        job_id = next(self._ids, None)
        if job_id is None:
            return None
        runs = self._runs
        if runs is not None:  # counted by the pool: its work is saved until its start
            start, slot, shape = runs[job_id]
            ran = max(0.0, self._now - start)
            victim = Victim(job_id, self._owner, slot, start, ran, ran, shape)
            return ((ran, 0.0, job_id) if self._wallclock else (ran, ran, job_id)), victim
        _, start, since = self._candidates[job_id]  # its start and where its saved work ends
        row = self._rows(job_id)
        assert row is not None  # a candidate is one of the view's jobs
        # Job.run_time and Job.lost_work of a job whose start is known, and _victim_key
        now = self._now
        ran = max(0.0, now - start)
        lost = max(0.0, now - since)
        victim = Victim(job_id, row[0], row[3] or "", row[4], ran, lost, row[6])
        return ((ran, 0.0, job_id) if self._wallclock else (lost, ran, job_id)), victim

    def get(self, index: int) -> Victim | None:
        """The candidate at ``index`` in the order; None past the last."""
        jobs = self.jobs
        if index < len(jobs):
            return jobs[index]
        after = self._next
        while index >= len(jobs) and after is not None:
            run = [after]
            first = after[0][0]
            after = self._pull()
            while after is not None and after[0][0] == first:
                run.append(after)
                after = self._pull()
            if len(run) > 1:
                run.sort(key=itemgetter(0))  # keys end with the job id: no two are equal
                jobs.extend(job for _, job in run)
            else:
                jobs.append(run[0][1])
        self._next = after
        return jobs[index] if index < len(jobs) else None


class Search:
    """The running jobs of a pool view arranged for finding victims, and what one plan has taken
    of them so far. Everything is read on first use (most cycles need a few victims from a few
    owners); the view is never changed."""

    def __init__(self, pool: PoolView, free: MutableMapping[str, Room], order: VictimOrder,
                 now: float, above: list[str]) -> None:
        self.pool = pool
        self.slots = pool.slots
        self.free = free  # unclaimed room per partitionable slot, as claims and vacates leave it
        self.now = now
        self.order = order
        # The jobs this plan vacates.
        self.taken: set[JobId] = set()
        # Owners given room in this plan are never its victims: what one cycle gives, it does not
        # take back.
        self.gainers: set[str] = set()
        self.dropped: set[str] = set()  # owners that can lose nothing more in this plan
        # The owners that may lose jobs: above target with running jobs, as counted. Claims and
        # vacates only raise victims' gaps and lower gainers' (never victims), so the owners above
        # target later in the plan are among these.
        self._above = above
        self._queues: dict[str, _Queue] = {}
        self._cursor: dict[str, int] = {}  # owner -> where the untaken part of its queue begins
        self._lightest: dict[str, Vec] = {}
        self._jobs: dict[str, list[Job]] | None = None
        self._over: list[tuple[Rank, str]] | None = None
        # partitionable slot -> the last group of vacates that left room on it
        self.leftover: dict[str, int] = {}
        # (owner, shape, beneficiary): no single victim of the owner will do for a job of the shape
        # (the beneficiary matters only with an owner tree, where groups may not lose to outsiders)
        self.misses: set[tuple[str, Shape, str]] = set()
        self.several_misses: set[tuple[Shape, str]] = set()
        self.nowhere: set[Shape] = set()
        self.somewhere: set[Shape] = set()
        self.holds = Holds()  # what a job of a shape holds (resources.held), per shape met
        # How several() ranks the jobs on a partitionable slot (the queues make the same keys from
        # what the view keeps). The queues keep nothing of the search: a reference back would make
        # a cycle (search -> queues -> search) that only the cyclic collector frees.
        self.key = _victim_key(order, now)

    def queue(self, owner: str) -> _Queue:
        """The owner's running jobs in the order they would be vacated (a job whose start is
        unknown cannot be weighed against the others, and one not vacatable is never a victim:
        the view leaves both out)."""
        queue = self._queues.get(owner)
        if queue is None:
            tally = self.pool.tallies.get(owner)
            if tally is None:  # an owner with no job: no candidate
                tally = Tally()
            wallclock = self.order is VictimOrder.WALLCLOCK
            queue = self._queues[owner] = _Queue(tally.victims(wallclock), tally, self.pool.jobs,
                                                 self.now, wallclock, owner)
        return queue

    def lightest(self, owner: str) -> Vec:
        """No more than any of the owner's running jobs holds, in every resource: an owner that
        cannot lose this can lose none of its victim candidates (owners only lose jobs while a plan
        is made), so it is dropped from the search. Worked out from all its running jobs' shapes,
        as the view counts shapes for those, not for the candidates among them."""
        light = self._lightest.get(owner)
        if light is None:
            tally = self.pool.tallies.get(owner)
            shapes = tally.run_shapes if tally is not None else {}
            light = self._lightest[owner] = (
                (1.0, float(min(s[0] for s in shapes)), float(min(s[1] for s in shapes)),
                 float(min(s[2] for s in shapes)), float(min(s[3] for s in shapes)))
                if shapes else (math.inf,) * 5)
        return light

    def place_of(self, job: Job | Victim) -> str:
        return self.slots[job.slot].place if job.slot is not None else ""

    def freed(self, job: Job | Victim) -> Room:
        """What a job gives back to its place when it leaves: its slot's resources."""
        return self.slots[job.slot].room if job.slot is not None else NO_ROOM

    def room(self, place: str) -> Room:
        """What a place has free besides what its victims would give back."""
        return self.free.get(place, NO_ROOM)

    def fits_anywhere(self, shape: Shape) -> bool:
        """Whether some place could run a job of ``shape`` at all, were it empty."""
        if shape in self.somewhere:
            return True
        if shape in self.nowhere:
            return False
        # Places alike count once (a pool has many machines of a few kinds).
        found = any(fits(shape, room) for room in self.pool.wholes)
        (self.somewhere if found else self.nowhere).add(shape)
        return found

    def single(self, shape: Shape, ledger: Ledger, ben: str) -> list[Victim] | None:
        """One victim for ``ben``, from the owner furthest above target (with an owner tree: in the
        group furthest above its target, top-down) that has one that will do."""
        tree = ledger.groups is not None
        if self._over is None or tree:
            # A heap of the owners above target, by rank. Flat, victims' gaps only rise while a plan
            # is made, so an entry is at most stale downwards: it is checked when it comes up. In a
            # tree a group's ranks move with every member's, so the heap is made afresh.
            dropped = self.dropped
            if tree:
                self._over = [(ledger.over(o), o) for o in self._above
                              if ledger.gap(o) < -EPS and o not in dropped]
            else:  # flat: the rank is the gap (Ledger.over), worked out once
                above = self._above
                self._over = [(g, o) for o, g in zip(above, ledger.gaps_of(above), strict=True)
                              if g < -EPS and o not in dropped]
            heapq.heapify(self._over)
        heap, seen = self._over, []
        found: list[Victim] | None = None
        miss_key = ben if tree else ""
        taken, slots, free, misses, gainers = self.taken, self.slots, self.free, self.misses, self.gainers
        queues, cursor, lightest, holds = self._queues, self._cursor, self._lightest, self.holds
        gap = ledger.gap
        may_lose: Callable[[str, Vec], bool]
        if tree:
            gained = held(shape)

            def may_lose(owner: str, amount: Vec) -> bool:
                return ledger.may_lose(owner, amount, ben, gained)
        else:
            may_lose = ledger.keeps_target  # Ledger.may_lose, flat
        # The owner on top stays there while it is looked at: an owner that gives a victim is the
        # one whose rank moves (it rose, at the next search), and is put in place then.
        while heap:
            rank, owner = heap[0]
            # Flat, stale ranks are put right here (a tree's heap was made for this search)
            if not tree and (now := gap(owner)) != rank:  # back where it ranks now, or out
                if now >= -EPS:
                    heapq.heappop(heap)
                    continue
                entry = (now, owner)
                if (len(heap) > 1 and entry > heap[1]) or (len(heap) > 2 and entry > heap[2]):
                    heapq.heapreplace(heap, entry)
                    continue
                heap[0] = entry  # still first (usually: it lost one job)
            if owner in gainers or not ledger.keeps_target(owner, lightest.get(owner)
                                                           or self.lightest(owner)):
                heapq.heappop(heap)
                self.dropped.add(owner)
                continue  # never a victim in this plan: dropped from the heap for good
            if (owner, shape, miss_key) not in misses:
                queue = queues.get(owner) or self.queue(owner)
                read = queue.jobs  # the order read so far (queue.get reads on past its end)
                index = cursor.get(owner, 0)
                head = True  # the taken head of the queue is skipped once, not at every search
                while (job := read[index] if index < len(read) else queue.get(index)) is not None:
                    index += 1
                    if job.id in taken:
                        if head:
                            cursor[owner] = index
                        continue
                    if not may_lose(owner, holds[job.shape]):
                        head = False
                        continue
                    # What its place has free and what it gives back (place_of, room, freed).
                    slot = slots[job.slot]  # a victim candidate has a slot
                    place = slot.parent if slot.parent is not None else slot.name
                    left = free.get(place)
                    if fits(shape, slot.room if left is None else add_room(left, slot.room)):
                        found = [job]
                        if head:  # the plan takes it (vacated): the next search starts after it
                            cursor[owner] = index
                        break
                    head = False
                if found is not None:
                    break
                # Owners only lose jobs while a plan is made, so this stays a miss (room an earlier
                # vacate left over is looked at again next cycle).
                misses.add((owner, shape, miss_key))
            seen.append(heapq.heappop(heap))
        for back in seen:
            heapq.heappush(heap, back)
        return found

    def several(self, shape: Shape, ledger: Ledger, budget: int, ben: str) -> list[Victim] | None:
        """The fewest victims on one partitionable slot that make room for ``shape``."""
        miss_key = (shape, ben if ledger.groups is not None else "")
        if miss_key in self.several_misses:
            return None
        if self._jobs is None:
            # The candidates on each partitionable slot (in any order: they are sorted below).
            jobs, on_place = self.pool.jobs, self.pool.on_place
            self._jobs = {name: [jobs[i] for i in on_place.get(name, ())] for name in self.pool.rooms}
        best: tuple[int, float, str, list[Job]] | None = None
        ranks = {o: rank for o in self._above if (rank := ledger.over(o))[-1] < -EPS}
        for name in sorted(self._jobs):
            candidates = [j for j in self._jobs[name] if j.id not in self.taken
                          and j.owner not in self.gainers and j.owner in ranks]
            if len(candidates) < 2:
                continue
            by_owner = sorted(candidates, key=lambda j: (ranks[j.owner], j.owner, self.key(j)))
            by_size = sorted(candidates, key=lambda j: ((-j.cpus, -j.gpus, -j.memory, -j.disk),
                                                           self.key(j)))
            for order in (by_owner, by_size):
                chosen = self._fill(name, order, shape, ledger, ben)
                if chosen is None or len(chosen) > budget:
                    continue
                cost = sum(self.key(j)[0] for j in chosen)
                if best is None or (len(chosen), cost, name) < best[:3]:
                    best = (len(chosen), cost, name, chosen)
        if best is None:
            self.several_misses.add(miss_key)
            return None
        return [Victim.of(job, self.now) for job in best[3]]

    def _fill(self, place: str, order: list[Job], shape: Shape, ledger: Ledger,
              ben: str) -> list[Job] | None:
        """Victims in ``order`` until ``shape`` fits, none pushing its owner (or a group it is in
        and ``ben`` is not) below target; then those the room does not need are dropped, last added
        first."""
        losing: dict[str, Vec] = {}
        chosen: list[Job] = []
        room = self.room(place)
        gained = held(shape)
        for job in order:
            if fits(shape, room):
                break
            trial = dict(losing)
            trial[job.owner] = plus(losing.get(job.owner, ZERO), held(job.shape))
            if not ledger.may_lose_all(trial, ben, gained):
                continue
            losing = trial
            chosen.append(job)
            room = add_room(room, self.freed(job))
        if not fits(shape, room):
            return None
        for job in reversed(list(chosen)):
            rest = [j for j in chosen if j is not job]
            left = self.room(place)
            for other in rest:
                left = add_room(left, self.freed(other))
            if fits(shape, left):
                chosen = rest
        return chosen

    def vacated(self, jobs: list[Victim], shape: Shape, group: int) -> str:
        """The jobs leave and the room they make goes to a job of ``shape``; returns the place."""
        name = self.place_of(jobs[0])
        for job in jobs:
            self.taken.add(job.id)
        slot = self.slots.get(name)
        if slot is not None and slot.partitionable:  # what the job does not need stays free there
            room = self.room(name)
            for job in jobs:
                room = add_room(room, self.freed(job))
            self.free[name] = less(room, shape)
            self.leftover[name] = group
        return name

    def left_over(self, shape: Shape) -> tuple[str, int] | None:
        """A partitionable slot where earlier vacates left room enough for ``shape`` (claimed, not
        vacated for: it needs no victim), and the group that left it; the room is taken."""
        if not self.leftover:
            return None
        for name in sorted(self.leftover):
            if fits(shape, self.free[name]):
                self.free[name] = less(self.free[name], shape)
                return name, self.leftover[name]
        return None

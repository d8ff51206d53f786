"""The Decision Algorithm proper: who gets the free room, and whose jobs are vacated for whom.

Free room first: a free static slot, or the unclaimed part of a partitionable slot, that an owner
below target has an idle job for is claimed for the owner with the largest gap, one job at a time. No
job is touched for these, and they do not count against ``p``.

Then, while fewer than ``p`` vacates are planned, the beneficiary is the owner with the largest gap
(f > 0) that still has an idle job not yet provided for. Room is made for one of its idle jobs, tried
in queue order of their shapes (the job the negotiator would start first):

1. one victim, if any will do: the owner furthest above its target whose running job, once gone,
   leaves room for the beneficiary's job on its place (its static slot, or its partitionable slot
   with what is unclaimed there); within that owner the job with the lowest wall clock (or least
   work to lose);
2. else a set of victims on one partitionable slot: on every partitionable slot, the running jobs of
   owners above target are added (most-over owner first, lowest wall clock first; and again largest
   job first) until the room fits the job, and then every victim the room does not need is dropped.
   The place needing the fewest victims wins, then the lowest summed wall clock (or lost work), then
   the place's name. A set larger than what is left of ``p`` is not taken.

No vacate pushes its owner below target (:meth:`osep.core.counting.Ledger.may_lose`), an owner given
room in this plan (a claim or vacates) is not a victim in it, a job whose start is unknown is never a
victim, and a job that fits no place in the pool, even empty, is never
vacated for (the plan notes it). If no room can be made for any of the beneficiary's jobs, it is
passed over for this cycle.

Victims only ever end at or above their target and beneficiaries only gain, so a plan never undoes
itself within a snapshot, and the next cycle does not hand back what this one took (no ping-pong).
Ties are broken by owner name, job id and place name, so the same snapshot always yields the same
plan.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, MutableMapping
from operator import itemgetter
from typing import NamedTuple

from osep.core.counting import Ledger
from osep.core.jobtable import JobTable
from osep.core.model import Job, JobId
from osep.core.plan import (
    Claim,
    OwnerView,
    Reason,
    Target,
    Vacate,
    VictimOrder,
    claim,
    reason,
    vacate,
)
from osep.core.resources import (
    EPS,
    NO_ROOM,
    ZERO,
    Room,
    Shape,
    Vec,
    add_room,
    fits,
    held,
    less,
    plus,
)
from osep.core.tally import Tally
from osep.core.view import PoolView


class Wants:
    """The idle jobs of one owner that no room has been found for yet, counted per shape, the shapes
    in queue order (of their first job).

    Only counts per shape are kept: which of the owner's idle jobs ends up in the room is the
    negotiator's business; the policy only needs to know that one of them can use it.
    """

    __slots__ = ("shapes",)

    def __init__(self, tally: Tally, already_served: int) -> None:
        counts = tally.shapes
        if len(counts) > 1:  # queue order matters only between shapes (most owners have one)
            self.shapes: dict[Shape, int] = {s: counts[s] for s in sorted(counts, key=tally.first)}
        else:
            self.shapes = dict(counts)
        # Kept room will take some of these jobs; drop the smallest shapes first, they fit most.
        for _ in range(min(already_served, tally.idle)):
            self.consume(min(self.shapes))

    def consume(self, shape: Shape) -> None:
        left = self.shapes[shape] - 1
        if left:
            self.shapes[shape] = left
        else:
            del self.shapes[shape]

    def __bool__(self) -> bool:
        return bool(self.shapes)

    def fitting(self, room: Room) -> Shape | None:
        """The largest shape that fits ``room`` (small jobs stay available for small rooms)."""
        best: Shape | None = None
        for shape in self.shapes:
            if fits(shape, room) and (best is None or shape > best):
                best = shape
        return best


class WantsBook:
    """What every owner below target still wants: :class:`Wants` for each of ``owners`` (those
    with idle jobs beyond the room kept for them, in name order), each made when it is first asked
    for (a pool has thousands of owners below target; a cycle serves a few). One not made yet
    wants something: its idle jobs outnumber the rooms kept for it."""

    __slots__ = ("_reserved", "_tallies", "made", "owners", "ranked")

    def __init__(self, owners: list[str], tallies: Mapping[str, Tally],
                 views: Mapping[str, OwnerView]) -> None:
        self.owners = owners
        self._tallies = tallies
        self._reserved = views
        self.made: dict[str, Wants] = {}
        # With flat shares, the beneficiaries as the claims of free room left them, in a heap by
        # rank (what _beneficiaries gives then); None until claims are made.
        self.ranked: list[tuple[Rank, str]] | None = None

    def __getitem__(self, owner: str) -> Wants:
        wants = self.made.get(owner)
        if wants is None:
            wants = self.made[owner] = Wants(self._tallies[owner], self._reserved[owner].reserved)
        return wants

    def __bool__(self) -> bool:
        return bool(self.owners)

    def wanting(self) -> list[str]:
        """The owners that still want something, in name order."""
        made = self.made
        if not made:
            return self.owners
        return [o for o in self.owners if o not in made or made[o]]

    def values(self) -> Iterator[Wants]:
        return (self[o] for o in self.owners)

    def smallest(self) -> Shape:
        """What no idle job of these owners asks for less of, in any resource: of each resource,
        the least any of their idle jobs' shapes asks for (those kept room will take included, so
        it may be less than what they still want). Reads the tallies: no :class:`Wants` is made."""
        tallies = self._tallies
        cpus, memory, gpus, disk = map(min, zip(*(s for o in self.owners for s in tallies[o].shapes),
                                                 strict=True))
        return (cpus, memory, gpus, disk)


def _reason(rule: str, ledger: Ledger, views: dict[str, OwnerView], ben: str,
            victim: str | None = None) -> Reason:
    if victim is None:
        return reason(rule, views[ben].target, ledger.active(ben), None, None)
    return reason(rule, views[ben].target, ledger.active(ben), views[victim].target,
                  ledger.active(victim))


_FREE_ROOM = "free room to the owner furthest below target"

VictimKey = tuple[float, float, JobId]  # how a victim candidate ranks: ascending comes first
# How an owner ranks, ascending first: Ledger.owed (beneficiaries) or Ledger.over (victims); in a
# flat ledger, their one figure itself (a float compares in one step, a tuple in several).
Rank = tuple[float, ...] | float


def _beneficiaries(wants: WantsBook, ledger: Ledger,
                   passed: set[str] | None = None) -> list[tuple[Rank, str]]:
    owners = wants.wanting()
    heap: list[tuple[Rank, str]]
    if ledger.groups is None:  # flat: the rank is the gap negated (Ledger.owed), worked out once
        heap = [(-g, o) for o, g in zip(owners, ledger.gaps_of(owners), strict=True)
                if g > EPS and (passed is None or o not in passed)]
    else:
        heap = [(ledger.owed(o), o) for o in owners
                if ledger.gap(o) > EPS and (passed is None or o not in passed)]
    heapq.heapify(heap)
    return heap


def claim_free_room(free: Iterable[tuple[str, Room]], wants: WantsBook, ledger: Ledger,
                    views: dict[str, OwnerView], partitionable: Container[str],
                    left: dict[str, Room] | None = None) -> list[Claim]:
    """Hand free room (place and room, in snapshot order, read only as far as needed) to owners
    below target, largest gap first, one job at a time. Updates ``ledger`` and ``wants`` for what
    it hands out, and puts in ``left`` the room each partitionable place it looked at has left."""
    claims: list[Claim] = []
    if not wants:
        return claims
    heap = _beneficiaries(wants, ledger)
    if ledger.groups is None and ledger.index is not None:
        wants.ranked = heap  # (kept up to date by _claim_flat)
        return _claim_flat(free, heap, wants, ledger, partitionable, left) if heap else claims
    if not heap:
        return claims
    passed: list[tuple[Rank, str]] = []
    rule = _FREE_ROOM
    # No job asks for less than this in any resource: room below it is no use to anyone, and is
    # passed over without asking every owner (a pool has many nearly full machines).
    smallest = wants.smallest()
    tree = ledger.groups is not None
    holds = _Holds()
    for place, offered in free:
        room = offered
        # Owners that cannot use this room are set aside and come back for the next one.
        while heap and fits(smallest, room):
            rank, owner = heapq.heappop(heap)
            if tree and rank != ledger.owed(owner):
                # A group's member gained: its siblings rank lower now (ranks only fall here).
                if ledger.gap(owner) > EPS:
                    heapq.heappush(heap, (ledger.owed(owner), owner))
                continue
            wanted = wants[owner]
            shape = wanted.fitting(room)
            if shape is None:
                passed.append((rank, owner))
                continue
            wanted.consume(shape)
            claims.append(claim(place, owner, _reason(rule, ledger, views, owner), shape, None))
            ledger.give(owner, holds[shape])
            gap = ledger.gap(owner)
            if gap > EPS and wanted:  # back where it ranks now (as _beneficiaries ranks it)
                heapq.heappush(heap, (ledger.owed(owner) if tree else -gap, owner))
            if place not in partitionable:
                room = NO_ROOM
                break
            room = less(room, shape)
        if left is not None and place in partitionable:
            left[place] = room
        for entry in passed:
            heapq.heappush(heap, entry)
        passed.clear()
        if not heap:
            break
    return claims


def _claim_flat(free: Iterable[tuple[str, Room]], heap: list[tuple[Rank, str]], wants: WantsBook,
                ledger: Ledger, partitionable: Container[str], left: dict[str, Room] | None
                ) -> list[Claim]:
    """:func:`claim_free_room` with flat shares in one resource: the same steps, with what the
    ledger's and the book's methods do written out (a simulated pool claims free room at nearly
    every cycle, a few places each time)."""
    claims: list[Claim] = []
    passed: list[tuple[Rank, str]] = []
    rule = _FREE_ROOM
    smallest = wants.smallest()
    holds = _Holds()
    holding, targets, index = ledger.holding, ledger.targets, ledger.index
    assert index is not None
    made = wants.made
    pop, push = heapq.heappop, heapq.heappush
    for place, offered in free:
        room = offered
        while heap and fits(smallest, room):
            rank, owner = pop(heap)
            wanted = made.get(owner) or wants[owner]
            shapes = wanted.shapes
            if len(shapes) == 1:  # Wants.fitting, for the one shape most owners' idle jobs have
                shape = next(iter(shapes))
                if not fits(shape, room):
                    passed.append((rank, owner))
                    continue
            else:
                found = wanted.fitting(room)
                if found is None:
                    passed.append((rank, owner))
                    continue
                shape = found
            # Wants.consume
            count = shapes[shape] - 1
            if count:
                shapes[shape] = count
            else:
                del shapes[shape]
            # _reason's figures (an owner's view has its target), then Ledger.give and Ledger.gap
            a = holding.get(owner, ZERO)
            aim = targets[owner]
            claims.append(claim(place, owner, reason(rule, aim, a[index], None, None), shape, None))
            b = holds[shape]
            holding[owner] = now = (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])
            gap = aim - now[index]
            if gap > EPS and shapes:  # back where it ranks now (as _beneficiaries ranks it)
                push(heap, (-gap, owner))
            if place not in partitionable:
                room = NO_ROOM
                break
            room = less(room, shape)
        if left is not None and place in partitionable:
            left[place] = room
        if passed:
            for entry in passed:
                push(heap, entry)
            passed.clear()
        if not heap:
            break
    return claims


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
    view's kept order only as far as a search goes. The kept order is independent of the time;
    candidates whose key's first figure is equal at the snapshot's time (a start in the future, or
    times rounded together) are neighbours in it, and are put in exact order as they are read.

    Each is read as a :class:`Victim` from what the view keeps (the tally's start and saved work,
    the job's row; or, for running jobs a pool counts, its record of them): no :class:`Job` is
    made for it (a simulated week vacates 250,000 jobs)."""

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
        _, start, since = self._candidates[job_id]  # its start and saved_since, as its row has them
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


class _Holds(dict[Shape, Vec]):
    """:func:`osep.core.resources.held` of each shape, worked out once (a plan weighs a job for
    each vacate it considers, of a few shapes)."""

    def __missing__(self, shape: Shape) -> Vec:
        amount = self[shape] = held(shape)
        return amount




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


class _Search:
    """The running jobs of a pool view arranged for finding victims, consumed as the plan goes.
    Everything is read on first use: most cycles need a few victims from a few owners. The view is
    never changed: what the plan takes is kept here."""

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
        self.holds = _Holds()  # what a job of a shape holds (resources.held), per shape met
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
        """Less than any of the owner's jobs holds, in every resource: an owner that cannot lose
        this cannot lose any of them (owners only lose jobs while a plan is made). Worked out from
        the shapes of all its running jobs, its victim candidates among them: a bound no higher
        than theirs, so an owner dropped by it has no candidate it could lose, and one kept by it
        is looked at as before (the view keeps no count of candidates per shape: a start and a
        finish cost two dictionary operations less)."""
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


def plan_vacates(
    budget: int,
    wants: WantsBook,
    ledger: Ledger,
    views: dict[str, OwnerView],
    pool: PoolView,
    free: MutableMapping[str, Room],
    target: Target,
    order: VictimOrder,
    now: float,
    notes: list[str],
    claims: list[Claim],
    above: list[str],
) -> list[Vacate]:
    """Up to ``budget`` vacates, each with its beneficiary. Updates ``ledger`` and ``wants``; adds
    to ``notes`` the jobs no room can be made for, and to ``claims`` (the claims made so far, whose
    owners are never victims) room that earlier vacates left over. ``above``: the owners above
    target with running jobs, as counted before the claims (:attr:`Census.above`)."""
    # Flat, the owners still below target with idle jobs are those the claims left in their heap.
    beneficiaries = wants.ranked if wants.ranked is not None else _beneficiaries(wants, ledger)
    if not beneficiaries:  # the claims served everyone below target (most cycles of a busy pool)
        return []
    search = _Search(pool, free, order, now, above)
    search.gainers = {c.beneficiary for c in claims}
    holds, somewhere = search.holds, search.somewhere
    partitionable = bool(pool.rooms)
    flat = ledger.groups is None
    rule = (
        f"vacate for the owner furthest below its {target.value} target, from the owner "
        f"furthest above its own, lowest {order.value} first"
    )
    vacates: list[Vacate] = []
    group = 0
    passed: set[str] = set()  # beneficiaries no room can be made for this cycle
    # The beneficiary stays on top of its heap while room is sought for it: given room, it is put
    # back where it ranks now in one sift (or taken out), passed over, taken out.
    while beneficiaries and len(vacates) < budget:
        ben = beneficiaries[0][1]
        found: tuple[Shape, list[Victim]] | None = None
        wanted = wants[ben]
        for shape in list(wanted.shapes):
            if shape not in somewhere and not search.fits_anywhere(shape):
                notes.append(f"{ben}: {wanted.shapes[shape]} idle job(s) asking for "
                             f"{_show(shape)} fit no place in the pool: never vacated for")
                del wanted.shapes[shape]
                continue
            left = search.left_over(shape) if search.leftover else None
            if left is not None:
                found = (shape, [])
                claims.append(Claim(left[0], ben, _reason("room left over by vacates this cycle",
                                                          ledger, views, ben), shape, after=left[1]))
                break
            victims = search.single(shape, ledger, ben)
            if victims is None and budget - len(vacates) >= 2 and partitionable:
                victims = search.several(shape, ledger, budget - len(vacates), ben)
            if victims:  # an empty set would mean the room was there all along: not for a vacate
                found = (shape, victims)
                break
        if found is None:
            heapq.heappop(beneficiaries)
            passed.add(ben)
            continue  # nothing running anywhere can make room for this beneficiary's jobs
        shape, victims = found
        wanted.consume(shape)
        if not victims:  # room left over: claimed above
            ledger.give(ben, held(shape))
            search.gainers.add(ben)
            beneficiaries = _next(beneficiaries, ben, wants, ledger, passed)
            continue
        place = search.vacated(victims, shape, group)
        # What _reason gives: the beneficiary's figures stay as they are until it is given the room.
        ben_target, ben_active = views[ben].target, ledger.active(ben)
        for job in victims:
            owner = job.owner
            vacates.append(vacate(job.id, owner, job.slot, ben, job.start_time,
                                  job.run_time, job.lost_work,
                                  reason(rule, ben_target, ben_active, views[owner].target,
                                         ledger.active(owner)), place, shape, group))
            ledger.take(owner, holds[job.shape])
        ledger.give(ben, holds[shape])
        search.gainers.add(ben)
        group += 1
        if flat:  # _next, flat: only the beneficiary's rank moved
            gap = ledger.gap(ben)
            if gap > EPS and wanted:
                heapq.heapreplace(beneficiaries, (-gap, ben))  # Ledger.owed's figure, flat
            else:
                heapq.heappop(beneficiaries)
        else:
            beneficiaries = _next(beneficiaries, ben, wants, ledger, passed)
    return vacates


def _next(heap: list[tuple[Rank, str]], ben: str, wants: WantsBook, ledger: Ledger,
          passed: set[str]) -> list[tuple[Rank, str]]:
    """The beneficiaries after ``ben``, on top of ``heap``, was given room. Flat, only its own rank
    moved; in an owner tree every member of a group that gained or lost did, so the ranks are made
    afresh."""
    if ledger.groups is not None:
        return _beneficiaries(wants, ledger, passed)
    gap = ledger.gap(ben)
    if gap > EPS and wants[ben]:
        heapq.heapreplace(heap, (-gap, ben))  # Ledger.owed's figure, flat
    else:
        heapq.heappop(heap)
    return heap


def _show(shape: Shape) -> str:
    cpus, memory, gpus, disk = shape
    out = f"{cpus} cpus, {memory} MiB"
    return out + (f", {gpus} gpus" if gpus else "") + (f", {disk} KiB disk" if disk else "")

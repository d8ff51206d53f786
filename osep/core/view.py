"""A pool view kept, not rebuilt: what a decision reads of a pool, updated job by job.

A decision needs per owner what its jobs add up to, its idle jobs by shape (in queue order) and its
running jobs in the order they would be vacated; and per place what is busy, leaving or free. Counting
these from a snapshot's jobs costs a pass over every job; a pool adapter that sees jobs change
(the simulator, or a live adapter following its schedds) keeps a :class:`PoolView` instead and tells
it each change: :meth:`PoolView.put_job` (a job added or changed), :meth:`PoolView.drop_job` (gone),
:meth:`PoolView.put_slot` and :meth:`PoolView.drop_slot`. Each costs O(1) (a heap push for an idle
job of an owner with idle jobs of several shapes; a victim order is sorted when read), but for
dropping or changing a static slot with jobs on it, a pass over the jobs. A pool can tell a
job's change field by field instead (:meth:`PoolView.change`), or many jobs' changes at once as rows
(:meth:`PoolView.tell`, what the simulated pool does at each snapshot): the view keeps the fields, and
makes the :class:`Job` only when something reads it (:class:`JobTable`). A pool can also give an
owner's idle jobs as counts per shape, with no entry per job (:meth:`PoolView.count_idle`, what the
simulated pool does; a live pool's idle groups: :meth:`PoolView.put_idle`), and its running jobs on
static slots the same way (:meth:`PoolView.count_running`: counts per shape, and the pool's own
record of them in start order for the victim orders; the view then reads which static slots are
free and which run a job from the pool, :meth:`PoolView.count_static`). A snapshot
carries the view it was taken from (:attr:`osep.core.model.Snapshot.view`); a snapshot without one
gets one built from its jobs and slots in one pass (:func:`view_of`), which is what a live cycle does
after its queries.

What the view keeps is exactly what :mod:`osep.core.counting` would count from the snapshot's jobs
and slots, and the orders are the ones the decision uses:

- per owner (:class:`Tally`): running, idle and vacating jobs and what each adds up to per requested
  resource (integers, so sums do not depend on the order jobs came in); running and idle jobs are
  counted per shape as they change, and added up when the sums are read;
- per owner and shape, its idle jobs' ids in a heap: the first in queue order (the smallest id) is
  what :class:`osep.core.victims.Wants` orders shapes by;
- per owner, its victim candidates (running on a slot the view has, start known, vacatable) in two
  orders: latest start first (the lowest wall clock), and latest start-or-checkpoint first (the
  least lost work), ties by job id. Both are independent of the time; the decision reads them at the
  snapshot's time and puts back in exact order any neighbours whose wall clock or lost work are equal
  then (a start in the future, or times rounded together). A checkpoint moves a job's place in the
  lost-work order: the adapter puts the job again when its checkpoint time changes. An order is
  sorted when it is first read, and from then on brought up to date when it is read again: the
  candidates added since are sorted and joined to it (at its end, without a merge, when they all come
  after it, as the jobs a pool starts do in the wall-clock order), and the entries of candidates that
  left are passed over (and dropped once they outnumber the rest). A job's start and finish cost
  O(1) here; a decision reads the orders of the few owners above target;
- per slot the view has, how many running jobs are on it; per slot name, the vacating jobs naming
  it, and the running jobs naming it but for a static slot the view has (those are found by a pass
  over the jobs should the slot leave the view or change, as a pool's static slots seldom do: a
  static slot's job costs no entry of its own); the static slots, and those that are free; every
  partitionable slot's unclaimed room; every place's whole room (what it has were it empty); the
  pool's totals per resource;
- per place with a partitionable slot or dynamic slots (what the decision carves room from), the
  victim candidates on it (a static slot's candidate is found by its slot's name).

The decision never changes a view (its own bookkeeping of what it took stays in the call).
"""

from __future__ import annotations

import heapq
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from operator import attrgetter
from typing import Any, cast

from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.core.resources import Room, Shape, Vec, add_room
from osep.errors import PoolError


def saved_since(job: Job) -> float:
    """Where the work a vacate would lose begins: the last checkpoint of this run, or its start."""
    since = job.start_time if job.start_time is not None else 0.0
    if job.checkpoint_time is not None and job.checkpoint_time > since:
        since = job.checkpoint_time
    return since


# The states a view tells apart (a module's name is read several times faster than an enum's member).
_RUNNING, _IDLE, _VACATING = JobState.RUNNING, JobState.IDLE, JobState.VACATING
_SHAPE = attrgetter("cpus", "memory", "gpus", "disk")  # Job.shape, at C speed
_ASKS = (attrgetter("cpus"), attrgetter("memory"), attrgetter("gpus"), attrgetter("disk"))


def _sum4(jobs: list[Job]) -> list[int]:
    """What ``jobs`` ask for, added up: cpus, memory, gpus, disk (at C speed)."""
    return [sum(map(ask, jobs)) for ask in _ASKS]


def _sums(counts: Mapping[Shape, int]) -> list[int]:
    """What jobs of these shapes, so many of each, ask for: cpus, memory, gpus, disk."""
    c = m = g = d = 0
    for (cpus, memory, gpus, disk), n in counts.items():
        c += n * cpus
        m += n * memory
        g += n * gpus
        d += n * disk
    return [c, m, g, d]


# A job as the view keeps it when a pool tells it the fields (no Job made): owner, state, submit
# time, slot, start, checkpoint, shape (cpus, memory, gpus, disk), vacatable.
Row = tuple[str, JobState, float, str | None, float | None, float | None, Shape, bool]


def _row(job: Job) -> Row:
    return (job.owner, job.state, job.submit_time, job.slot, job.start_time, job.checkpoint_time,
            (job.cpus, job.memory, job.gpus, job.disk), job.vacatable)


class JobTable(Mapping[JobId, Job]):
    """The view's jobs by id, in the order they were added. A job put as a :class:`Job` is that
    object; a job a pool told field by field (:meth:`PoolView.change`, :meth:`PoolView.tell`) is
    kept as a :data:`Row` and made a :class:`Job` when first read, that same object then read until
    the job changes. A decision reads a victim candidate's :meth:`row` (no :class:`Job` made) unless
    it weighs several on one partitionable slot."""

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
        return _row(entry)


class Tally:
    """One owner's jobs as the decision counts them (see the module's description)."""

    __slots__ = ("_dead", "_new", "_orders", "_ran", "_serial", "_waiting", "candidates", "firsts",
                 "idle", "ids", "leaving", "listed", "run_check", "run_shapes", "running", "runs",
                 "shapes", "source", "vacating")

    def __init__(self) -> None:
        self.running = 0
        self.idle = 0
        self.vacating = 0
        # Running jobs per shape (idle ones: ``shapes``). What the owner's running and idle jobs ask
        # for (:attr:`ran`, :attr:`waiting`) is added up from these when read, not job by job:
        # a change costs one count, and a decision reads the sums of a few dozen shapes at most
        # (kept until the counts change: None then).
        self.run_shapes: dict[Shape, int] = {}
        self._ran: list[int] | None = None
        self._waiting: list[int] | None = None
        # What the owner's vacating jobs ask for: cpus, memory, gpus, disk.
        self.leaving = [0, 0, 0, 0]
        # Idle jobs per shape: how many, and which. Only an owner with idle jobs of several shapes
        # needs their queue order: then each shape has a heap of its jobs' ids whose top
        # is always one of them, the first in queue order (entries of jobs no longer idle with the
        # shape are dropped when they come to the top).
        self.shapes: dict[Shape, int] = {}
        self.ids: dict[Shape, set[JobId]] = {}
        self.firsts: dict[Shape, list[JobId]] = {}
        # A view built in one pass lists the idle jobs here, and sorts them into ``ids`` (and
        # ``firsts``) when it is first needed.
        self.listed: list[Job] | None = None
        # Idle jobs a pool counts instead of telling them one by one (PoolView.count_idle): no ids
        # kept, and the first of a shape asked of the pool when read.
        self.source: Callable[[Shape], JobId] | None = None
        # Victim candidates: id -> (serial, start, since), the serial telling this entry from an
        # earlier one of the same job.
        self.candidates: dict[JobId, tuple[int, float, float]] = {}
        self._serial = 0
        # The two orders once read ([0]: wall clock, keys (-start, id, serial); [1]: lost work,
        # keys (-since, -start, id, serial)), each a list of keys sorted from last to first (read
        # backwards), None until read; the keys of candidates added since it was last read; and
        # how many of its keys (and new ones) are of candidates no longer there.
        self._orders: list[list[tuple[Any, ...]] | None] = [None, None]
        self._new: list[list[tuple[Any, ...]]] = [[], []]
        self._dead = [0, 0]
        # Running jobs a pool counts instead of telling them (PoolView.count_running): its record
        # of them, id -> (start, slot, shape), in start order (no checkpoints: the start is where
        # a vacate's lost work begins), and what raises if the pool changed since it told them.
        self.runs: dict[JobId, tuple[float, str, Shape]] | None = None
        self.run_check: Callable[[], None] | None = None

    def __bool__(self) -> bool:
        return bool(self.running or self.idle or self.vacating)

    @property
    def ran(self) -> list[int]:
        """What the owner's running jobs ask for: cpus, memory, gpus, disk (read, never change)."""
        ran = self._ran
        if ran is None:
            ran = self._ran = _sums(self.run_shapes)
        return ran

    @property
    def waiting(self) -> list[int]:
        """What the owner's idle jobs ask for: cpus, memory, gpus, disk (read, never change)."""
        waiting = self._waiting
        if waiting is None:
            waiting = self._waiting = _sums(self.shapes)
        return waiting

    def first(self, shape: Shape) -> JobId:
        """The first idle job of ``shape`` in queue order (the smallest id)."""
        heap = self.firsts.get(shape)
        if heap is not None:
            return heap[0]
        # The owner's only shape: its queue order is not kept.
        if self.listed is not None:
            return min(job.id for job in self.listed if job.shape == shape)
        ids = self.ids.get(shape)
        if ids is None and self.source is not None:  # counted, not told job by job
            return self.source(shape)
        assert ids is not None, f"no idle job of shape {shape}"
        return min(ids)

    def _sort_out(self) -> None:
        listed = self.listed
        if listed is None:
            return
        self.listed = None
        for job in listed:
            ids = self.ids.get(job.shape)
            if ids is None:
                self.ids[job.shape] = {job.id}
            else:
                ids.add(job.id)
        if len(self.shapes) > 1:
            self._heaps()

    def _heaps(self) -> None:
        """Keep the queue order of every shape (the owner has idle jobs of several now)."""
        for shape, ids in self.ids.items():
            heap = list(ids)
            heapq.heapify(heap)
            self.firsts[shape] = heap

    def _add_idle(self, job_id: JobId, shape: Shape) -> None:
        self._waiting = None
        if self.listed is not None:
            self._sort_out()
        count = self.shapes.get(shape, 0)
        self.shapes[shape] = count + 1
        if count:
            self.ids[shape].add(job_id)
        else:
            self.ids[shape] = {job_id}
        if len(self.shapes) > 1:
            if not self.firsts:
                self._heaps()
            else:
                heap = self.firsts.setdefault(shape, [])
                heapq.heappush(heap, job_id)

    def _drop_idle(self, job_id: JobId, shape: Shape) -> None:
        self._waiting = None
        if self.listed is not None:
            self._sort_out()
        left = self.shapes[shape] - 1
        if not left:
            del self.shapes[shape]
            del self.ids[shape]
            self.firsts.pop(shape, None)
            if len(self.shapes) < 2:
                self.firsts.clear()
            return
        self.shapes[shape] = left
        ids = self.ids[shape]
        ids.discard(job_id)
        heap = self.firsts.get(shape)
        if heap is None:
            return
        while heap[0] not in ids:
            heapq.heappop(heap)
        if len(heap) > 2 * left + 64:  # mostly entries of jobs gone: made afresh
            heap[:] = ids
            heapq.heapify(heap)

    def add_victim(self, job_id: JobId, start: float, since: float) -> None:
        """``job_id`` is a victim candidate (it is not one already), started at ``start``, its
        work saved until ``since``."""
        serial = self._serial = self._serial + 1
        self.candidates[job_id] = (serial, start, since)
        orders = self._orders
        if orders[0] is not None:
            self._new_key(0, (-start, job_id, serial))
        if orders[1] is not None:
            self._new_key(1, (-since, -start, job_id, serial))

    def _new_key(self, k: int, key: tuple[Any, ...]) -> None:
        new = self._new[k]
        new.append(key)
        if len(new) > 2 * len(self.candidates) + 64:  # an order not read for long: made afresh
            self._orders[k] = None
            new.clear()
            self._dead[k] = 0

    def drop_victim(self, job_id: JobId) -> None:
        """``job_id`` is no longer a victim candidate (it is one now)."""
        del self.candidates[job_id]
        orders, dead = self._orders, self._dead
        if orders[0] is not None:
            dead[0] += 1
        if orders[1] is not None:
            dead[1] += 1

    def _order(self, k: int) -> list[tuple[Any, ...]]:
        """Order ``k``, brought up to date (see :meth:`victims`)."""
        candidates = self.candidates
        order = self._orders[k]
        if order is None or self._dead[k] > len(candidates) + 64:
            if k == 0:
                order = [(-start, i, serial) for i, (serial, start, _) in candidates.items()]
            else:
                order = [(-since, -start, i, serial)
                         for i, (serial, start, since) in candidates.items()]
            order.sort(reverse=True)
            self._orders[k] = order
            self._new[k].clear()
            self._dead[k] = 0
            return order
        new = self._new[k]
        if new:
            new.sort(reverse=True)
            if order and new[0] > order[-1]:  # not all after the order's last: merged
                order.extend(new)
                order.sort(reverse=True)
            else:
                order.extend(new)
            new.clear()
        dead = self._dead
        while order:  # the last keys of candidates gone are dropped
            key = order[-1]
            entry = candidates.get(key[-2])
            if entry is not None and entry[0] == key[-1]:
                break
            order.pop()
            dead[k] -= 1
        return order

    def victims(self, wallclock: bool) -> Iterator[JobId]:
        """Victim candidates in the kept order (see the module's description). Running jobs a pool
        counts come from its record, latest start first, in both orders (their work is saved
        until their start); equal starts in the record's order, put in exact order by the reader
        as other equal keys are."""
        runs = self.runs
        if runs is not None:
            assert self.run_check is not None
            self.run_check()
            yield from reversed(runs)  # (dictionaries keep their insertion order)
            return
        order = self._order(0 if wallclock else 1)
        candidates = self.candidates
        for key in reversed(order):
            job_id = key[-2]
            entry = candidates.get(job_id)
            if entry is not None and entry[0] == key[-1]:
                yield job_id


class PoolView:
    """What a decision reads of a pool, kept up to date by the pool's adapter (see the module's
    description). ``stamp`` counts the changes: a snapshot taken from the view records it, and a
    view that changed since is not read for that snapshot."""

    def __init__(self) -> None:
        self.stamp = 0
        self.jobs = JobTable()
        self._entries = self.jobs.entries
        self.slots: dict[str, Slot] = {}
        self.tallies: dict[str, Tally] = {}  # owners with a running, idle or vacating job
        self.busy: Counter[str] = Counter()  # slot present -> running jobs on it
        self.leaving: Counter[str] = Counter()  # slot name -> vacating jobs naming it
        # Slot name -> the running jobs naming it, but for a static slot the view has (its jobs
        # are counted in ``busy``, and found by a pass over the jobs should it leave the view).
        self.running_on: dict[str, set[JobId]] = {}
        self.unplaced = 0  # running jobs on no slot the view has
        self.free_static: set[str] = set()  # static slots with no running or vacating job
        # The static slots running a job, for a pool that counts its running jobs (count_static);
        # ``busy`` then has none of them.
        self.running_static: Mapping[str, int] | None = None
        # What raises if the pool that counts jobs for this view changed since it last told it
        # (counted_by): such a view is read for a snapshot only while it does not.
        self.pool_check: Callable[[], None] | None = None
        self.static: set[str] = set()  # the static slots present
        # The most free static slots seen at a snapshot since the set was last made afresh: a set
        # keeps the table of its largest size, and a decision lists it at every cycle.
        self._free_peak = 0
        # Static slots with other than one core (none: the free static slots' cores are as many as
        # they are, not summed slot by slot every decision).
        self.odd_static = 0
        self.rooms: dict[str, Room] = {}  # partitionable slot -> its unclaimed room
        self.open_rooms: set[str] = set()  # partitionable slots with any room unclaimed
        # Place with a partitionable slot or dynamic slots -> victim candidates on it.
        self.on_place: dict[str, set[JobId]] = {}
        self.children: dict[str, set[str]] = {}  # slot name -> dynamic slots naming it as parent
        self.whole: dict[str, Room] = {}  # place (a slot without parent) -> its room, were it empty
        self.wholes: Counter[Room] = Counter()  # how many places have each whole room
        self._totals = [0, 0, 0, 0, 0]  # slots, cpus, memory, gpus, disk
        self._capacity = 0
        self.duplicates = 0  # jobs or slots a snapshot listed twice (the last one counts)
        # The last snapshot taken, while it has copied nothing (it is not kept alive for this).
        self._taken: weakref.ref[Snapshot] | None = None

    # -- what the decision reads ------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Capacity in slots, as :attr:`osep.core.model.Snapshot.capacity` counts it."""
        return self._capacity

    def totals(self) -> Vec:
        """Capacity in every resource, as :meth:`osep.core.model.Snapshot.totals` counts it."""
        t = self._totals
        return (float(t[0]), float(t[1]), float(t[2]), float(t[3]), float(t[4]))

    # -- changes ----------------------------------------------------------------------------------

    def put_job(self, job: Job) -> None:
        """A job was added or changed (state, slot, start, checkpoint, request)."""
        if self._taken is not None:
            self._settle()
        entries = self._entries
        old = entries.get(job.id)
        entries[job.id] = job
        if old is not None:
            self._job_out(job.id, old if isinstance(old, tuple) else _row(old))
        self._job_in(job.id, _row(job))
        self.stamp += 1

    def change(self, job_id: JobId, owner: str, state: JobState, submit: float, slot: str | None,
               start: float | None, checkpoint: float | None, shape: Shape,
               vacatable: bool = True) -> None:
        """What :meth:`put_job` of a :class:`Job` with these fields does, without making one (a
        pool that sees its jobs change tells the view the fields; the job is made a :class:`Job`
        only if something reads it)."""
        if self._taken is not None:
            self._settle()
        row = (owner, state, submit, slot, start, checkpoint, shape, vacatable)
        entries = self._entries
        old = entries.get(job_id)
        entries[job_id] = row
        if old is not None:
            self._job_out(job_id, old if isinstance(old, tuple) else _row(old))
        self._job_in(job_id, row)
        self.stamp += 1

    def tell(self, changes: Iterable[tuple[JobId, Row | None]]) -> None:
        """Each job's change in turn, as its :data:`Row` now (None: it left the pool): what
        :meth:`change` (or :meth:`drop_job`) of each does, in one call; a row the view has already
        changes nothing (a job read as a :class:`Job` stays that object). A pool that notes which
        jobs changed tells them so at its next snapshot; the most common changes (a new idle job, a job
        running on a static slot, new to the view or idle in it until now, a job gone from one) are
        done here without a call each."""
        if self._taken is not None:
            self._settle()
        entries, tallies, static = self._entries, self.tallies, self.static
        busy, free_static, leaving = self.busy, self.free_static, self.leaving
        idle, running = _IDLE, _RUNNING
        told = 0
        for job_id, row in changes:
            if row is None:  # gone
                old = entries.pop(job_id, None)
                if old is None:
                    continue
                told += 1
                if not isinstance(old, tuple):
                    old = _row(old)
                owner, state, _, name, start, _, shape, vacatable = old
                if state is not running or name not in static:
                    self._job_out(job_id, old)
                    continue
                # A job gone from a static slot the view has (_job_out, written out: the most
                # common end).
                mine = tallies[owner]
                mine.running -= 1
                mine._ran = None
                run_shapes = mine.run_shapes
                left = run_shapes[shape] - 1
                if left:
                    run_shapes[shape] = left
                else:
                    del run_shapes[shape]
                left = busy[name] - 1
                if left:
                    busy[name] = left
                else:
                    busy.pop(name)  # (Counter's del is a Python call)
                    if name not in leaving:
                        free_static.add(name)
                if start is not None and vacatable:
                    orders = mine._orders
                    if orders[0] is None and orders[1] is None:
                        del mine.candidates[job_id]
                    else:
                        mine.drop_victim(job_id)
                if not (mine.running or mine.idle or mine.vacating):
                    del tallies[owner]
                continue
            old = entries.get(job_id)
            if old is not None:
                if not isinstance(old, tuple):
                    old = _row(old)
                if old == row:
                    continue
            entries[job_id] = row
            told += 1
            owner, state, _, name, start, since, shape, vacatable = row
            if old is None and state is idle:
                # A new idle job, what _job_in does with it (written out).
                tally = tallies.get(owner)
                if tally is None:
                    tally = tallies[owner] = Tally()
                tally.idle += 1
                tally._waiting = None
                if tally.listed is None and not tally.firsts:  # Tally._add_idle, written out
                    shapes = tally.shapes
                    count = shapes.get(shape, 0)
                    if count:
                        shapes[shape] = count + 1
                        tally.ids[shape].add(job_id)
                        continue
                    if not shapes:
                        shapes[shape] = 1
                        tally.ids[shape] = {job_id}
                        continue
                tally._add_idle(job_id, shape)
                continue
            if (state is not running or name not in static
                    or (old is not None and (old[1] is not idle or old[0] != owner
                                             or old[6] != shape))):
                if old is not None:
                    self._job_out(job_id, old)
                self._job_in(job_id, row)
                continue
            # A job running on a static slot the view has, new to the view or idle in it until now
            # (_job_out, _job_in and _placed, written out: the most common change).
            assert self.running_static is None, "a pool that counts its running jobs told one"
            if old is None:
                tally = tallies.get(owner)
                if tally is None:
                    tally = tallies[owner] = Tally()
            else:
                tally = tallies[owner]
                tally.idle -= 1
                tally._drop_idle(job_id, shape)
            tally.running += 1
            tally._ran = None
            run_shapes = tally.run_shapes
            run_shapes[shape] = run_shapes.get(shape, 0) + 1
            busy[name] = busy.get(name, 0) + 1
            free_static.discard(name)
            if start is not None and vacatable:  # a victim candidate
                if since is None or since < start:
                    since = start
                if tally._orders[0] is None and tally._orders[1] is None:
                    serial = tally._serial = tally._serial + 1
                    tally.candidates[job_id] = (serial, start, since)
                else:
                    tally.add_victim(job_id, start, since)
        self.stamp += told

    def drop_job(self, job_id: JobId) -> None:
        """A job left the pool (completed, removed, or no longer shown)."""
        if self._taken is not None:
            self._settle()
        old = self._entries.pop(job_id, None)
        if old is not None:
            self._job_out(job_id, old if isinstance(old, tuple) else _row(old))
            self.stamp += 1

    def put_slot(self, slot: Slot) -> None:
        """A slot was added or changed (a partitionable slot's unclaimed room, say)."""
        if self._taken is not None:
            self._settle()
        old = self.slots.get(slot.name)
        if old is not None:
            self._slot_out(old)
        self.slots[slot.name] = slot
        self._slot_in(slot)
        self.stamp += 1

    def drop_slot(self, name: str) -> None:
        if self._taken is not None:
            self._settle()
        old = self.slots.get(name)
        if old is not None:
            self._slot_out(old)
            del self.slots[name]
            self.stamp += 1

    def put_idle(self, owner: str, shape: Shape, count: int, first: JobId) -> None:
        """``count`` idle jobs of ``owner`` asking for ``shape``, ``first`` the first of them in queue
        order: what :meth:`put_job` of each would give the decision, without an object per job (a
        live pool reads its idle jobs as counts from its schedds). They are not in :attr:`jobs`, and
        cannot be changed or dropped one by one: a view made so is for the decisions on one
        snapshot."""
        if self._taken is not None:
            self._settle()
        if count <= 0:
            return
        tally = self._tally(owner)
        tally.idle += count
        tally._add_idle(first, shape)
        tally.shapes[shape] += count - 1
        self.stamp += 1

    def count_idle(self, owner: str, counts: dict[Shape, int], first: Callable[[Shape], JobId]
                   ) -> None:
        """``owner``'s idle jobs are now ``counts`` of each shape (empty: none), and ``first(shape)``
        gives the first of a shape in queue order: what :meth:`put_job` of each idle job would give
        the decision, with no entry per job (the simulated pool keeps its idle jobs' counts as they
        change, and tells the view those of the owners whose counts changed at its next
        snapshot). The view keeps ``counts`` as it is given (the caller hands it over) and asks
        ``first`` only while the pool is as it was when it told the view. Idle jobs so counted are
        not in :attr:`jobs`, nor in a snapshot's jobs: a pool that counts an owner's idle jobs
        tells none of them job by job."""
        idle = sum(counts.values())
        tally = self._counting(owner, idle)
        if tally is None:
            return
        assert not tally.ids and tally.listed is None, f"{owner}'s idle jobs are told one by one"
        tally.idle = idle
        tally.shapes = counts
        tally._waiting = None
        tally.source = first
        self._counted(owner, tally)

    def count_running(self, owner: str, counts: dict[Shape, int],
                      runs: dict[JobId, tuple[float, str, Shape]]) -> None:
        """``owner``'s running jobs are now ``counts`` of each shape (empty: none), each on a static
        slot of the view's, every one a victim candidate, listed in ``runs`` (id -> start, slot,
        shape) in the order they started: what :meth:`put_job` of each would give the decision,
        with no entry per job. A pool that counts its running jobs so (the simulated pool, on
        static slots only, without periodic checkpoints) tells the view the counts of the owners
        whose running jobs changed at its next snapshot, hands ``counts`` over, and keeps ``runs``
        up to date itself; the victims are read from it only while the pool is as it was when it
        told the view (the check it gave :meth:`counted_by`). A
        vacating job is told as a row, as before. Running jobs so counted are not in :attr:`jobs`,
        nor in a snapshot's jobs, and an owner's running jobs are either all counted or all
        told."""
        running = sum(counts.values())
        tally = self._counting(owner, running)
        if tally is None:
            return
        assert self.running_static is not None and self.pool_check is not None, \
            "counted_by and count_static first"
        assert tally.runs is not None or not tally.running, f"{owner}'s running jobs are told one by one"
        tally.running = running
        tally.run_shapes = counts
        tally._ran = None
        tally.runs = runs
        tally.run_check = self.pool_check
        self._counted(owner, tally)

    def _counting(self, owner: str, count: int) -> Tally | None:
        """The tally a pool's count of ``count`` of ``owner``'s jobs goes in (made if need be; None:
        the owner has no job the view knows of, and gets none)."""
        if self._taken is not None:
            self._settle()
        tally = self.tallies.get(owner)
        if tally is None and count:
            tally = self.tallies[owner] = Tally()
        return tally

    def _counted(self, owner: str, tally: Tally) -> None:
        """``owner``'s tally took a pool's count: dropped if it counts no job now."""
        if not tally:
            del self.tallies[owner]
        self.stamp += 1

    def counted_by(self, check: Callable[[], None]) -> None:
        """A pool counts some of its jobs for this view (:meth:`count_idle`, :meth:`count_running`):
        the jobs a snapshot lists are not all the view counts, so the view is read for a snapshot
        only while the pool is as it was when the snapshot was taken; ``check`` raises if not
        (:func:`view_of`)."""
        self.pool_check = check

    def count_static(self, free: set[str], running: Mapping[str, int]) -> None:
        """The pool counts its running jobs (:meth:`count_running`), and has static slots only: it
        marks which are free in :attr:`free_static` (``free``: no job at all, running or vacating),
        reached through the view as its jobs come and go, and keeps which run a job (``running``:
        one each); the view reads both from now on (:attr:`running_static`). Told before the slots,
        as they are when told; the two agree with the view's jobs at each snapshot (the pool tells
        it what changed first). The view changes neither but to make :attr:`free_static` afresh,
        with the same names, as it does for any pool, as long as the pool keeps to this: its
        running jobs are never told (asserted), and its static slots are neither put again nor
        dropped."""
        if self._taken is not None:
            self._settle()
        self.free_static = free
        self.running_static = running
        self.stamp += 1

    def runs_on(self, name: str) -> bool:
        """Whether a job runs on the slot ``name``."""
        running = self.running_static
        return name in self.busy or (running is not None and name in running)

    def room_on(self, place: str) -> Room:
        """What the partitionable slot ``place`` has for a new job now or as soon as its leaving
        jobs are gone: its unclaimed part and every dynamic slot of it with no job running (its job
        vacating or gone). What a job of anyone else was started on is not there."""
        room = self.rooms.get(place, (0, 0, 0, 0))
        for kid in self.children.get(place, ()):
            if not self.runs_on(kid):
                room = add_room(room, self.slots[kid].room)
        return room

    # -- jobs -------------------------------------------------------------------------------------

    def _tally(self, owner: str) -> Tally:
        tally = self.tallies.get(owner)
        if tally is None:
            tally = self.tallies[owner] = Tally()
        return tally

    def _job_in(self, job_id: JobId, row: Row) -> None:
        owner, state, _, name, _, _, shape, _ = row
        if state is _RUNNING:
            assert self.running_static is None, "a pool that counts its running jobs told one"
            tally = self.tallies.get(owner)
            if tally is None:
                tally = self.tallies[owner] = Tally()
            tally.running += 1
            tally._ran = None
            run_shapes = tally.run_shapes
            run_shapes[shape] = run_shapes.get(shape, 0) + 1
            self._run_on(job_id, row, tally, name)
        elif state is _IDLE:
            tally = self.tallies.get(owner)
            if tally is None:
                tally = self.tallies[owner] = Tally()
            tally.idle += 1
            tally._add_idle(job_id, shape)
        elif state is _VACATING:
            tally = self.tallies.get(owner)
            if tally is None:
                tally = self.tallies[owner] = Tally()
            tally.vacating += 1
            leaving = tally.leaving
            for k in range(4):
                leaving[k] += shape[k]
            if name is not None:
                self.leaving[name] = self.leaving.get(name, 0) + 1
                if self.running_static is None:  # (else the pool keeps the free slots)
                    self.free_static.discard(name)

    def _job_out(self, job_id: JobId, row: Row) -> None:
        owner, state, _, name, _, _, shape, _ = row
        if state is _RUNNING:
            tally = self.tallies[owner]
            tally.running -= 1
            tally._ran = None
            run_shapes = tally.run_shapes
            left = run_shapes[shape] - 1
            if left:
                run_shapes[shape] = left
            else:
                del run_shapes[shape]
            if name is None:
                self.unplaced -= 1
            else:
                if name not in self.static:
                    on = self.running_on[name]
                    if len(on) > 1:
                        on.discard(job_id)
                    else:
                        del self.running_on[name]
                slot = self.slots.get(name)
                if slot is None:
                    self.unplaced -= 1
                elif not slot.partitionable and slot.parent is None:
                    # A static slot: _unplaced and _refree, written out (the most common finish).
                    busy = self.busy
                    left = busy[name] - 1
                    if left:
                        busy[name] = left
                    else:
                        busy.pop(name)  # (Counter's del is a Python call)
                    if row[4] is not None and row[7]:
                        orders = tally._orders
                        if orders[0] is None and orders[1] is None:
                            del tally.candidates[job_id]
                        else:
                            tally.drop_victim(job_id)
                    if name in busy or name in self.leaving:
                        self.free_static.discard(name)
                    else:
                        self.free_static.add(name)
                else:
                    self._unplaced(job_id, row, tally, slot)
        elif state is _IDLE:
            tally = self.tallies[owner]
            tally.idle -= 1
            tally._drop_idle(job_id, shape)
        elif state is _VACATING:
            tally = self.tallies[owner]
            tally.vacating -= 1
            leaving = tally.leaving
            for k in range(4):
                leaving[k] -= shape[k]
            if name is not None:
                self.leaving[name] -= 1
                if not self.leaving[name]:
                    self.leaving.pop(name)
                self._refree(name)
        else:
            return
        if not (tally.running or tally.idle or tally.vacating):
            del self.tallies[owner]

    def _run_on(self, job_id: JobId, row: Row, tally: Tally, name: str | None) -> None:
        """The running job ``job_id`` (``row``, counted in its owner's ``tally``) names slot
        ``name``: listed as running there, and placed on it if the view has the slot (else, or
        with no slot named, counted as unplaced)."""
        if name is None:
            self.unplaced += 1
            return
        if name not in self.static:
            on = self.running_on.get(name)
            if on is None:
                self.running_on[name] = {job_id}
            else:
                on.add(job_id)
        slot = self.slots.get(name)
        if slot is not None:
            self._placed(job_id, row, tally, slot)
        else:
            self.unplaced += 1

    def _placed(self, job_id: JobId, row: Row, tally: Tally, slot: Slot) -> None:
        """The job runs on ``slot``, which the view has."""
        name = slot.name
        busy = self.busy
        busy[name] = busy.get(name, 0) + 1
        self.free_static.discard(name)
        start = row[4]
        if start is not None and row[7]:  # a victim candidate
            since = row[5]
            since = since if since is not None and since > start else start
            orders = tally._orders
            if orders[0] is None and orders[1] is None:  # Tally.add_victim, no order read yet
                serial = tally._serial = tally._serial + 1
                tally.candidates[job_id] = (serial, start, since)
            else:
                tally.add_victim(job_id, start, since)
            if slot.parent is not None or slot.partitionable:
                self.on_place.setdefault(slot.place, set()).add(job_id)

    def _unplaced(self, job_id: JobId, row: Row, tally: Tally, slot: Slot) -> None:
        """The job no longer runs on ``slot`` (it did, and the view has the slot)."""
        name = slot.name
        busy = self.busy
        left = busy[name] - 1
        if left:
            busy[name] = left
        else:
            busy.pop(name)
        if row[4] is not None and row[7]:
            orders = tally._orders
            if orders[0] is None and orders[1] is None:  # Tally.drop_victim, no order read yet
                del tally.candidates[job_id]
            else:
                tally.drop_victim(job_id)
            if slot.parent is not None or slot.partitionable:
                place = slot.place
                on = self.on_place[place]
                on.discard(job_id)
                if not on:
                    del self.on_place[place]

    # -- slots ------------------------------------------------------------------------------------

    def _refree(self, name: str) -> None:
        slot = self.slots.get(name)
        if slot is None or slot.partitionable or slot.parent is not None or \
                self.running_static is not None:  # (the pool keeps the free static slots)
            return
        if name in self.busy or name in self.leaving:
            self.free_static.discard(name)
        else:
            self.free_static.add(name)

    def _slot_in(self, slot: Slot) -> None:
        name = slot.name
        self._capacity += slot.slots
        for k, amount in enumerate(slot.amount):
            self._totals[k] += int(amount)
        if not slot.partitionable and slot.parent is None:
            self.static.add(name)
            if slot.cpus != 1:
                self.odd_static += 1
        # The jobs naming it are placed on it (a static slot's are no longer listed by name).
        for job_id in self.running_on.pop(name, ()) if name in self.static else \
                self.running_on.get(name, ()):
            row = self.jobs.row(job_id)
            assert row is not None
            self.unplaced -= 1
            self._placed(job_id, row, self.tallies[row[0]], slot)
        if slot.partitionable:
            self.rooms[name] = slot.room
            if any(slot.room):
                self.open_rooms.add(name)
        self._refree(name)
        if slot.parent is None:
            self._rewhole(name)
        else:
            self.children.setdefault(slot.parent, set()).add(name)
            self._rewhole(slot.parent)

    def _slot_out(self, slot: Slot) -> None:
        name = slot.name
        self._capacity -= slot.slots
        for k, amount in enumerate(slot.amount):
            self._totals[k] -= int(amount)
        if not slot.partitionable and slot.parent is None:
            self.static.discard(name)
            if slot.cpus != 1:
                self.odd_static -= 1
            # The jobs on a static slot are not listed by name (a pass over the jobs finds them):
            # they are from now on.
            on: Iterable[JobId] = self._running_on_static(name) if name in self.busy else ()
            if on:
                self.running_on[name] = set(on)
        else:
            on = self.running_on.get(name, ())
        for job_id in on:
            row = self.jobs.row(job_id)
            assert row is not None
            self._unplaced(job_id, row, self.tallies[row[0]], slot)
            self.unplaced += 1
        if slot.partitionable:
            del self.rooms[name]
            self.open_rooms.discard(name)
        self.free_static.discard(name)
        whole = self.whole.pop(name, None)
        if whole is not None:
            self._unwhole(whole)
        if slot.parent is not None:
            kids = self.children[slot.parent]
            kids.discard(name)
            if not kids:
                del self.children[slot.parent]
            self._rewhole(slot.parent, leaving=name)

    def _running_on_static(self, name: str) -> list[JobId]:
        """The running jobs on the static slot ``name`` (a pass over the view's jobs)."""
        on = []
        for job_id, entry in self._entries.items():
            if isinstance(entry, tuple):
                if entry[1] is _RUNNING and entry[3] == name:
                    on.append(job_id)
            elif entry.state is _RUNNING and entry.slot == name:
                on.append(job_id)
        return on

    def _unwhole(self, room: Room) -> None:
        self.wholes[room] -= 1
        if not self.wholes[room]:
            self.wholes.pop(room)

    def _rewhole(self, place: str, leaving: str | None = None) -> None:
        """Work out again what ``place`` has were it empty: its own room and its dynamic slots'."""
        slot = self.slots.get(place)
        old = self.whole.pop(place, None)
        if old is not None:
            self._unwhole(old)
        if slot is None or slot.parent is not None or place == leaving:
            return
        room = slot.room
        for kid in self.children.get(place, ()):
            if kid != leaving:
                room = add_room(room, self.slots[kid].room)
        self.whole[place] = room
        self.wholes[room] += 1

    # -- building and showing ---------------------------------------------------------------------

    @classmethod
    def of(cls, slots: Iterable[Slot], jobs: Iterable[Job]) -> PoolView:
        """The view of these slots and jobs, built in one pass over each (what a decision on a
        snapshot without a kept view starts with). Gives the view :meth:`put_slot` and
        :meth:`put_job` would have kept through adding them one by one."""
        view = cls()
        listed = 0
        for slot in slots:
            view.slots[slot.name] = slot
            listed += 1
        view.duplicates = listed - len(view.slots)
        listing = list(view.slots.values())
        view._capacity = sum(s.slots for s in listing)
        view._totals = [view._capacity, sum(s.cpus for s in listing),
                        sum(s.memory for s in listing if s.memory is not None),
                        sum(s.gpus for s in listing), sum(s.disk for s in listing if s.disk is not None)]
        view.static = {s.name for s in listing if not s.partitionable and s.parent is None}
        view.odd_static = sum(1 for s in listing
                              if s.cpus != 1 and not s.partitionable and s.parent is None)
        for slot in listing:
            if slot.partitionable:
                view.rooms[slot.name] = slot.room
                if any(slot.room):
                    view.open_rooms.add(slot.name)
            if slot.parent is not None:
                view.children.setdefault(slot.parent, set()).add(slot.name)
        wholes = view.wholes
        for slot in listing:
            if slot.parent is None:
                if slot.name in view.children:
                    view._rewhole(slot.name)
                else:
                    room = view.whole[slot.name] = slot.room
                    wholes[room] += 1

        listed = 0
        table: dict[JobId, Job] = {}
        for job in jobs:
            table[job.id] = job
            listed += 1
        view.duplicates += listed - len(table)
        view.jobs.entries = view._entries = cast(dict[JobId, Job | Row], table)
        running: dict[str, list[Job]] = {}
        idle: dict[str, list[Job]] = {}
        vacating: dict[str, list[Job]] = {}
        run, wait, leave = _RUNNING, _IDLE, _VACATING
        for job in table.values():
            state = job.state
            owners = idle if state is wait else running if state is run else \
                vacating if state is leave else None
            if owners is not None:
                mine = owners.get(job.owner)
                if mine is None:
                    owners[job.owner] = [job]
                else:
                    mine.append(job)
        present = view.slots
        for owner, mine in running.items():
            tally = view._tally(owner)
            tally.running = len(mine)
            tally.run_shapes = dict(Counter(map(_SHAPE, mine)))
            candidates = tally.candidates
            serial = 0
            for job in mine:
                name = job.slot
                if name is None:
                    view.unplaced += 1
                    continue
                if name not in view.static:
                    on = view.running_on.get(name)
                    if on is None:
                        view.running_on[name] = {job.id}
                    else:
                        on.add(job.id)
                if name not in present:
                    view.unplaced += 1
                    continue
                view.busy[name] += 1
                start = job.start_time
                if start is not None and job.vacatable:
                    serial += 1
                    candidates[job.id] = (serial, start, saved_since(job))
                    slot = present[name]
                    if slot.parent is not None or slot.partitionable:
                        view.on_place.setdefault(slot.place, set()).add(job.id)
            tally._serial = serial
        for owner, mine in idle.items():
            tally = view._tally(owner)
            tally.idle = len(mine)
            tally.shapes = dict(Counter(map(_SHAPE, mine)))
            tally.listed = mine  # which job has which shape: sorted out at the owner's first change
            if len(tally.shapes) > 1:
                tally._sort_out()
        for owner, mine in vacating.items():
            tally = view._tally(owner)
            tally.vacating = len(mine)
            tally.leaving = _sum4(mine)
            for job in mine:
                if job.slot is not None:
                    view.leaving[job.slot] += 1
        for slot in present.values():
            if not slot.partitionable and slot.parent is None and slot.name not in view.busy \
                    and slot.name not in view.leaving:
                view.free_static.add(slot.name)
        return view

    def snapshot(self, time: float, kept: tuple[Any, ...] = ()) -> Snapshot:
        """A snapshot of the pool as the view has it now, carrying the view. Its slots and jobs
        are copied out of the view only if they are read, or before the view next changes."""
        self._settle()
        free = len(self.free_static)
        if free > self._free_peak:
            self._free_peak = free
        elif free * 4 < self._free_peak:  # far fewer than it had: listed faster made afresh
            self.free_static = set(self.free_static)
            self._free_peak = free
        taken = Snapshot.of_view(self, time, kept)
        self._taken = weakref.ref(taken)
        return taken

    def _settle(self) -> None:
        """The view is about to change: the last snapshot taken from it, if it is still about,
        copies what it shows."""
        ref = self._taken
        if ref is not None:
            self._taken = None
            taken = ref()
            if taken is not None:
                taken.settle()


def view_of(snapshot: Snapshot) -> PoolView:
    """The view a decision on ``snapshot`` reads: the one it carries, if that has not changed since
    the snapshot was taken; else one built from its slots and jobs. A view whose pool counts jobs
    for it (:meth:`PoolView.counted_by`) is read only while the pool is as it was: its snapshot's
    jobs are not all the view counts, so no view can be built from them (PoolError)."""
    view = snapshot.view
    if isinstance(view, PoolView):
        check = view.pool_check
        if check is not None:
            if view.stamp != snapshot.stamp:
                raise PoolError("the pool changed since this snapshot was taken: decide on a new one")
            check()
            return view
        if view.stamp == snapshot.stamp:
            return view
    return PoolView.of(snapshot.slots, snapshot.jobs)

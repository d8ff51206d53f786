"""A pool view kept, not rebuilt: what a decision reads of a pool, updated job by job.

A decision needs per owner what its jobs add up to, its idle jobs by shape (in queue order) and its
running jobs in the order they would be vacated; and per place what is busy, leaving or free. Counting
these from a snapshot's jobs costs a pass over every job; a pool adapter that sees jobs change
(the simulator, or a live adapter following its schedds) keeps a :class:`PoolView` instead and tells
it each change: :meth:`PoolView.put_job` (a job added or changed), :meth:`PoolView.drop_job` (gone),
:meth:`PoolView.put_slot` and :meth:`PoolView.drop_slot`. Each costs O(log jobs). A snapshot
carries the view it was taken from (:attr:`osep.core.model.Snapshot.view`); a snapshot without one
gets one built from its jobs and slots in one pass (:func:`view_of`), which is what a live cycle does
after its queries.

What the view keeps is exactly what :mod:`osep.core.counting` would count from the snapshot's jobs
and slots, and the orders are the ones the decision uses:

- per owner (:class:`Tally`): running, idle and vacating jobs and what each adds up to per requested
  resource (integers, so sums do not depend on the order jobs came in);
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
- per slot name, the running and vacating jobs naming it; the static slots that are free; every
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
from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import Any

from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.core.resources import Room, Shape, Vec, add_room


def saved_since(job: Job) -> float:
    """Where the work a vacate would lose begins: the last checkpoint of this run, or its start."""
    since = job.start_time if job.start_time is not None else 0.0
    if job.checkpoint_time is not None and job.checkpoint_time > since:
        since = job.checkpoint_time
    return since


def _add4(total: list[int], job: Job, sign: int) -> None:
    total[0] += sign * job.cpus
    total[1] += sign * job.memory
    total[2] += sign * job.gpus
    total[3] += sign * job.disk


_SHAPE = attrgetter("cpus", "memory", "gpus", "disk")  # Job.shape, at C speed
_ASKS = (attrgetter("cpus"), attrgetter("memory"), attrgetter("gpus"), attrgetter("disk"))


def _sum4(jobs: list[Job]) -> list[int]:
    """What ``jobs`` ask for, added up: cpus, memory, gpus, disk (at C speed)."""
    return [sum(map(ask, jobs)) for ask in _ASKS]


class Tally:
    """One owner's jobs as the decision counts them (see the module's description)."""

    __slots__ = ("_dead", "_new", "_orders", "_serial", "candidates", "firsts", "idle", "ids",
                 "leaving", "listed", "ran", "running", "shapes", "vacating", "victim_shapes",
                 "waiting")

    def __init__(self) -> None:
        self.running = 0
        self.idle = 0
        self.vacating = 0
        # What the owner's running, idle and vacating jobs ask for: cpus, memory, gpus, disk.
        self.ran = [0, 0, 0, 0]
        self.waiting = [0, 0, 0, 0]
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
        # Victim candidates: id -> (serial, start, since), the serial telling this entry from an
        # earlier one of the same job; and how many there are of each shape.
        self.candidates: dict[JobId, tuple[int, float, float]] = {}
        self.victim_shapes: Counter[Shape] = Counter()
        self._serial = 0
        # The two orders once read ([0]: wall clock, keys (-start, id, serial); [1]: lost work,
        # keys (-since, -start, id, serial)), each a list of keys sorted from last to first (read
        # backwards), None until read; the keys of candidates added since it was last read; and
        # how many of its keys (and new ones) are of candidates no longer there.
        self._orders: list[list[tuple[Any, ...]] | None] = [None, None]
        self._new: list[list[tuple[Any, ...]]] = [[], []]
        self._dead = [0, 0]

    def __bool__(self) -> bool:
        return bool(self.running or self.idle or self.vacating)

    def first(self, shape: Shape) -> JobId:
        """The first idle job of ``shape`` in queue order (the smallest id)."""
        heap = self.firsts.get(shape)
        if heap is not None:
            return heap[0]
        # The owner's only shape: its queue order is not kept.
        if self.listed is not None:
            return min(job.id for job in self.listed if job.shape == shape)
        return min(self.ids[shape])

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

    def _add_idle(self, job: Job) -> None:
        if self.listed is not None:
            self._sort_out()
        shape = _SHAPE(job)
        count = self.shapes.get(shape, 0)
        self.shapes[shape] = count + 1
        if count:
            self.ids[shape].add(job.id)
        else:
            self.ids[shape] = {job.id}
        if len(self.shapes) > 1:
            if not self.firsts:
                self._heaps()
            else:
                heap = self.firsts.setdefault(shape, [])
                heapq.heappush(heap, job.id)

    def _drop_idle(self, job: Job) -> None:
        if self.listed is not None:
            self._sort_out()
        shape = _SHAPE(job)
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
        ids.discard(job.id)
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
        """Victim candidates in the kept order (see the module's description)."""
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
        self.jobs: dict[JobId, Job] = {}
        self.slots: dict[str, Slot] = {}
        self.tallies: dict[str, Tally] = {}  # owners with a running, idle or vacating job
        self.busy: Counter[str] = Counter()  # slot present -> running jobs on it
        self.leaving: Counter[str] = Counter()  # slot name -> vacating jobs naming it
        self.running_on: dict[str, set[JobId]] = {}  # slot name -> running jobs naming it
        self.unplaced = 0  # running jobs on no slot the view has
        self.free_static: set[str] = set()  # static slots with no running or vacating job
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
        old = self.jobs.get(job.id)
        self.jobs[job.id] = job  # first: the old one's idle entries are stale from here
        if old is not None:
            self._job_out(old)
        self._job_in(job)
        self.stamp += 1

    def drop_job(self, job_id: JobId) -> None:
        """A job left the pool (completed, removed, or no longer shown)."""
        if self._taken is not None:
            self._settle()
        old = self.jobs.pop(job_id, None)
        if old is not None:
            self._job_out(old)
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
        for k in range(4):
            tally.waiting[k] += count * shape[k]
        cpus, memory, gpus, disk = shape
        tally._add_idle(Job(first, owner, JobState.IDLE, cpus=cpus, memory=memory, gpus=gpus, disk=disk))
        tally.shapes[shape] += count - 1
        self.stamp += 1

    # -- jobs -------------------------------------------------------------------------------------

    def _tally(self, owner: str) -> Tally:
        tally = self.tallies.get(owner)
        if tally is None:
            tally = self.tallies[owner] = Tally()
        return tally

    def _job_in(self, job: Job) -> None:
        state = job.state
        if state is JobState.RUNNING:
            tally = self.tallies.get(job.owner)
            if tally is None:
                tally = self.tallies[job.owner] = Tally()
            tally.running += 1
            ran = tally.ran
            ran[0] += job.cpus
            ran[1] += job.memory
            ran[2] += job.gpus
            ran[3] += job.disk
            name = job.slot
            if name is None:
                self.unplaced += 1
                return
            on = self.running_on.get(name)
            if on is None:
                self.running_on[name] = {job.id}
            else:
                on.add(job.id)
            slot = self.slots.get(name)
            if slot is not None:
                self._placed(job, tally, slot)
            else:
                self.unplaced += 1
        elif state is JobState.IDLE:
            tally = self.tallies.get(job.owner)
            if tally is None:
                tally = self.tallies[job.owner] = Tally()
            tally.idle += 1
            waiting = tally.waiting
            waiting[0] += job.cpus
            waiting[1] += job.memory
            waiting[2] += job.gpus
            waiting[3] += job.disk
            tally._add_idle(job)
        elif state is JobState.VACATING:
            tally = self.tallies.get(job.owner)
            if tally is None:
                tally = self.tallies[job.owner] = Tally()
            tally.vacating += 1
            _add4(tally.leaving, job, 1)
            if job.slot is not None:
                self.leaving[job.slot] = self.leaving.get(job.slot, 0) + 1
                self.free_static.discard(job.slot)

    def _job_out(self, job: Job) -> None:
        state = job.state
        if state is JobState.RUNNING:
            tally = self.tallies[job.owner]
            tally.running -= 1
            ran = tally.ran
            ran[0] -= job.cpus
            ran[1] -= job.memory
            ran[2] -= job.gpus
            ran[3] -= job.disk
            name = job.slot
            if name is None:
                self.unplaced -= 1
            else:
                on = self.running_on[name]
                if len(on) > 1:
                    on.discard(job.id)
                else:
                    del self.running_on[name]
                slot = self.slots.get(name)
                if slot is not None:
                    self._unplaced(job, tally, slot)
                    if not slot.partitionable and slot.parent is None:  # _refree, written out
                        if name in self.busy or name in self.leaving:
                            self.free_static.discard(name)
                        else:
                            self.free_static.add(name)
                else:
                    self.unplaced -= 1
        elif state is JobState.IDLE:
            tally = self.tallies[job.owner]
            tally.idle -= 1
            waiting = tally.waiting
            waiting[0] -= job.cpus
            waiting[1] -= job.memory
            waiting[2] -= job.gpus
            waiting[3] -= job.disk
            tally._drop_idle(job)
        elif state is JobState.VACATING:
            tally = self.tallies[job.owner]
            tally.vacating -= 1
            _add4(tally.leaving, job, -1)
            if job.slot is not None:
                self.leaving[job.slot] -= 1
                if not self.leaving[job.slot]:
                    del self.leaving[job.slot]
                self._refree(job.slot)
        else:
            return
        if not (tally.running or tally.idle or tally.vacating):
            del self.tallies[job.owner]

    def _placed(self, job: Job, tally: Tally, slot: Slot) -> None:
        """``job`` runs on ``slot``, which the view has."""
        name = slot.name
        busy = self.busy
        busy[name] = busy.get(name, 0) + 1
        self.free_static.discard(name)
        start = job.start_time
        if start is not None and job.vacatable:  # a victim candidate
            since = job.checkpoint_time
            tally.add_victim(job.id, start, since if since is not None and since > start else start)
            shapes = tally.victim_shapes
            shape = _SHAPE(job)
            shapes[shape] = shapes.get(shape, 0) + 1
            if slot.parent is not None or slot.partitionable:
                self.on_place.setdefault(slot.place, set()).add(job.id)

    def _unplaced(self, job: Job, tally: Tally, slot: Slot) -> None:
        """``job`` no longer runs on ``slot`` (it did, and the view has the slot)."""
        name = slot.name
        busy = self.busy
        left = busy[name] - 1
        if left:
            busy[name] = left
        else:
            del busy[name]
        if job.start_time is not None and job.vacatable:
            tally.drop_victim(job.id)
            shapes = tally.victim_shapes
            shape = _SHAPE(job)
            left = shapes[shape] - 1
            if left:
                shapes[shape] = left
            else:
                del shapes[shape]
            if slot.parent is not None or slot.partitionable:
                place = slot.place
                on = self.on_place[place]
                on.discard(job.id)
                if not on:
                    del self.on_place[place]

    # -- slots ------------------------------------------------------------------------------------

    def _refree(self, name: str) -> None:
        slot = self.slots.get(name)
        if slot is None or slot.partitionable or slot.parent is not None:
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
        for job_id in self.running_on.get(name, ()):
            job = self.jobs[job_id]
            self.unplaced -= 1
            self._placed(job, self.tallies[job.owner], slot)
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
        for job_id in self.running_on.get(name, ()):
            job = self.jobs[job_id]
            self._unplaced(job, self.tallies[job.owner], slot)
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

    def _unwhole(self, room: Room) -> None:
        self.wholes[room] -= 1
        if not self.wholes[room]:
            del self.wholes[room]

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
        for job in jobs:
            view.jobs[job.id] = job
            listed += 1
        view.duplicates += listed - len(view.jobs)
        running: dict[str, list[Job]] = {}
        idle: dict[str, list[Job]] = {}
        vacating: dict[str, list[Job]] = {}
        run, wait, leave = JobState.RUNNING, JobState.IDLE, JobState.VACATING
        for job in view.jobs.values():
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
            tally.ran = _sum4(mine)
            candidates = tally.candidates
            serial = 0
            for job in mine:
                name = job.slot
                if name is None:
                    view.unplaced += 1
                    continue
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
                    tally.victim_shapes[job.shape] += 1
                    slot = present[name]
                    if slot.parent is not None or slot.partitionable:
                        view.on_place.setdefault(slot.place, set()).add(job.id)
            tally._serial = serial
        for owner, mine in idle.items():
            tally = view._tally(owner)
            tally.idle = len(mine)
            tally.waiting = _sum4(mine)
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
    the snapshot was taken; else one built from its slots and jobs."""
    view = snapshot.view
    if isinstance(view, PoolView) and view.stamp == snapshot.stamp:
        return view
    return PoolView.of(snapshot.slots, snapshot.jobs)

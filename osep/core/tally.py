"""One owner's jobs as a pool view keeps them (:class:`Tally`), for a decision to read:

- running, idle and vacating jobs and what each adds up to per requested resource (integers, so sums
  do not depend on the order jobs came in); running and idle jobs are counted per shape as they
  change, and added up when the sums are read;
- per shape, its idle jobs' ids in a heap: the first in queue order (the smallest id) is what
  :class:`osep.core.wants.Wants` orders shapes by;
- its victim candidates (running on a slot the view has, start known, vacatable) in two orders:
  latest start first (the lowest wall clock), and latest start-or-checkpoint first (the least lost
  work), ties by job id. Both are independent of the time; the decision reads them at the
  snapshot's time and puts back in exact order any neighbours whose wall clock or lost work are
  equal then. An order is sorted when first read, and from then on brought up to date when read
  again: the candidates added since are sorted and joined to it (at its end, without a merge, when
  they all come after it, as the jobs a pool starts do in the wall-clock order), and the entries of
  candidates that left are passed over (and dropped once they outnumber the rest). A job's start
  and finish cost O(1) here.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from osep.core.model import Job, JobId
from osep.core.resources import Shape


def _sums(counts: Mapping[Shape, int]) -> list[int]:
    """What jobs of these shapes, so many of each, ask for: cpus, memory, gpus, disk."""
    c = m = g = d = 0
    for (cpus, memory, gpus, disk), n in counts.items():
        c += n * cpus
        m += n * memory
        g += n * gpus
        d += n * disk
    return [c, m, g, d]



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

"""What a simulated pool tells the pool view it keeps (:class:`osep.core.view.PoolView`) as counts
rather than job by job: each owner's idle jobs per shape and, in a pool of static slots only without
periodic checkpoints, its running jobs (their record in start order, and which static slots run a
job). The pool (:mod:`osep.sim.pool`) keeps these up to date as its jobs change, and tells the view
at each snapshot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from functools import partial
from itertools import chain

from osep.core.jobtable import Row
from osep.core.model import JobId, JobState
from osep.core.resources import Shape
from osep.core.view import PoolView
from osep.errors import PoolError
from osep.sim.parts import IdleQueue, SimJob, SimSlot

_RUNNING = JobState.RUNNING  # (a module's name is read several times faster than an enum's member)


class JobCounts:
    """A pool's jobs counted per owner and shape for its view: the view is told the counts of the
    owners whose jobs changed since it was last told (:meth:`tell`), not each job.

    Idle jobs (:meth:`osep.core.view.PoolView.count_idle`): the view asks :meth:`first` for the
    first idle job of a shape when a decision needs it. An owner's idle jobs are its queue's (a
    heap per shape: their counts are the heaps' lengths) and its jobs not queued yet (``held``,
    counted per shape as they come and go).

    Running jobs on static slots, in a pool of static slots only without periodic checkpoints
    (``runs`` not None; :meth:`osep.core.view.PoolView.count_running`): per owner, its record of
    them in the order they started (id -> start, slot, shape), kept by the pool as jobs start and
    stop running; the view reads the record for the victim orders (latest start first), and is
    told their counts per shape. While every job the pool has met has one shape (``met``), an
    owner's count is its record's length; from the second shape on (:meth:`mix`), the counts per
    shape are kept as well (``shapes``).

    An event only notes its owner in ``recount``, and the counts are read at the next :meth:`tell`.
    The view is read only while the pool is as it was when it told the view (no owner noted since,
    and no job's change waiting in the pool's ``changed``: :meth:`check`). This reads the pool's
    queues, its idle jobs not queued yet and its changes for the view, and keeps no reference to
    the pool (the view keeps one to it)."""

    __slots__ = ("changed", "held", "met", "mixed", "queues", "recount", "runs", "shapes",
                 "unqueued")

    def __init__(self, queues: Mapping[str, IdleQueue],
                 unqueued: Mapping[str, Mapping[JobId, SimJob]], running: bool,
                 met: Mapping[Shape, Shape], changed: Mapping[JobId, Row | None]) -> None:
        self.queues = queues
        self.unqueued = unqueued
        self.changed = changed
        self.held: dict[str, dict[Shape, int]] = {}
        self.recount: set[str] = set()
        self.runs: dict[str, dict[JobId, tuple[float, str, Shape]]] | None = {} if running else None
        self.met = met
        self.mixed = False
        self.shapes: dict[str, dict[Shape, int]] = {}

    def hold(self, owner: str, shape: Shape) -> None:
        """An idle job of ``owner``'s asking for ``shape`` is not queued yet."""
        counts = self.held.get(owner)
        if counts is None:
            self.held[owner] = {shape: 1}
        else:
            counts[shape] = counts.get(shape, 0) + 1

    def unhold(self, owner: str, shape: Shape) -> None:
        """One of ``owner``'s idle jobs not queued yet, asking for ``shape``, joined its queue."""
        counts = self.held[owner]
        left = counts[shape] - 1
        if left:
            counts[shape] = left
        elif len(counts) > 1:
            del counts[shape]
        else:
            del self.held[owner]

    def tell(self, view: PoolView) -> None:
        """Tell ``view`` the counts of the owners whose jobs changed since it was last told."""
        recount = self.recount
        if not recount:
            return
        queues, held, first, runs = self.queues, self.held, self.first, self.runs
        for owner in recount:
            queue = queues.get(owner)
            counts = {shape: len(heap) for shape, heap in queue.shapes().items()} \
                if queue is not None else {}
            waiting = held.get(owner)
            if waiting is not None:
                for shape, n in waiting.items():
                    counts[shape] = counts.get(shape, 0) + n
            view.count_idle(owner, counts, partial(first, owner))
            if runs is not None:
                mine = runs.get(owner)
                if mine is not None:
                    if self.mixed:
                        counts = dict(self.shapes[owner])
                    else:
                        counts = {next(iter(self.met)): len(mine)} if mine else {}
                    view.count_running(owner, counts, mine)
        recount.clear()

    def check(self) -> None:
        """Raise unless the pool is as it was when it last told its view."""
        if self.recount or self.changed:
            raise PoolError("the simulated pool's jobs changed since its view was told them")

    def run(self, job: SimJob, name: str) -> None:
        """``job`` runs on the static slot ``name`` from now on (``runs`` kept)."""
        runs = self.runs
        assert runs is not None
        owner = job.spec.owner
        mine = runs.get(owner)
        if mine is None:
            mine = runs[owner] = {}
        mine[job.spec.id] = (job.start, name, job.shape)
        if self.mixed:
            self.count(owner, job.shape, 1)
        self.recount.add(owner)

    def stop(self, job: SimJob) -> None:
        """``job`` stops running on its static slot (it leaves it, or is vacating there)."""
        runs = self.runs
        assert runs is not None
        owner = job.spec.owner
        del runs[owner][job.spec.id]
        if self.mixed:
            self.count(owner, job.shape, -1)
        self.recount.add(owner)

    def count(self, owner: str, shape: Shape, more: int) -> None:
        """``owner`` runs ``more`` jobs of ``shape`` (fewer if negative), once counts are kept."""
        shapes = self.shapes.get(owner)
        if shapes is None:
            shapes = self.shapes[owner] = {}
        left = shapes.get(shape, 0) + more
        if left:
            shapes[shape] = left
        else:
            del shapes[shape]

    def mix(self) -> None:
        """The pool met a second shape of job: each owner's running jobs are counted per shape
        from now on."""
        if self.mixed or self.runs is None:
            return
        self.mixed = True
        for owner, mine in self.runs.items():
            self.shapes[owner] = dict(Counter(shape for _, _, shape in mine.values()))

    def first(self, owner: str, shape: Shape) -> JobId:
        """The first in queue order (the smallest id) of ``owner``'s idle jobs asking for
        ``shape``: from its queue of that shape and its jobs not queued yet."""
        self.check()
        queue = self.queues.get(owner)
        heap = queue.shapes().get(shape, ()) if queue is not None else ()
        held = (i for i, j in self.unqueued.get(owner, {}).items() if j.shape == shape)
        return min(chain((entry[2] for entry in heap), held))


class RunningSlots(Mapping[str, int]):
    """The static slots with a running job (one each), read from a pool's slots as they are: for
    a view whose pool counts its running jobs (:meth:`osep.core.view.PoolView.count_static`)."""

    __slots__ = ("_slots",)

    def __init__(self, slots: Mapping[str, SimSlot]) -> None:
        self._slots = slots

    def __contains__(self, name: object) -> bool:
        slot = self._slots.get(name) if isinstance(name, str) else None
        return slot is not None and slot.job is not None and slot.job.state is _RUNNING

    def __getitem__(self, name: str) -> int:
        if name not in self:
            raise KeyError(name)
        return 1

    def __iter__(self) -> Iterator[str]:
        return (n for n, s in self._slots.items() if s.job is not None and s.job.state is _RUNNING)

    def __len__(self) -> int:
        return sum(1 for _ in self)

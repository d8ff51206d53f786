"""How a pool tells its view jobs as counts, with no entry per job (:class:`ViewCounted`, a base of
:class:`osep.core.view.PoolView`): an owner's idle jobs per shape (the live pool's idle groups, the
simulated pool's queues), and a simulated pool's running jobs on static slots.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from osep.core.model import JobId
from osep.core.resources import Shape
from osep.core.tally import Tally
from osep.core.telling import ViewTold


class ViewCounted(ViewTold):
    """A pool view told some of its jobs as counts."""

    def put_idle(self, owner: str, shape: Shape, count: int, first: JobId) -> None:
        """``count`` more idle jobs of ``owner`` asking for ``shape``, ``first`` the first of them in
        queue order (the live pool's idle groups). They are not in :attr:`jobs` and cannot be
        changed or dropped one by one: a view made so is for the decisions on one snapshot."""
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
        """``owner``'s idle jobs are now ``counts`` of each shape (empty: none), ``first(shape)`` the
        first of a shape in queue order (the simulated pool's queues). The view keeps ``counts``
        (handed over) and asks ``first`` only while the pool is as it was when it told the view.
        Idle jobs so counted are in neither :attr:`jobs` nor a snapshot's jobs, and an owner's idle
        jobs are either all counted or all told."""
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
        slot of the view's and a victim candidate, listed in ``runs`` (id -> start, slot, shape) in
        the order they started (the simulated pool on static slots only, without periodic
        checkpoints). The view keeps ``counts`` (handed over) and reads ``runs``, which the pool
        keeps up to date, only while the pool is as it was when it told the view (the check given
        to :meth:`counted_by`). Running jobs so counted are in neither :attr:`jobs` nor a
        snapshot's jobs, and an owner's running jobs are either all counted or all told (a vacating
        job is told as a row)."""
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
        """The pool counts its running jobs (:meth:`count_running`) and has static slots only: it
        keeps which are free (``free``: no job running or vacating, the view's
        :attr:`free_static`) and which run a job (``running``, the view's :attr:`running_static`),
        both agreeing with the view's jobs at each snapshot. Told before the slots. The view changes
        neither but to make :attr:`free_static` afresh with the same names, as long as the pool
        never tells a running job (asserted) and neither puts again nor drops a static slot."""
        if self._taken is not None:
            self._settle()
        self.free_static = free
        self.running_static = running
        self.stamp += 1

"""The paper's metrics, integrated as events arrive in time order: the one implementation of them.

It keeps only the jobs in flight, one number per slot for the capacity loss, and a bounded,
self-coarsening series of the curves (:mod:`osep.measure.series`; or, for small runs, the exact step
curves: ``steps``), so that a million-job event log can be replayed. Simulated runs
(:func:`osep.measure.records.compute`) and replayed ones are measured by this one piece of code.

Definitions (all areas in slot-seconds, or in the unit's seconds: each job weighs what it holds of
the policy's resource, its cores for ``cpus``; 1 for ``slots``), per owner i:

- SuR_i(t): what owner i's jobs occupy at t (a job being vacated counts until it releases its slot);
- SuI_i(t): the ideal: fes_i(t), the feasible share (:func:`osep.core.shares.feasible_shares`) for owner i's
  demand at t, the jobs submitted and not yet finished, removed or held;
- PV = sum_i integral of max(0, SuI_i - SuR_i) dt: time an owner had less than it should have had,
  whatever the cause (enforcement latency, negotiation latency, or no enforcement at all);
- LC = for every run that ended in an eviction, the time its slot then stood idle until the next job
  started on it, times the evicted job's weight (a slot never used again adds nothing: no demand was
  waiting for it; a dynamic slot is never used again, so on partitionable machines LC is 0);
- PC = sum over evicted runs of (work redone + vacate time): the work executed but not saved by a
  checkpoint before the vacate signal, plus the time from the signal to the slot's release. Work a
  checkpoint saved is reported beside it (``saved_work``) and is not a cost;
- US_j = 100 * runtime_j / (finish_j - submit_j) and A_US_i = the mean of US_j over owner i's
  finished jobs.

With dominant shares (a meter given ``dominant`` measures), SuR_i is owner i's position: the largest of
its holding/share ratios over the resources its share names (1.0: exactly its share), SuI_i is
min(1, the position its demand would give it) for an owner and 0 for a non-owner (owner targets: the
excess is not shared out), and PV is in share-seconds (an owner that held nothing of its whole share
for one second adds 1). LC and PC stay in the jobs' weights (cores).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping

from osep.core.resources import ZERO, Measure, Vec, minus, plus
from osep.measure.books import JobBooks, OwnerBooks
from osep.measure.metrics import MeterError, Metrics, OwnerMetrics, totals
from osep.measure.pieces import Ideal
from osep.measure.series import Bins, Curves, Series
from osep.measure.waterfill import WaterFilling


class Meter(WaterFilling):
    """Accrues PV, LC, PC and satisfaction from job events given in time order.

    ``shares`` are resolved owner shares, and ``capacity`` the pool's, in the unit the job weights
    are in (slots by default; :meth:`osep.core.shares.ShareTable.resolve`). Events with the same
    time may come in any order; an event earlier than the last one is an error, since the areas
    already integrated cannot be taken back. The work per event does not grow with the owners
    (:mod:`osep.measure.pieces`, :mod:`osep.measure.waterfill`).
    """

    def __init__(self, shares: Mapping[str, float], capacity: float, *, curves: bool = False,
                 steps: bool = False, origin: float | None = None,
                 dominant: tuple[Mapping[str, Measure], Measure] | None = None,
                 ideal: Ideal | None = None) -> None:
        """``origin``: makespan is measured from here (default: the first event). ``dominant``:
        each owner's measure (:func:`osep.core.resources.measure`) and the one for owners without a
        share; PV is then in share-seconds. ``ideal``: the feasible shares for a demand and a
        capacity, where they are not the flat water-filling of ``shares`` (an owner tree's). An
        ideal with an ``update`` method (:func:`osep.measure.trees.tree_ideal`'s) is told only the
        owners whose demand moved and answers with the shares that changed since it last answered
        this meter: it is this meter's alone."""
        super().__init__(shares, capacity, curves=curves, steps=steps, dominant=dominant,
                         ideal=ideal)
        self.origin = origin
        # Settles what the events at ``now`` changed, once for the instant however many it had.
        self._commit = self._commit_flat if self._flat else self._commit_ideal
        self._jobs: dict[Hashable, JobBooks] = {}
        # slot -> end of the evicted run that freed it, that run's weight, and whose it was
        self._vacated_at: dict[str, tuple[float, float, OwnerBooks]] = {}
        self._occupant: dict[str, Hashable] = {}  # slot -> the job running there
        self.capacity_loss = 0.0
        self.vacate_time = 0.0
        self.vacates = 0
        self.makespan = 0.0

    # -- time ------------------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Integrate the current state up to ``t``."""
        now = self.now
        if t == now:
            return
        if now is None:
            self.now = t
            if self.origin is None:
                self.origin = t
            if self._curves:
                self._bins = Bins(start=t)
            for stats in self._owners.values():
                stats.since = t
            return
        if t < now:
            raise MeterError(f"event at {t} comes after one at {now}: time ran backwards")
        if self._dirty:
            self._commit()
        if self._steps is not None:
            self._steps.append(self._point())
        if self._level != math.inf:
            self._area += self._level * (t - now)
        self.now = t

    def _settled(self) -> None:
        """Every owner's areas up to now."""
        if self.now is None:
            return
        if self._dirty:
            self._commit()
        for stats in self._owners.values():
            self._flush(stats)

    def _job(self, job: Hashable) -> JobBooks:
        state = self._jobs.get(job)
        if state is None:
            raise MeterError(f"job {job} was never submitted")
        return state

    # -- events ----------------------------------------------------------------------------------

    def submit(self, t: float, job: Hashable, owner: str, weight: float = 1.0,
               amount: Vec = ZERO) -> None:
        """``amount``: what the job holds per resource while it runs (for dominant measures)."""
        jobs = self._jobs
        if job in jobs:
            raise MeterError(f"job {job} submitted twice")
        if t != self.now:
            self.advance(t)
        stats = self._owners.get(owner) or self._owner(owner)
        jobs[job] = JobBooks(owner, stats, t, True, None, None, None, 0.0, weight, amount)
        stats.jobs += 1
        stats.demand += weight
        if self.dominant is not None:
            stats.wanting = plus(stats.wanting, amount)
        self._dirty[owner] = self._wanting[owner] = stats

    def start(self, t: float, job: Hashable, slot: str) -> None:
        state = self._jobs.get(job) or self._job(job)
        if state.start is not None:
            raise MeterError(f"job {job} started on {slot} while running on {state.slot}")
        if t != self.now:
            self.advance(t)
        state.slot, state.start, state.signal = slot, t, None
        stats = state.stats
        stats.running += state.weight
        if self.dominant is not None:
            stats.holding = plus(stats.holding, state.amount)
        self._dirty[state.owner] = stats
        self._occupant[slot] = job
        freed = self._vacated_at.pop(slot, None)
        if freed is not None:
            lost = max(0.0, t - freed[0]) * freed[1]
            self.capacity_loss += lost
            freed[2].capacity_loss += lost

    def signal(self, t: float, job: Hashable) -> None:
        """The vacate signal was sent for the job's current run (it still holds its slot)."""
        state = self._jobs.get(job)
        if state is not None and state.start is not None and state.signal is None:
            state.signal = max(t, state.start)

    def end(self, t: float, job: Hashable, *, evicted: bool, saved: float = 0.0) -> None:
        """The current run ended and the slot is free. ``saved``: the run's work a checkpoint kept,
        which counts only for an eviction (a run that completes kept all of it)."""
        state = self._jobs.get(job) or self._job(job)
        if state.start is None:
            return
        if t != self.now:
            self.advance(t)
        stats = state.stats
        weight = state.weight
        stats.running -= weight
        if self.dominant is not None:
            stats.holding = minus(stats.holding, state.amount)
        self._dirty[state.owner] = stats
        if evicted:
            signal = state.signal if state.signal is not None else t
            worked = max(0.0, signal - state.start)
            kept = min(max(0.0, saved), worked)
            stats.vacated += 1
            stats.lost_work += (worked - kept) * weight
            stats.saved_work += kept * weight
            state.saved += kept
            self.vacate_time += (t - signal) * weight
            stats.vacate_time += (t - signal) * weight
            self.vacates += 1
            # The slot is idle from here, unless logs merged from several files already put the
            # next job there (events of one second in another order).
            if state.slot is not None and self._occupant.get(state.slot) == job:
                self._vacated_at[state.slot] = (t, weight, stats)
            if self._bins is not None:
                self._bins.evicted(t)
        if state.slot is not None and self._occupant.get(state.slot) == job:
            del self._occupant[state.slot]
        state.slot = state.start = state.signal = None

    def finish(self, t: float, job: Hashable, runtime: float | None = None) -> float:
        """The job completed. ``runtime`` is its ideal run time; by default the work of its last run
        plus whatever checkpoints saved before it. Returns the run time used."""
        state = self._jobs.get(job) or self._job(job)
        last_start = state.start
        if last_start is not None:
            if runtime is None:
                runtime = state.saved + (t - last_start)
            self.end(t, job, evicted=False)
        else:
            if runtime is None:
                runtime = state.saved
            if t != self.now:
                self.advance(t)
        stats = state.stats
        stats.finished += 1
        elapsed = t - state.submit
        ratio = 100.0 * runtime / elapsed if elapsed > 0 else 100.0
        stats.us_sum += ratio if ratio < 100.0 else 100.0
        span, longest = t - (self.origin or 0.0), self.makespan
        self.makespan = span if span > longest else longest
        self._leave(job, state)
        return runtime

    def withdraw(self, t: float, job: Hashable) -> None:
        """The job left the queue without finishing (removed)."""
        state = self._job(job)
        if state.start is not None:
            self.end(t, job, evicted=False)
        else:
            self.advance(t)
        self._leave(job, state)

    def hold(self, t: float, job: Hashable, held: bool) -> None:
        """A held job is not demand until it is released."""
        state = self._job(job)
        if state.counted == (not held):
            return
        self.advance(t)
        state.counted = not held
        stats = state.stats
        stats.demand += -state.weight if held else state.weight
        if self.dominant is not None:
            stats.wanting = (minus if held else plus)(stats.wanting, state.amount)
        self._dirty[state.owner] = self._wanting[state.owner] = stats

    def _leave(self, job: Hashable, state: JobBooks) -> None:
        if state.counted:
            stats = state.stats
            stats.demand -= state.weight
            if self.dominant is not None:
                stats.wanting = minus(stats.wanting, state.amount)
            self._dirty[state.owner] = self._wanting[state.owner] = stats
        del self._jobs[job]

    # -- results ---------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._jobs)

    @property
    def jobs(self) -> Mapping[Hashable, JobBooks]:
        """The jobs in flight (read only: replay asks about each event's job with one look-up)."""
        return self._jobs

    def owner_of(self, job: Hashable) -> str | None:
        state = self._jobs.get(job)
        return state.owner if state is not None else None

    def submitted(self, job: Hashable) -> float:
        return self._job(job).submit

    def started(self, job: Hashable) -> float | None:
        """When the job's current run began (None when it is not running)."""
        state = self._jobs.get(job)
        return None if state is None else state.start

    def running(self, job: Hashable) -> bool:
        state = self._jobs.get(job)
        return state is not None and state.start is not None

    def result(self) -> Metrics:
        self._settled()
        owners = tuple(
            OwnerMetrics(
                owner=o,
                share=self.shares.get(o, 0.0),
                jobs=s.jobs,
                finished=s.finished,
                satisfaction=(s.us_sum / s.finished) if s.finished else None,
                violation=s.violation,
                vacated=s.vacated,
                lost_work=s.lost_work,
                saved_work=s.saved_work,
                capacity_loss=s.capacity_loss,
                vacate_time=s.vacate_time,
            )
            for o, s in sorted(self._owners.items())
        )
        return totals(owners, capacity_loss=self.capacity_loss, vacate_time=self.vacate_time,
                      vacates=self.vacates, makespan=self.makespan)

    def steps(self) -> Curves:
        """The exact curves up to the last event (a meter made with ``steps=True``)."""
        if self._steps is None:
            raise ValueError("this meter keeps no step curves")
        points = list(self._steps)
        if self.now is not None:  # the state after the last event holds from then on
            self._settled()
            points.append(self._point())
        names = sorted(self._owners)
        return Curves(
            times=tuple(t for t, _, _ in points),
            real={o: tuple(real.get(o, 0) for _, real, _ in points) for o in names},
            ideal={o: tuple(ideal.get(o, 0.0) for _, _, ideal in points) for o in names},
        )

    def series(self) -> Series | None:
        if self._bins is None:
            return None
        self._settled()
        return self._bins.series(sorted(self._owners))

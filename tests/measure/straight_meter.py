"""The meter as it was before it integrated in pieces: at every event time the feasible shares
recomputed from scratch (:func:`osep.core.shares.feasible_shares`) and every owner integrated. Kept
here as the oracle the incremental meter (:mod:`osep.measure.meter`) is checked against; it is
slow on purpose and not part of osep."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from osep.core.resources import ZERO, Measure, Vec, minus, plus
from osep.core.shares import feasible_shares
from osep.measure.metrics import MeterError, Metrics, OwnerMetrics
from osep.measure.pieces import Ideal
from osep.measure.series import Bins, Curves, Series


@dataclass(slots=True)
class _Job:
    owner: str
    submit: float
    counted: bool = True  # part of demand (not held)
    slot: str | None = None
    start: float | None = None
    signal: float | None = None  # vacate signal for the current run
    saved: float = 0.0  # work checkpoints kept from earlier runs
    weight: float = 1.0  # what it holds while running, in the unit measured
    amount: Vec = ZERO  # what it holds per resource (dominant measures only)


@dataclass(slots=True)
class _Owner:
    running: float = 0.0
    demand: float = 0.0
    jobs: int = 0
    finished: int = 0
    us_sum: float = 0.0
    violation: float = 0.0
    vacated: int = 0
    lost_work: float = 0.0
    saved_work: float = 0.0
    capacity_loss: float = 0.0
    vacate_time: float = 0.0
    holding: Vec = ZERO  # per resource, for dominant measures
    wanting: Vec = ZERO



class StraightMeter:
    """The straightforward meter: the same events, the same results, no shortcuts.

    ``shares`` are resolved owner shares, and ``capacity`` the pool's, in the unit the job weights
    are in (slots by default; :meth:`osep.core.shares.ShareTable.resolve`). Events with
    the same time may come in any order; an event earlier than the last one is an error, since the
    areas already integrated cannot be taken back.
    """

    def __init__(self, shares: Mapping[str, float], capacity: float, *, curves: bool = False,
                 steps: bool = False, origin: float | None = None,
                 dominant: tuple[Mapping[str, Measure], Measure] | None = None,
                 ideal: Ideal | None = None) -> None:
        """``dominant``: each owner's measure (:func:`osep.core.resources.measure`) and the one for
        owners without a share; PV is then in share-seconds (see the module's docstring).
        ``ideal``: the feasible shares for a demand and a capacity, where they are not the flat
        water-filling of ``shares`` (an owner tree's, :meth:`osep.core.tree.ShareTree.entitlements`)."""
        self.shares = dict(shares)
        self._ideal = ideal
        self.dominant = dominant
        self.origin = origin  # makespan is measured from here; default: the first event
        self.capacity = capacity
        self.now: float | None = None
        self._jobs: dict[Hashable, _Job] = {}
        self._owners: dict[str, _Owner] = {o: _Owner() for o in self.shares}
        self._fes: dict[str, float] = {}
        self._fes_stale = True
        # slot -> end of the evicted run that freed it, and that run's weight
        self._vacated_at: dict[str, tuple[float, float, _Owner]] = {}  # slot: since, weight, whose
        self._occupant: dict[str, Hashable] = {}  # slot -> the job running there
        self.capacity_loss = 0.0
        self.vacate_time = 0.0
        self.vacates = 0
        self.makespan = 0.0
        self._bins: Bins | None = None
        self._curves = curves
        # With ``steps``: (time, running per owner, ideal per owner) at every change.
        self._steps: list[tuple[float, dict[str, float], dict[str, float]]] | None = (
            [] if steps else None)

    # -- time ------------------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Integrate the current state up to ``t``."""
        if self.now is None:
            self.now = t
            if self.origin is None:
                self.origin = t
            if self._curves:
                self._bins = Bins(start=t)
            return
        if t < self.now:
            raise MeterError(f"event at {t} comes after one at {self.now}: time ran backwards")
        if t == self.now:
            return
        self._refresh()
        if self._steps is not None:
            self._steps.append(self._point())
        dt = t - self.now
        for owner, stats in self._owners.items():
            real, ideal = self._real_ideal(owner, stats)
            short = ideal - real
            if short > 0:
                stats.violation += short * dt
            if self._bins is not None:
                self._bins.add(owner, self.now, t, real, ideal)
        self.now = t

    def _real_ideal(self, owner: str, stats: _Owner) -> tuple[float, float]:
        """SuR_i and SuI_i now (the feasible shares must be fresh)."""
        if self.dominant is None:
            return stats.running, self._fes.get(owner, 0.0)
        measures, other = self.dominant
        measure = measures.get(owner)
        if measure is None:
            return other(stats.holding), 0.0
        return measure(stats.holding), min(1.0, measure(stats.wanting))

    def _refresh(self) -> None:
        if self._fes_stale:
            demand = {o: s.demand for o, s in self._owners.items() if s.demand}
            if self._ideal is not None:
                self._fes = dict(self._ideal(demand, self.capacity))
            else:
                self._fes = feasible_shares(self.shares, demand, self.capacity)
            self._fes_stale = False

    def _point(self) -> tuple[float, dict[str, float], dict[str, float]]:
        """Now, what each owner runs, and its ideal (the feasible shares must be fresh)."""
        assert self.now is not None
        pairs = {o: self._real_ideal(o, s) for o, s in self._owners.items()}
        return (self.now, {o: r for o, (r, _) in pairs.items()}, {o: i for o, (_, i) in pairs.items()})

    def _owner(self, name: str) -> _Owner:
        stats = self._owners.get(name)
        if stats is None:
            stats = self._owners[name] = _Owner()
        return stats

    def _job(self, job: Hashable) -> _Job:
        state = self._jobs.get(job)
        if state is None:
            raise MeterError(f"job {job} was never submitted")
        return state

    # -- events ----------------------------------------------------------------------------------

    def submit(self, t: float, job: Hashable, owner: str, weight: float = 1.0,
               amount: Vec = ZERO) -> None:
        """``amount``: what the job holds per resource while it runs (for dominant measures)."""
        if job in self._jobs:
            raise MeterError(f"job {job} submitted twice")
        self.advance(t)
        self._jobs[job] = _Job(owner, t, weight=weight, amount=amount)
        stats = self._owner(owner)
        stats.jobs += 1
        stats.demand += weight
        stats.wanting = plus(stats.wanting, amount)
        self._fes_stale = True

    def start(self, t: float, job: Hashable, slot: str) -> None:
        state = self._job(job)
        if state.start is not None:
            raise MeterError(f"job {job} started on {slot} while running on {state.slot}")
        self.advance(t)
        state.slot, state.start, state.signal = slot, t, None
        stats = self._owner(state.owner)
        stats.running += state.weight
        stats.holding = plus(stats.holding, state.amount)
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
        state = self._job(job)
        if state.start is None:
            return
        self.advance(t)
        stats = self._owner(state.owner)
        weight = state.weight
        stats.running -= weight
        stats.holding = minus(stats.holding, state.amount)
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
        state = self._job(job)
        last_start = state.start
        if last_start is not None:
            self.end(t, job, evicted=False)
        else:
            self.advance(t)
        if runtime is None:
            runtime = state.saved + (t - last_start if last_start is not None else 0.0)
        stats = self._owner(state.owner)
        stats.finished += 1
        elapsed = t - state.submit
        stats.us_sum += 100.0 if elapsed <= 0 else min(100.0, 100.0 * runtime / elapsed)
        self.makespan = max(self.makespan, t - (self.origin or 0.0))
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
        stats = self._owner(state.owner)
        stats.demand += -state.weight if held else state.weight
        stats.wanting = (minus if held else plus)(stats.wanting, state.amount)
        self._fes_stale = True

    def _leave(self, job: Hashable, state: _Job) -> None:
        if state.counted:
            stats = self._owner(state.owner)
            stats.demand -= state.weight
            stats.wanting = minus(stats.wanting, state.amount)
            self._fes_stale = True
        del self._jobs[job]

    # -- results ---------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._jobs)

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
        lost = sum(o.lost_work for o in owners)
        return Metrics(
            violation=sum(o.violation for o in owners),
            capacity_loss=self.capacity_loss,
            cost=lost + self.vacate_time,
            vacates=self.vacates,
            lost_work=lost,
            vacate_time=self.vacate_time,
            makespan=self.makespan,
            owners=owners,
            saved_work=sum(o.saved_work for o in owners),
        )

    def steps(self) -> Curves:
        """The exact curves up to the last event (a meter made with ``steps=True``)."""
        if self._steps is None:
            raise ValueError("this meter keeps no step curves")
        points = list(self._steps)
        if self.now is not None:  # the state after the last event holds from then on
            self._refresh()
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
        return self._bins.series(sorted(self._owners))

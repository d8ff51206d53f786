"""The paper's metrics, integrated as events arrive in time order: the one implementation of them.

Replay of a million-job event log cannot keep a record per job, so the metrics are accrued on the fly:
the meter keeps only the jobs in flight, one number per slot for the capacity loss, and a bounded,
self-coarsening series of the curves for plotting (:mod:`osep.measure.series`, which also holds the
exact step curves it can keep for small runs: ``steps``). :func:`osep.measure.records.compute`
feeds the simulator's job records through the same meter, so simulated and replayed runs are
measured by one piece of code.

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
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass

from osep.core.resources import ZERO, Measure, Vec, minus, plus
from osep.errors import OsepError
from osep.measure.series import Bins, Curves, Series

__all__ = ["Curves", "Ideal", "Meter", "MeterError", "Metrics", "OwnerMetrics", "Series"]

@dataclass(frozen=True, slots=True)
class OwnerMetrics:
    owner: str
    share: float
    jobs: int
    finished: int
    satisfaction: float | None  # A_US, percent; None when no job finished
    violation: float  # this owner's part of PV
    vacated: int  # runs of this owner's jobs that ended in an eviction
    lost_work: float  # work redone
    saved_work: float = 0.0  # work a checkpoint kept across an eviction
    capacity_loss: float = 0.0  # this owner's part of LC: idle time after its jobs were vacated
    vacate_time: float = 0.0  # its runs' time from the vacate signal to the release (with lost_work: its PC)


@dataclass(frozen=True, slots=True)
class Metrics:
    violation: float  # PV
    capacity_loss: float  # LC
    cost: float  # PC = lost_work + vacate_time
    vacates: int
    lost_work: float
    vacate_time: float
    makespan: float
    owners: tuple[OwnerMetrics, ...]
    saved_work: float = 0.0


class MeterError(OsepError):
    """Events that contradict each other (a job started twice, time running backwards)."""


@dataclass(slots=True)
class _Job:
    owner: str
    stats: _Owner
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
    name: str
    share: float = 0.0  # a_i, for the flat water-filling
    running: float = 0.0
    demand: float = 0.0
    jobs: int = 0
    finished: int = 0
    us_sum: float = 0.0
    violation: float = 0.0
    vacated: int = 0
    lost_work: float = 0.0
    saved_work: float = 0.0
    capacity_loss: float = 0.0  # LC after this owner's jobs were vacated
    vacate_time: float = 0.0
    holding: Vec = ZERO  # per resource, for dominant measures
    wanting: Vec = ZERO
    # The piece being integrated (see Meter._settle): since when; SuR_i and SuI_i over it (for the
    # series); the shortfall rate, plus the water level if ``linear``; the level's area at ``since``.
    since: float = 0.0
    real: float = 0.0
    ideal: float = 0.0
    rate: float = 0.0
    linear: bool = False
    area: float = 0.0
    # What this owner adds to the water-filling's books: min(a_i, d_i), and its keys in the sorted
    # lists (d_i - a_i among the needs, r_i - a_i among the marks), None when not there.
    base: float = 0.0
    need: float | None = None
    mark: float | None = None
    # Where its keys were put in those lists (the key object and its index then): the index holds
    # while no other key was put in or taken out before it, which the key found there tells.
    need_key: tuple[float, str] | None = None
    need_at: int = 0
    mark_key: tuple[float, str] | None = None
    mark_at: int = 0


Ideal = Callable[[Mapping[str, float], float], Mapping[str, float]]
# An ideal told the demand, the owners whose demand moved since it was last asked, and the
# capacity: the owners whose share changed since then, with their new shares (0 for one that left).
IdealUpdate = Callable[[Mapping[str, float], Iterable[str], float], Mapping[str, float]]

RESYNC = 4096  # changes of demand between exact recountings of the water-filling's running sums


class Meter:
    """Accrues PV, LC, PC and satisfaction from job events given in time order.

    ``shares`` are resolved owner shares, and ``capacity`` the pool's, in the unit the job weights
    are in (slots by default; :meth:`osep.core.shares.ShareTable.resolve`). Events with
    the same time may come in any order; an event earlier than the last one is an error, since the
    areas already integrated cannot be taken back.

    The work per event does not grow with the owners. Each owner's SuR_i and SuI_i are integrated
    in pieces that end only when they change: its own events, or, for the feasible share, the water
    level. With the flat water-filling fes_i = min(d_i, a_i + L) for one level L (0 when the shares
    take the whole pool, infinite when every demand is met), so an owner's shortfall
    max(0, fes_i - r_i) is a constant (0, or d_i - r_i) or a_i - r_i + L, as L is below r_i - a_i,
    above d_i - a_i, or between. L is kept from the hungry owners' needs d_i - a_i, sorted; a change
    of L touches only the owners with a bound between its old and new value, and the owners in
    the middle case accrue the level's own running area (``_area``). The results are the
    straightforward recomputation's (tests/measure keeps it as an oracle) up to rounding.
    """

    def __init__(self, shares: Mapping[str, float], capacity: float, *, curves: bool = False,
                 steps: bool = False, origin: float | None = None,
                 dominant: tuple[Mapping[str, Measure], Measure] | None = None,
                 ideal: Ideal | None = None) -> None:
        """``dominant``: each owner's measure (:func:`osep.core.resources.measure`) and the one for
        owners without a share; PV is then in share-seconds (see the module's docstring).
        ``ideal``: the feasible shares for a demand and a capacity, where they are not the flat
        water-filling of ``shares`` (an owner tree's, :meth:`osep.core.tree.ShareTree.entitlements`).
        An ideal with an ``update`` method (:func:`osep.measure.trees.tree_ideal`'s) is asked
        through it, with the owners whose demand moved, and answers with the shares that changed
        since it last answered this meter: it is this meter's alone."""
        self.shares = dict(shares)
        self._ideal = ideal
        # An ideal that can be told only the owners whose demand moved, and answers with the
        # shares that changed (:meth:`osep.measure.trees._Filler.update`): asked so at each instant.
        self._update: IdealUpdate | None = getattr(ideal, "update", None)
        self.dominant = dominant
        self._flat = ideal is None and dominant is None
        self.origin = origin  # makespan is measured from here; default: the first event
        self.capacity = capacity
        self.now: float | None = None
        self._jobs: dict[Hashable, _Job] = {}
        self._owners: dict[str, _Owner] = {}
        # Owners whose state changed at ``now``, settled when time moves on; whether demand did.
        self._dirty: dict[str, _Owner] = {}
        self._wanting: dict[str, _Owner] = {}  # those of them whose demand changed
        self._demand: dict[str, float] = {}  # the owners' demands, where not 0 (for an ``ideal``)
        # The flat water-filling: L, the area under it since the first event, sum(min(a_i, d_i)),
        # the hungry owners' (d_i - a_i, owner) sorted with the first ``_p`` summing to ``_sum``,
        # and (r_i - a_i, owner) of the owners with r_i < d_i and r_i >= a_i.
        self._level = math.inf
        self._area = 0.0
        self._base = 0.0
        self._needs: list[tuple[float, str]] = []
        self._p = 0
        self._sum = 0.0
        self._marks: list[tuple[float, str]] = []
        self._changes = 0
        self._fes: dict[str, float] = {}  # an ``ideal``'s feasible shares
        for name in self.shares:
            self._owner(name)
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
            if self._flat:
                self._commit_flat()
            else:
                self._commit()
        if self._steps is not None:
            self._steps.append(self._point())
        if self._level != math.inf:
            self._area += self._level * (t - now)
        self.now = t

    def _commit(self) -> None:
        """Settle what the events at ``now`` changed: the owners they touched and, when demand
        changed, the feasible shares (once for the instant, however many events it had)."""
        if self._flat:
            self._commit_flat()
            return
        dirty, self._dirty = self._dirty, {}
        wanting = self._wanting
        if wanting:
            self._wanting = {}
            if self._ideal is not None:
                demand = self._demand
                for o, stats in wanting.items():
                    if stats.demand:
                        demand[o] = stats.demand
                    else:
                        demand.pop(o, None)
                owners = self._owners
                if self._update is not None:  # told only what moved: the owners' shares that changed
                    fes = self._fes
                    for o, share in self._update(demand, wanting.keys(), self.capacity).items():
                        fes[o] = share
                        if o in owners:
                            dirty[o] = owners[o]
                else:
                    fes = dict(self._ideal(dict(demand), self.capacity))
                    old_fes, self._fes = self._fes, fes
                    for o, share in fes.items():  # only the owners' shares matter
                        if share != old_fes.get(o, 0.0) and o in owners:
                            dirty[o] = owners[o]
                    for o, share in old_fes.items():
                        if o not in fes and share != 0.0 and o in owners:
                            dirty[o] = owners[o]
        self._settle(dirty.values())

    @staticmethod
    def _between(keys: list[tuple[float, str]], low: float, high: float, above: bool = False
                 ) -> list[str]:
        """The owners whose key is from ``low`` to ``high`` (with ``above``: or higher)."""
        if not keys:
            return []
        first = bisect_left(keys, (low,))
        last = len(keys) if above or high == math.inf else bisect_left(
            keys, (math.nextafter(high, math.inf),))
        return [o for _, o in keys[first:last]]

    def _commit_flat(self) -> None:
        """:meth:`_commit` for the flat water-filling, in one piece: this runs at every instant
        that had events, so the owners' books, the level and the owners' pieces are brought up to
        date here with the meter's fields held in local names (the same operations, in the same
        order, as booking each owner, filling and settling one step at a time)."""
        dirty, self._dirty = self._dirty, {}
        wanting = self._wanting
        if wanting:
            self._wanting = {}
            # Each owner whose demand changed into the books: min(a_i, d_i) into the base, and its
            # need d_i - a_i moved in the sorted needs (the first p of which sum to ``total``).
            needs, p, total, base_sum = self._needs, self._p, self._sum, self._base
            changes = self._changes
            for stats in wanting.values():
                share, demand = stats.share, stats.demand
                base = share if share <= demand else demand  # min(share, demand)
                if base != stats.base:
                    base_sum += base - stats.base
                    stats.base = base
                need = demand - share if demand > share else None
                old_need = stats.need
                if need == old_need:
                    continue
                stats.need = need
                key = (need, stats.name) if need is not None else None
                if old_need is not None:
                    at = stats.need_at  # where its key is, unless others moved it
                    if at >= len(needs) or needs[at] is not stats.need_key:
                        at = bisect_left(needs, (old_need, stats.name))
                    if key is not None and (at == 0 or needs[at - 1] < key) and (
                            at + 1 == len(needs) or key < needs[at + 1]):
                        # It keeps its place (a job more or less, mostly): what taking it out
                        # and putting it back does, in place.
                        needs[at] = stats.need_key = key
                        stats.need_at = at
                        if at < p:
                            p -= 1
                            total -= old_need
                        if at < p:
                            p += 1
                            total += key[0]
                        key = None
                    else:
                        del needs[at]
                        if at < p:
                            p -= 1
                            total -= old_need
                if key is not None:
                    at = bisect_left(needs, key)
                    needs.insert(at, key)
                    stats.need_key, stats.need_at = key, at
                    if at < p:
                        p += 1
                        total += key[0]
                changes += 1
                if changes % RESYNC == 0:
                    self._p, self._sum, self._base = p, total, base_sum
                    self._resync()
                    p, total, base_sum = self._p, self._sum, self._base
            self._base = base_sum
            self._changes = changes
            # The water level L for the demand now: fes_i = min(d_i, a_i + L) (what
            # osep.core.shares.feasible_shares gives). p moves from where the last change of
            # demand left it (by one or two, mostly).
            old = self._level
            left = self.capacity - base_sum
            if left <= 0:
                new = 0.0
            else:
                m = len(needs)
                while p > 0:
                    level = (left - total) / (m - p) if p < m else (
                        math.inf if total <= left else -1.0)
                    if needs[p - 1][0] <= level:
                        break
                    p -= 1
                    total -= needs[p][0]
                while p < m and needs[p][0] <= (left - total) / (m - p):
                    total += needs[p][0]
                    p += 1
                new = (left - total) / (m - p) if p < m else math.inf
            self._p, self._sum, self._level = p, total, new
            if new != old:
                low, high = (old, new) if old < new else (new, old)
                owners = self._owners
                for o in self._between(needs, low, high, self._curves):
                    dirty[o] = owners[o]
                for o in self._between(self._marks, low, high):
                    dirty[o] = owners[o]
        # Each touched owner's piece ends and one starts with its state now: SuR_i = r_i,
        # SuI_i = min(d_i, a_i + L), the shortfall a constant or a_i - r_i + L. The piece ends as
        # _flush ends it (the same operations, in the same order), written out here and in _settle
        # because this runs for every owner an instant touches; a change to one is a change to all
        # three.
        now = self.now
        assert now is not None
        area, bins, level, marks = self._area, self._bins, self._level, self._marks
        for stats in dirty.values():
            since = stats.since
            if now > since:
                short = stats.rate * (now - since)
                if stats.linear:
                    short += area - stats.area
                if short > 0:
                    stats.violation += short
                if bins is not None:
                    bins.add(stats.name, since, now, stats.real, stats.ideal)
            stats.since = now
            stats.area = area
            share, real, demand = stats.share, stats.running, stats.demand
            mark = real - share if real < demand and real >= share else None
            old_mark = stats.mark
            if mark != old_mark:
                stats.mark = mark
                key = (mark, stats.name) if mark is not None else None
                if old_mark is not None:
                    at = stats.mark_at  # where its key is, unless others moved it
                    if at >= len(marks) or marks[at] is not stats.mark_key:
                        at = bisect_left(marks, (old_mark, stats.name))
                    if key is not None and (at == 0 or marks[at - 1] < key) and (
                            at + 1 == len(marks) or key < marks[at + 1]):
                        marks[at] = stats.mark_key = key  # it keeps its place
                        stats.mark_at = at
                        key = None
                    else:
                        del marks[at]
                if key is not None:
                    at = bisect_left(marks, key)
                    marks.insert(at, key)
                    stats.mark_key, stats.mark_at = key, at
            stats.real, stats.linear = real, False
            if level >= demand - share:
                gap = demand - real
                stats.ideal, stats.rate = demand, gap if gap > 0.0 else 0.0  # max(0.0, gap)
            else:
                stats.ideal = share + level
                if real >= demand or level <= real - share:
                    stats.rate = 0.0
                else:
                    stats.rate, stats.linear = share - real, True

    def _resync(self) -> None:
        """Recount what adding and taking away has rounded in the water-filling's running sums."""
        self._base = math.fsum(s.base for s in self._owners.values())
        self._sum = math.fsum(n for n, _ in self._needs[:self._p])
        # The level's area is only ever differenced: start it again from 0, so that it stays
        # small beside what it is taken from.
        for other in self._owners.values():
            if other.linear:
                self._flush(other)
            other.area = 0.0
        self._area = 0.0

    def _flush(self, stats: _Owner) -> None:
        """Integrate the owner's current piece up to now (written out in :meth:`_commit_flat` and
        :meth:`_settle`, where it runs per owner and instant: the three must stay the same)."""
        assert self.now is not None
        span = self.now - stats.since
        if span > 0:
            short = stats.rate * span
            if stats.linear:
                short += self._area - stats.area
            if short > 0:
                stats.violation += short
            if self._bins is not None:
                self._bins.add(stats.name, stats.since, self.now, stats.real, stats.ideal)
        stats.since = self.now
        stats.area = self._area

    def _settle(self, touched: Iterable[_Owner]) -> None:
        """End each owner's piece and start one with its state now (the feasible shares fresh);
        for the meters that are not flat (the flat one does this in :meth:`_commit_flat`)."""
        now = self.now
        assert now is not None
        area, bins = self._area, self._bins
        for stats in touched:
            since = stats.since
            if now > since:  # _flush, inline, as in _commit_flat: keep the three the same
                short = stats.rate * (now - since)
                if stats.linear:
                    short += area - stats.area
                if short > 0:
                    stats.violation += short
                if bins is not None:
                    bins.add(stats.name, since, now, stats.real, stats.ideal)
            stats.since = now
            stats.area = area
            real, ideal = self._real_ideal(stats)
            stats.real, stats.ideal, stats.rate, stats.linear = (real, ideal, max(0.0, ideal - real),
                                                                 False)

    def _real_ideal(self, stats: _Owner) -> tuple[float, float]:
        """SuR_i and SuI_i now (the feasible shares must be fresh)."""
        if self.dominant is None:
            if self._flat:
                return stats.running, min(stats.demand, stats.share + self._level)
            return stats.running, self._fes.get(stats.name, 0.0)
        measures, other = self.dominant
        measure = measures.get(stats.name)
        if measure is None:
            return other(stats.holding), 0.0
        return measure(stats.holding), min(1.0, measure(stats.wanting))

    def _point(self) -> tuple[float, dict[str, float], dict[str, float]]:
        """Now, what each owner runs, and its ideal (the feasible shares must be fresh)."""
        assert self.now is not None
        pairs = {o: self._real_ideal(s) for o, s in self._owners.items()}
        return (self.now, {o: r for o, (r, _) in pairs.items()}, {o: i for o, (_, i) in pairs.items()})

    def _settled(self) -> None:
        """Every owner's areas up to now."""
        if self.now is None:
            return
        if self._dirty:
            self._commit()
        for stats in self._owners.values():
            self._flush(stats)

    def _owner(self, name: str) -> _Owner:
        stats = self._owners.get(name)
        if stats is None:
            stats = self._owners[name] = _Owner(name, self.shares.get(name, 0.0))
            stats.since = self.now if self.now is not None else 0.0
            stats.area = self._area
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
        jobs = self._jobs
        if job in jobs:
            raise MeterError(f"job {job} submitted twice")
        if t != self.now:
            self.advance(t)
        stats = self._owners.get(owner) or self._owner(owner)
        jobs[job] = _Job(owner, stats, t, True, None, None, None, 0.0, weight, amount)
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
        jobs = self._jobs
        state = jobs.get(job) or self._job(job)
        if t != self.now:
            self.advance(t)
        stats = state.stats
        owner = state.owner
        last_start = state.start
        if last_start is not None:  # the run ends (what end(evicted=False) does, inline)
            stats.running -= state.weight
            if self.dominant is not None:
                stats.holding = minus(stats.holding, state.amount)
            slot = state.slot
            if slot is not None:
                occupant = self._occupant
                if occupant.get(slot) == job:
                    del occupant[slot]
            self._dirty[owner] = stats
            if runtime is None:
                runtime = state.saved + (t - last_start)
        elif runtime is None:
            runtime = state.saved + 0.0
        stats.finished += 1
        elapsed = t - state.submit
        if elapsed <= 0:
            stats.us_sum += 100.0
        else:
            ratio = 100.0 * runtime / elapsed
            stats.us_sum += ratio if ratio < 100.0 else 100.0  # min(100.0, ratio)
        span, longest = t - (self.origin or 0.0), self.makespan
        self.makespan = span if span > longest else longest  # max(longest, span)
        if state.counted:  # it leaves the queue (what _leave does, inline)
            stats.demand -= state.weight
            if self.dominant is not None:
                stats.wanting = minus(stats.wanting, state.amount)
            self._dirty[owner] = self._wanting[owner] = stats
        del jobs[job]
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

    def _leave(self, job: Hashable, state: _Job) -> None:
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
    def jobs(self) -> Mapping[Hashable, _Job]:
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
        # Correctly rounded sums (math.fsum): built-in sum() adds floats another way from Python 3.12
        # on, and a sweep's figures must not depend on which Python ran it (a pool's job, or here).
        lost = math.fsum(o.lost_work for o in owners)
        return Metrics(
            violation=math.fsum(o.violation for o in owners),
            capacity_loss=self.capacity_loss,
            cost=lost + self.vacate_time,
            vacates=self.vacates,
            lost_work=lost,
            vacate_time=self.vacate_time,
            makespan=self.makespan,
            owners=owners,
            saved_work=math.fsum(o.saved_work for o in owners),
        )

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

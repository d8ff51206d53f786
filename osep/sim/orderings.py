"""How the simulated negotiator ranks owners: the one list of orderings, each behind one small face.

An :class:`Ordering` answers three things for :mod:`osep.sim.negotiator` and the driver: which
owners come first for a free slot (:meth:`Ordering.rank`; only owners with jobs queued are ranked),
when a submitted job joins the queue (:meth:`Ordering.admit`; at once for all but Cambridge), and
what a run that ended charges (:meth:`Ordering.ended`). The driver negotiates only when something
can change hands, unless the ordering says it ``ticks`` (its state moves at every negotiation cycle,
as Share's does). The seeds' models keep their formulas in :mod:`osep.fairshare`; here they only get
their state (usage kept by the pool's :class:`osep.fairshare.usage.Accountant`, or their own) and an
order of owners. ``greedy`` ranks by each owner's oldest queued job and matches greedily: a job that
does not fit is passed over, and later, smaller jobs start. docs/simulate.md and docs/fairshare.md
say what each of the others keeps and ranks by, and how Cambridge's units map to a pool.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from operator import sub
from typing import Any, Protocol

from osep.core.model import JobId
from osep.fairshare import cambridge, grid, share, slurm
from osep.fairshare import usage as fairshare
from osep.fairshare.hierarchy import Hierarchy, of_shares, usage_fractions
from osep.sim.specs import JobSpec, ModelParams, Order

MAX_TURNROUND = 58 * 86400.0  # Hazel: the longest turnround given (a Cambridge term)


# A queue's head: (the time its oldest job joined the queue, its arrival number, its id).
Head = tuple[float, int, JobId]


class Queue(Protocol):
    """What an ordering reads of an owner's queue (:class:`osep.sim.parts.IdleQueue`)."""

    def __len__(self) -> int: ...

    def head(self) -> Head: ...


# The owners with jobs queued, and their queues.
Idle = Mapping[str, Queue]


class Ordering:
    """The greedy order (submit order), and the face of every other ordering."""

    order = Order.GREEDY
    # Whether an owner's place depends on its queue's head, which changes as its jobs start: then
    # the negotiator ranks once per cycle and puts an owner back in its place (:meth:`moved`)
    # each time a job of its is taken off its queue. Otherwise the rank holds for the whole cycle.
    per_slot = True
    ticks = False  # whether its state moves at every negotiation cycle, matches or not

    def rank(self, now: float, idle: Idle, running: Mapping[str, int],
             usage: fairshare.Accountant) -> list[str]:
        return self.ranking(now, idle, running, usage)[0]

    def ranking(self, now: float, idle: Idle, running: Mapping[str, int],
                usage: fairshare.Accountant) -> tuple[list[str], list[Head] | None]:
        """:meth:`rank`'s order and, for an ordering that ranks by queue heads (``per_slot``),
        each owner's head beside it (what :meth:`moved` places an owner by); else None."""
        if type(self).rank is not Ordering.rank:
            return self.rank(now, idle, running, usage), None
        pairs = sorted([(q.head(), o) for o, q in idle.items() if q])
        return [o for _, o in pairs], [h for h, _ in pairs]

    @property
    def reads_usage(self) -> bool:
        """Whether :meth:`rank` reads the usage the pool accounts (an ordering that ranks by queue
        heads, as this one, does not: the pool need not keep it)."""
        return type(self).rank is not Ordering.rank

    @staticmethod
    def moved(ranked: list[str], heads: list[Head], at: int, idle: Idle) -> None:
        """``ranked[at]``'s queue lost a job (and other queues did not change): put the owner where
        :meth:`rank` would now place it, or take it out if its queue is empty. ``ranked`` is in rank
        order, less owners taken out, and ``heads`` their queues' heads as :meth:`ranking` gave
        them (other queues did not change since); every owner in it has jobs queued. (No two heads
        are equal: a queue's entry holds the job's arrival number, so the owner's name never
        decides.)"""
        owner = ranked.pop(at)
        del heads[at]
        queue = idle.get(owner)
        if queue:
            head = queue.head()
            at = bisect.bisect_left(heads, head)
            heads.insert(at, head)
            ranked.insert(at, owner)

    def admit(self, spec: JobSpec, now: float, idle: Idle, running: Mapping[str, int]) -> float:
        """Whether ``spec`` (submitted, not yet in the queue) joins the queue the negotiator matches
        from now (``now`` returned), or when to ask again."""
        return now

    def ended(self, spec: JobSpec, start: float, now: float, vacated: bool) -> None:
        """A run of ``spec`` from ``start`` ended now (``vacated``: the job goes back to the queue)."""


SIGNIFICANT = 12  # digits of a model's value that rank owners; the rest is rounding


def settled(value: float) -> float:
    """``value`` to :data:`SIGNIFICANT` significant digits (infinities and NaN as they are).

    Owners the formulas tie (equal shares and usage reached by different sums and products, as
    ``0.6 * 2/3 * 0.5`` and ``0.4 * 0.5``) get values a few units in the last place apart; ranked on
    those, the order of tied owners would be the rounding's, and it moves with the order of any sum.
    Rounded to 12 digits they tie, and the tie goes by name."""
    if not math.isfinite(value) or value == 0.0:
        return value
    return float(f"{value:.{SIGNIFICANT}g}")


# Two values that :func:`settled` makes equal are less than one unit of their 12th significant
# digit apart, about a relative 1e-11 of either: values further apart than this relative distance
# keep their order when settled.
_APART = 1e-10


def _by_value(idle: Idle, value: Mapping[str, float], best_high: bool) -> list[str]:
    """The owners with queued jobs, best ``value`` first; values equal to :data:`SIGNIFICANT`
    significant digits tie, and ties go by name; any owner without a value last (by name)."""
    sign = -1.0 if best_high else 1.0
    keyed = [(sign * value[o], o) for o, q in idle.items() if q and o in value]
    last = sorted(o for o, q in idle.items() if q and o not in value)
    if last and not math.isfinite(sum(v for v, _ in keyed)):  # settled infinities rank with them
        return sorted((o for o, q in idle.items() if q),
                      key=lambda o: (sign * settled(value[o]) if o in value else math.inf, o))
    return _ranked(keyed, sign) + last


def _ranked(keyed: list[tuple[float, str]], sign: float) -> list[str]:
    """The owners of ``keyed`` (pairs of ``sign`` times an owner's value, and the owner), lowest
    first, values equal to :data:`SIGNIFICANT` significant digits tied and ties by name: the
    order of sorting by ``sign * settled(value)`` and name.

    Settling keeps the order of values (it rounds), so the owners are sorted by their values as
    they are, and settled only where neighbours are close enough to tie (a run of them is sorted
    again by settled value and name): the same order, without formatting every value at every
    negotiation. (``keyed`` is sorted in place.)"""
    keyed.sort()
    n = len(keyed)
    if n < 2:
        return [o for _, o in keyed]
    values = [v for v, _ in keyed]
    if not math.isfinite(sum(values)):  # infinities or NaN (or a sum too large): all settled
        return [o for _, o in sorted([(sign * settled(sign * v), o) for v, o in keyed])]
    # Neighbours v <= w that might tie are within _APART * |w| (|w| + (w - v) is at least the
    # larger of |v| and |w|, and what ties is within about a tenth of that). None are if the
    # smallest gap is wider than that for the largest |w|.
    if min(map(sub, values[1:], values)) > _APART * max(map(abs, values)):
        return [o for _, o in keyed]
    k = 0
    while k < n - 1:
        if values[k + 1] - values[k] > _APART * abs(values[k + 1]):
            k += 1
            continue
        end = k + 2  # keyed[k:end] might tie: a run of neighbours each close to the next
        while end < n and values[end] - values[end - 1] <= _APART * abs(values[end]):
            end += 1
        keyed[k:end] = sorted([(sign * settled(sign * v), o) for v, o in keyed[k:end]])
        k = end
    return [o for _, o in keyed]


class FairShare(Ordering):
    order = Order.FAIRSHARE
    per_slot = False

    def __init__(self, shares: Mapping[str, float]) -> None:
        self.shares = shares
        total = sum(shares.values())
        # Each owner's normalized share S, for the owners with a positive one (the others get 0).
        self._share = {o: s / total for o, s in shares.items() if total > 0 and s / total > 0}

    def rank(self, now: float, idle: Idle, running: Mapping[str, int],
             usage: fairshare.Accountant) -> list[str]:
        # The priority factor of each owner with jobs queued (every owner of ``idle`` has).
        share = self._share
        return _ranked([(-fairshare.factor(u, share.get(o, 0.0)), o)
                        for o, u in usage.fractions(now, idle).items()], -1.0)


def _leaf_usage(tree: Hierarchy, usage: Mapping[str, float]) -> dict[str, float]:
    return {o: u for o, u in usage.items() if tree.is_leaf(o)}


class Slurm(Ordering):
    order = Order.SLURM
    per_slot = False

    def __init__(self, tree: Hierarchy, params: ModelParams) -> None:
        self.tree = tree
        self.dampening = params.dampening
        if not self.dampening > 0:
            raise ValueError(f"the dampening factor must be positive, got {self.dampening!r}")
        self.shares = slurm.normalized_shares(tree)  # S does not change; U and UE do

    def rank(self, now: float, idle: Idle, running: Mapping[str, int],
             usage: fairshare.Accountant) -> list[str]:
        # slurm.classic's F, worked out for the owners with queued jobs only (UE is top down, so
        # every node's is needed; F of a node no job waits for is not).
        actual = usage_fractions(self.tree, _leaf_usage(self.tree, usage.usage_at(now)))
        effective = slurm.effective_usage(self.tree, actual)
        value = {o: fairshare.factor(effective[o], self.shares[o], self.dampening)
                 for o, q in idle.items() if q and o in effective}
        return _by_value(idle, value, best_high=True)


class Share(Ordering):
    order = Order.SHARE
    per_slot = False
    ticks = True  # stepped with each cycle's charges: the K6 cuts and the K5 guard are per step

    def __init__(self, tree: Hierarchy, params: ModelParams, half_life: float,
                 initial: Mapping[str, float]) -> None:
        self.tree = tree
        self.params = params
        self.state = share.ShareState(tree, half_life, _leaf_usage(tree, initial))
        self.charged: dict[str, float] = {}

    def rank(self, now: float, idle: Idle, running: Mapping[str, int],
             usage: fairshare.Accountant) -> list[str]:
        charged = usage.charged_at(now)
        charges = {o: c - self.charged.get(o, 0.0) for o, c in charged.items() if self.tree.is_leaf(o)}
        self.charged = charged
        active = [o for o in self.tree.leaves() if running.get(o, 0) > 0 or idle.get(o)]
        used = self.state.step(now, charges, active, self.params.k5, self.params.k6_tolerance)
        m = self.state.m_share  # the step's, for these active owners
        increment = {o: share.priority_increment(used.get(o, 0.0), running.get(o, 0) + 1, m[o])
                     for o in active}
        return _by_value(idle, increment, best_high=False)


class Grid(Ordering):
    order = Order.GRID
    per_slot = False

    def __init__(self, tree: Hierarchy) -> None:
        self.tree = tree
        self.targets = grid.targets(tree)  # targets do not change; actual shares do
        self.depth = tree.depth()

    def rank(self, now: float, idle: Idle, running: Mapping[str, int],
             usage: fairshare.Accountant) -> list[str]:
        # grid.report's priority, worked out for the owners with queued jobs only.
        actual = grid.actuals(self.tree, _leaf_usage(self.tree, usage.usage_at(now)))
        deviation = {n: self.targets[n] - actual[n] for n in self.tree.order()}
        value = {o: grid.priority(grid.deviation_tuple(self.tree, deviation, o, self.depth))
                 for o, q in idle.items() if q and o in deviation}
        return _by_value(idle, value, best_high=True)


class Cambridge(Ordering):
    order = Order.CAMBRIDGE
    per_slot = True

    def __init__(self, tree: Hierarchy, params: ModelParams, capacity: int,
                 initial: Mapping[str, float]) -> None:
        self.params = params
        self.capacity = max(1, capacity)
        shares = cambridge.project_shares(tree)
        self.projects = {leaf: cambridge.Project(s, usage=initial.get(leaf, 0.0) / params.unit)
                         for leaf, s in shares.items()}
        total = sum(shares.values())
        self.full = math.log(1 / 0.9) * cambridge.SCALE * params.unit * total / (cambridge.DAY * self.capacity)
        self.priced: dict[JobId, tuple[float, float]] = {}  # job -> (unit price, charge added to W)
        self.at = 0.0
        # U and V decay at every event, project by project, factor after factor. A project's
        # decay is applied when it is next read (:meth:`_project`), the same multiplications in the
        # same order, so that an event costs what the projects it touches cost, not all of them:
        # the factors since every project was last brought up, and how many of them each has had.
        self._factors: list[float] = []
        self._seen = dict.fromkeys(self.projects, 0)

    def _decay(self, now: float) -> None:
        elapsed = now - self.at
        if elapsed > 0:
            self._factors.append(fairshare.decayed(1.0, 0.0, elapsed, self.params.cambridge_half_life))
            self.at = now
            if len(self._factors) >= self.KEPT_FACTORS:
                self._settle()

    KEPT_FACTORS = 4096  # factors kept before every project is brought up to date

    def _project(self, name: str) -> cambridge.Project | None:
        """Project ``name`` as of the last event (None if it has none yet)."""
        project = self.projects.get(name)
        if project is None:
            return None
        seen = self._seen[name]
        if seen < len(self._factors):
            usage, value = project.usage, project.value
            for factor in self._factors[seen:]:
                usage, value = usage * factor, value * factor
            project = replace(project, usage=usage, value=value)
            self.projects[name] = project
            self._seen[name] = len(self._factors)
        return project

    def _store(self, name: str, project: cambridge.Project) -> None:
        """``project``, up to date, as ``name``'s."""
        self.projects[name] = project
        self._seen[name] = len(self._factors)

    def _settle(self) -> None:
        """Every project brought up to date, and the factors forgotten."""
        for name in self.projects:
            self._project(name)
        self._factors.clear()
        self._seen = dict.fromkeys(self.projects, 0)

    def demand(self, idle: Idle, running: Mapping[str, int], extra: int = 0) -> float:
        """``Np``: the slots running and wanted by queued jobs (and ``extra``) over the pool's, times
        ``Nfull``."""
        wanted = sum(running.values()) + sum(len(q) for q in idle.values()) + extra
        return self.full * wanted / self.capacity

    def admit(self, spec: JobSpec, now: float, idle: Idle, running: Mapping[str, int]) -> float:
        self._decay(now)
        project = self._project(spec.owner)
        if project is None:
            project = cambridge.Project(0.0)
        estimate = spec.runtime * spec.cpus / self.params.unit
        price = cambridge.unit_price(project, self.demand(idle, running, spec.cpus), estimate)
        limit = (self.params.price_limit if self.params.price_limit is not None
                 else cambridge.price_limit(estimate))
        if not cambridge.accepted(price, limit):
            if now - spec.submit + self.params.deferral <= MAX_TURNROUND:
                return now + self.params.deferral
            price = cambridge.MAX_PRICE  # at the longest turnround it goes anyway, at the top price
        project, charge = cambridge.submit(project, price, estimate)
        self._store(spec.owner, project)
        self.priced[spec.id] = (price, charge)
        return now

    def ended(self, spec: JobSpec, start: float, now: float, vacated: bool) -> None:
        self._decay(now)
        price, charge = self.priced[spec.id]
        used = (now - start) * spec.cpus / self.params.unit
        project = self._project(spec.owner)
        assert project is not None  # priced at admission, so stored then
        self._store(spec.owner, cambridge.terminate(project, used, price, 0.0 if vacated else charge))

    def report(self) -> dict[str, cambridge.Project]:
        """``S``, ``U``, ``W`` and ``V`` per project, as of the last event."""
        self._settle()
        return dict(self.projects)


def build(order: Order, shares: Mapping[str, float], policy_shares: Any, resource: str,
          owners: Iterable[str], params: ModelParams, half_life: float,
          initial: Mapping[str, float], capacity: int) -> Ordering:
    """The ordering ``order`` names, for jobs of ``owners``: ``shares`` (resolved, flat) feed the
    Fair-Share baseline, ``policy_shares`` (a flat table or an owner tree) the seeds' models."""
    if order is Order.GREEDY:
        return Ordering()
    if order is Order.FAIRSHARE:
        return FairShare(shares)
    tree = of_shares(policy_shares, resource, [*owners, *initial])
    makers: dict[Order, Callable[[], Ordering]] = {
        Order.SLURM: lambda: Slurm(tree, params),
        Order.SHARE: lambda: Share(tree, params, half_life, initial),
        Order.GRID: lambda: Grid(tree),
        Order.CAMBRIDGE: lambda: Cambridge(tree, params, capacity, initial),
    }
    return makers[order]()

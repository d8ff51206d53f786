"""Each owner's SuR_i and SuI_i (see :mod:`osep.measure.meter`) integrated in pieces, each piece
ending only when either changes: the owner's own events or a change of its feasible share.

The work per instant is then the owners it touched, not all of them. :class:`Pieces` holds the
state and integrates it against an ideal given as a function (an owner tree's) or against dominant
shares; the flat water-filling of the shares is kept in :mod:`osep.measure.waterfill`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from osep.core.resources import Measure
from osep.measure.books import OwnerBooks
from osep.measure.series import Bins

Ideal = Callable[[Mapping[str, float], float], Mapping[str, float]]
# An ideal told the demand, the owners whose demand moved since it was last asked, and the
# capacity: the owners whose share changed since then, with their new shares (0 for one that left).
IdealUpdate = Callable[[Mapping[str, float], Iterable[str], float], Mapping[str, float]]


class Pieces:
    """The owners' books, the pieces being integrated, and the ideal they are measured against.

    Events mark the owners they touch dirty (and, when demand moved, wanting); the instant is
    settled once, when time moves on, however many events it had. The arguments are
    :class:`osep.measure.meter.Meter`'s."""

    def __init__(self, shares: Mapping[str, float], capacity: float, *, curves: bool = False,
                 steps: bool = False, dominant: tuple[Mapping[str, Measure], Measure] | None = None,
                 ideal: Ideal | None = None) -> None:
        self.shares = dict(shares)
        self._ideal = ideal
        # An ideal that can be told only the owners whose demand moved, and answers with the
        # shares that changed (:meth:`osep.measure.trees._Filler.update`): asked so at each instant.
        self._update: IdealUpdate | None = getattr(ideal, "update", None)
        self.dominant = dominant
        self._flat = ideal is None and dominant is None
        self.capacity = capacity
        self.now: float | None = None
        self._owners: dict[str, OwnerBooks] = {}
        # Owners whose state changed at ``now``, settled when time moves on; whether demand did.
        self._dirty: dict[str, OwnerBooks] = {}
        self._wanting: dict[str, OwnerBooks] = {}  # those of them whose demand changed
        self._demand: dict[str, float] = {}  # the owners' demands, where not 0 (for an ``ideal``)
        # The flat water-filling (:mod:`osep.measure.waterfill`): L, the area under it since the
        # first event, sum(min(a_i, d_i)), the hungry owners' (d_i - a_i, owner) sorted with the
        # first ``_p`` summing to ``_sum``, and (r_i - a_i, owner) of the owners with r_i < d_i and
        # r_i >= a_i.
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
        self._bins: Bins | None = None
        self._curves = curves
        # With ``steps``: (time, running per owner, ideal per owner) at every change.
        self._steps: list[tuple[float, dict[str, float], dict[str, float]]] | None = (
            [] if steps else None)

    def _commit_ideal(self) -> None:
        """Settle what the events at ``now`` changed, for a meter that is not flat: the feasible
        shares when demand changed, then the pieces of the owners touched."""
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

    def _flush(self, stats: OwnerBooks) -> None:
        """Integrate the owner's current piece up to now."""
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

    def _settle(self, touched: Iterable[OwnerBooks]) -> None:
        """End each owner's piece and start one with its state now (the feasible shares fresh);
        for the meters that are not flat (the flat one does this in its own commit)."""
        for stats in touched:
            self._flush(stats)
            real, ideal = self._real_ideal(stats)
            stats.real, stats.ideal, stats.rate, stats.linear = (real, ideal, max(0.0, ideal - real),
                                                                 False)

    def _real_ideal(self, stats: OwnerBooks) -> tuple[float, float]:
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

    def _owner(self, name: str) -> OwnerBooks:
        stats = self._owners.get(name)
        if stats is None:
            stats = self._owners[name] = OwnerBooks(name, self.shares.get(name, 0.0))
            stats.since = self.now if self.now is not None else 0.0
            stats.area = self._area
        return stats


"""The flat water-filling of the owners' shares, kept up to date as demand changes, and the
owners' pieces settled against it: the meter's hot path for a flat share table.

The feasible shares are fes_i = min(d_i, a_i + L) for one water level L (0 when the shares take
the whole pool, infinite when every demand is met), so an owner's shortfall max(0, fes_i - r_i) is
a constant (0, or d_i - r_i) or a_i - r_i + L, as L is below r_i - a_i, above d_i - a_i, or between.
L is kept from the hungry owners' needs d_i - a_i, sorted, with a running sum; a change of L touches
only the owners with a bound between its old and new value, and those in the middle case accrue the
level's running area. The results are the straightforward recomputation's (tests/measure keeps it
as an oracle) up to rounding.
"""

from __future__ import annotations

import math
from bisect import bisect_left

from osep.measure.pieces import Pieces

RESYNC = 4096  # changes of demand between exact recountings of the water-filling's running sums

Key = tuple[float, str]


def rekey(keys: list[Key], at: int, old: Key | None, new: Key | None) -> tuple[int, int]:
    """Move an owner's key in the sorted list ``keys`` from ``old`` to ``new`` (None: not there).
    ``at`` is where ``old`` was put, which holds while no other key went in or out before it (the
    key found there tells). Returns where ``old`` was and where ``new`` is (-1: not there). A key
    whose change keeps its place among its neighbours (a job more or less, mostly) is replaced
    where it is, without moving the rest of the list."""
    was = -1
    if old is not None:
        if not 0 <= at < len(keys) or keys[at] is not old:
            at = bisect_left(keys, old)
        was = at
        if new is not None and (at == 0 or keys[at - 1] < new) and (
                at + 1 == len(keys) or new < keys[at + 1]):
            keys[at] = new
            return was, at
        del keys[at]
    if new is None:
        return was, -1
    at = bisect_left(keys, new)
    keys.insert(at, new)
    return was, at


class WaterFilling(Pieces):
    """Settles each instant against the flat water-filling (:meth:`_commit_flat`)."""

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
        """Settle what the events at ``now`` changed: the owners whose demand moved into the
        books, the level for the demand now, then the pieces of the owners touched. It runs at every
        instant that had events."""
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
                base = share if share <= demand else demand
                if base != stats.base:
                    base_sum += base - stats.base
                    stats.base = base
                need = demand - share if demand > share else None
                old_need = stats.need
                if need == old_need:
                    continue
                stats.need = need
                key = (need, stats.name) if need is not None else None
                was, at = rekey(needs, stats.need_at, stats.need_key, key)
                stats.need_key, stats.need_at = key, at
                # The first p needs sum to ``total``: the old one out of them, the new one in.
                if old_need is not None and was < p:
                    p -= 1
                    total -= old_need
                if need is not None and at < p:
                    p += 1
                    total += need
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
        # SuI_i = min(d_i, a_i + L), the shortfall a constant or a_i - r_i + L.
        level, marks, flush = self._level, self._marks, self._flush
        for stats in dirty.values():
            flush(stats)
            share, real, demand = stats.share, stats.running, stats.demand
            mark = real - share if real < demand and real >= share else None
            old_mark = stats.mark
            if mark != old_mark:
                stats.mark = mark
                key = (mark, stats.name) if mark is not None else None
                _, stats.mark_at = rekey(marks, stats.mark_at, stats.mark_key, key)
                stats.mark_key = key
            stats.real, stats.linear = real, False
            if level >= demand - share:
                gap = demand - real
                stats.ideal, stats.rate = demand, gap if gap > 0.0 else 0.0
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


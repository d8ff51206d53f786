"""Owner shares and feasible shares.

An owner share ``a_i`` is the capacity owner ``i`` contributed; owners the policy does not name have
0. The feasible share ``fes_i = min(a_i + excess_i, d_i)`` splits the excess by max-min water-filling
with equal weights, non-owners included, so idle capacity is never withheld from them (the paper
leaves the rule open). It guarantees ``sum(fes_i) = min(capacity, sum(d_i))``. When less of a resource
is present than its shares add up to, every share of it is scaled by ``capacity / sum(a_i)``, so
entitlements stay proportional to contributions. Water-filling works in any one resource; with the
dominant unit only owner shares are targets. docs/policy.md gives the rule step by step.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import add, gt, itemgetter, sub

from osep.core.resources import RESOURCES


@dataclass(frozen=True, slots=True)
class ShareTable:
    """Owner shares as configured: per owner a number of slots, or a table of amounts per resource
    (``{"cpus": 400, "gpus": 8}``); all absolute or all percentages of the pool (never mixed)."""

    shares: Mapping[str, float | Mapping[str, float]]
    percent: bool = False

    def amounts(self, resource: str) -> dict[str, float]:
        """Every owner's configured amount of ``resource`` (0 where it names none)."""
        out = {}
        for owner, share in self.shares.items():
            if isinstance(share, Mapping):
                out[owner] = float(share.get(resource, 0.0))
            else:
                out[owner] = float(share) if resource == "slots" else 0.0
        return out

    def resources(self) -> set[str]:
        """The resources shares are given in."""
        return {r for s in self.shares.values() for r in (s if isinstance(s, Mapping) else ("slots",))}

    def resolve(self, capacity: float, resource: str = "slots") -> dict[str, float]:
        """Shares of ``resource`` for a pool with ``capacity`` of it, scaled down if they exceed it."""
        raw = self.amounts(resource)
        if self.percent:
            raw = {o: capacity * s / 100.0 for o, s in raw.items()}
        total = sum(raw.values())
        if total > capacity and total > 0:
            scale = capacity / total
            return {o: s * scale for o, s in raw.items()}
        return raw

    def resolve_all(self, capacity: Sequence[float]) -> dict[str, dict[str, float]]:
        """Every owner's resolved shares per resource, for a pool with ``capacity`` (one amount per
        resource, in the order of :data:`osep.core.resources.RESOURCES`)."""
        out: dict[str, dict[str, float]] = {o: {} for o in self.shares}
        for resource in sorted(self.resources()):
            for owner, amount in self.resolve(capacity[RESOURCES.index(resource)], resource).items():
                share = self.shares[owner]
                if (resource in share) if isinstance(share, Mapping) else resource == "slots":
                    out[owner][resource] = amount
        return out

    def largest(self, capacity: int) -> float:
        """The largest resolved share in slots: the paper's recommended p."""
        resolved = self.resolve(capacity)
        return max(resolved.values(), default=0.0)


def feasible_shares(
    shares: Mapping[str, float], demand: Mapping[str, float], capacity: float
) -> dict[str, float]:
    """Max-min water-filling of ``capacity`` over owners, starting from their shares.

    ``shares`` must already be resolved (see :meth:`ShareTable.resolve`), so that they add up to at most
    ``capacity``. Returns a value for every owner present in either mapping.
    """
    # Owners in the order the mappings give them, and what is given summed exactly: a sum in the
    # order of a set would move the last bit of every figure with PYTHONHASHSEED.
    # A decision water-fills 10,000 owners: the passes over them run at C speed (map, zip,
    # compress), and only the owners that saturate below the level are taken out one by one.
    owners = list(dict.fromkeys(chain(shares, demand)))
    wanted = list(map(demand.get, owners, repeat(0)))
    given = list(map(min, map(shares.get, owners, repeat(0.0)), map(float, wanted)))
    fes = dict(zip(owners, given, strict=True))
    left = capacity - math.fsum(given)
    if left <= 0:
        return fes
    # Unmet demand, smallest first: those owners saturate before the equal level is reached.
    hungry = list(compress(zip(map(sub, wanted, given), owners, strict=True),
                           map(gt, wanted, given)))
    heapq.heapify(hungry)
    remaining = len(hungry)
    while hungry:
        level = left / remaining
        need, owner = hungry[0]
        if need > level:
            # The rest get the level on top of what they have.
            rest = list(map(itemgetter(1), hungry))
            fes.update(zip(rest, map(add, map(fes.__getitem__, rest), repeat(level)), strict=True))
            break
        heapq.heappop(hungry)
        fes[owner] += need
        left -= need
        remaining -= 1
    return fes

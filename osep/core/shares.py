"""Owner shares and feasible shares.

Owner share a_i: the capacity owner i contributed. Owners the policy file does not name have a_i = 0
(non-owners): they run only on capacity nobody entitled is asking for.

Feasible share fes_i = min(a_i + excess_i, d_i): what owner i should hold right now given every owner's
demand d_i. The rule used for the excess (the paper leaves it open) is max-min water-filling with equal
weights:

1. every owner first gets min(a_i, d_i);
2. the capacity left over (shares of owners who want less than their share, plus any capacity no owner
   contributed) is split equally among owners whose demand is still unmet; an owner whose remaining
   demand is below its equal portion takes only what it needs and the rest is split again.

Non-owners take part in step 2 like anyone else, so idle capacity is never withheld from them. The
result satisfies sum(fes_i) = min(capacity, sum(d_i)): exactly the capacity demand can use.

When fewer slots are present than the shares add up to (machines down or drained), every share is
scaled by capacity / sum(a_i), so entitlements stay proportional to contributions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ShareTable:
    """Owner shares as configured: absolute slot counts, or percentages of the pool (never mixed)."""

    shares: Mapping[str, float]
    percent: bool = False

    def resolve(self, capacity: int) -> dict[str, float]:
        """Shares in slots for a pool of ``capacity`` slots, scaled down if they exceed it."""
        if self.percent:
            raw = {o: capacity * s / 100.0 for o, s in self.shares.items()}
        else:
            raw = {o: float(s) for o, s in self.shares.items()}
        total = sum(raw.values())
        if total > capacity and total > 0:
            scale = capacity / total
            return {o: s * scale for o, s in raw.items()}
        return raw

    def largest(self, capacity: int) -> float:
        """The largest resolved share: the paper's recommended p."""
        resolved = self.resolve(capacity)
        return max(resolved.values(), default=0.0)


def feasible_shares(
    shares: Mapping[str, float], demand: Mapping[str, int], capacity: float
) -> dict[str, float]:
    """Max-min water-filling of ``capacity`` over owners, starting from their shares.

    ``shares`` must already be resolved (see :meth:`ShareTable.resolve`), so that they add up to at most
    ``capacity``. Returns a value for every owner present in either mapping.
    """
    owners = set(shares) | set(demand)
    fes = {o: min(shares.get(o, 0.0), float(demand.get(o, 0))) for o in owners}
    left = capacity - sum(fes.values())
    if left <= 0:
        return fes
    # Unmet demand, smallest first: those owners saturate before the equal level is reached.
    hungry = sorted(
        (demand.get(o, 0) - fes[o], o) for o in owners if demand.get(o, 0) > fes[o]
    )
    remaining = len(hungry)
    for index, (need, owner) in enumerate(hungry):
        level = left / remaining
        if need <= level:
            fes[owner] += need
            left -= need
            remaining -= 1
            continue
        for _, rest in hungry[index:]:
            fes[rest] += level
        break
    return fes

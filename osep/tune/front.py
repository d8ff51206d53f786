"""The candidates worth looking at: the front of policy violation (PV) against cost (LC + PC), and
the one a rule recommends.

Both are pure functions of the measured figures. A candidate whose run left jobs unfinished measured
less than the whole workload, so it is neither on the front nor recommended.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

from osep.tune.sweep import Figures


class Rule(enum.Enum):
    """How the recommendation is chosen among the candidates whose PV is within ``within`` of the
    lowest (:class:`Pick`)."""

    CHEAPEST = "cheapest"  # the lowest cost among them
    FAIREST = "fairest"  # the highest worst-owner satisfaction among them
    LOWEST_PV = "lowest-pv"  # the lowest PV (``within`` plays no part)


@dataclass(frozen=True, slots=True)
class Pick:
    rule: Rule = Rule.CHEAPEST
    within: float = 0.10  # a fraction of the lowest PV

    def describe(self) -> str:
        """The rule in words, as the output states it."""
        if self.rule is Rule.LOWEST_PV:
            return "the lowest PV, then the lowest cost"
        among = f"among the candidates within {self.within:.0%} of the lowest PV"
        if self.rule is Rule.CHEAPEST:
            return f"the lowest cost (LC + PC) {among}"
        return f"the highest worst-owner A_US {among}, then the lowest PV"


def comparable(rows: Sequence[Figures]) -> list[int]:
    """The indices of the runs that measured the whole workload."""
    return [k for k, f in enumerate(rows) if f.unfinished == 0]


def front(rows: Sequence[Figures]) -> set[int]:
    """The indices of the candidates no other beats on both PV and cost (at least as low on both,
    lower on one): the Pareto front. Equal candidates are on it together."""
    order = sorted(comparable(rows), key=lambda k: (rows[k].pv, rows[k].cost))
    out: set[int] = set()
    best_cost = math.inf  # the lowest cost of the candidates of lower PV
    k = 0
    while k < len(order):
        pv = rows[order[k]].pv
        group = [i for i in order[k:] if rows[i].pv == pv]
        cheapest = rows[group[0]].cost
        if cheapest < best_cost:
            out.update(i for i in group if rows[i].cost == cheapest)
            best_cost = cheapest
        k += len(group)
    return out


def recommend(rows: Sequence[Figures], pick: Pick, changes: Sequence[int] | None = None) -> int | None:
    """The index the rule chooses (None: no run measured the whole workload). On a tie, the one
    with the fewest ``changes`` (settings that differ from the policy file's), then the first."""
    candidates = comparable(rows)
    if not candidates:
        return None
    lowest = min(rows[k].pv for k in candidates)
    if pick.rule is not Rule.LOWEST_PV:
        bound = lowest * (1 + pick.within) + 1e-9 * max(1.0, lowest)
        candidates = [k for k in candidates if rows[k].pv <= bound]

    def key(k: int) -> tuple[float, ...]:
        f = rows[k]
        if pick.rule is Rule.CHEAPEST:
            return (f.cost, f.pv, f.vacates)
        if pick.rule is Rule.FAIREST:
            return (-(f.worst_us if f.worst_us is not None else -math.inf), f.pv, f.cost)
        return (f.pv, f.cost, f.vacates)

    best = min(key(k) for k in candidates)
    tied = [k for k in candidates if key(k) == best]
    return min(tied, key=lambda k: (changes[k] if changes is not None else 0, k))

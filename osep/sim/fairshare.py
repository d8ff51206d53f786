"""The Fair-Share baseline (Kay and Lauder's Share; Slurm's classic algorithm, flat): usage decays
with a half-life, and an owner's priority factor is F = 2^(-U/S), with U its share of the pool's
decayed usage and S its normalized share. F = 0.5 means an owner used exactly its share; above 0.5 it
is owed, below it has had more than its share. Matching favours the highest F; nothing is preempted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def decayed(usage: float, rate: float, elapsed: float, half_life: float) -> float:
    """Decayed usage after ``elapsed`` seconds in which the owner held ``rate`` slots.

    Exact for a constant rate: old usage decays by 2^(-elapsed/half_life) and the new usage is the
    integral of ``rate`` under the same decay, rate * h / ln 2 * (1 - 2^(-elapsed/h)).
    """
    if elapsed <= 0:
        return usage
    factor = 2.0 ** (-elapsed / half_life)
    return float(usage * factor + rate * half_life / math.log(2) * (1.0 - factor))


def factor(usage: float, share: float, dampening: float = 1.0) -> float:
    """Priority factor 2^(-U/S/d) from normalized usage U and normalized share S (both 0..1).

    An owner with no share (a non-owner) gets 0: it comes after every owner.
    """
    if share <= 0:
        return 0.0
    return float(2.0 ** (-usage / share / dampening))


def factors(usage: Mapping[str, float], shares: Mapping[str, float]) -> dict[str, float]:
    """Priority factor per owner from raw decayed usage and raw shares."""
    owners = [*usage, *(o for o in shares if o not in usage)]
    total_usage = sum(usage.values())
    total_share = sum(shares.values())
    out = {}
    for owner in owners:
        u = usage.get(owner, 0.0) / total_usage if total_usage > 0 else 0.0
        s = shares.get(owner, 0.0) / total_share if total_share > 0 else 0.0
        out[owner] = factor(u, s)
    return out


class Accountant:
    """Decayed usage per owner, kept exact by accruing each owner's whenever what it occupies changes
    (:meth:`accrue_owner`), and everyone's before it is read (:meth:`accrue`)."""

    def __init__(self, half_life: float, initial: Mapping[str, float]) -> None:
        self.half_life = half_life
        self.usage: dict[str, float] = dict(initial)
        self.charged: dict[str, float] = {}  # slot-seconds held since the start, undecayed
        self._at: dict[str, float] = {}  # when each owner's usage was last brought up (else 0)

    def accrue_owner(self, now: float, owner: str, held: int) -> None:
        """Bring ``owner``'s usage up to ``now``, it having held ``held`` slots since it was last
        brought up."""
        elapsed = now - self._at.get(owner, 0.0)
        if elapsed > 0:  # decayed(), inline: this runs at every start and end of a run
            half_life = self.half_life
            factor = 2.0 ** (-elapsed / half_life)
            self.usage[owner] = float(self.usage.get(owner, 0.0) * factor
                                      + held * half_life / math.log(2) * (1.0 - factor))
            if held:
                self.charged[owner] = self.charged.get(owner, 0.0) + held * elapsed
            self._at[owner] = now

    def accrue(self, now: float, occupied: Mapping[str, int]) -> None:
        """Bring every owner's usage up to ``now``, ``occupied`` having held since each was last
        brought up: :meth:`accrue_owner` of each, with :func:`decayed`'s arithmetic written out
        (the negotiator calls this every cycle, for every owner)."""
        usage, charged, at, half_life = self.usage, self.charged, self._at, self.half_life
        ln2 = math.log(2)
        # Most owners were last brought up at the same instant (the last cycle): the decay over the
        # same elapsed time is the same factor, worked out once.
        last, factor = math.nan, 1.0
        for owner in [*usage, *(o for o in occupied if o not in usage)]:
            elapsed = now - at.get(owner, 0.0)
            if elapsed > 0:
                if elapsed != last:
                    last, factor = elapsed, 2.0 ** (-elapsed / half_life)
                held = occupied.get(owner, 0)
                usage[owner] = float(usage.get(owner, 0.0) * factor
                                     + held * half_life / ln2 * (1.0 - factor))
                if held:
                    charged[owner] = charged.get(owner, 0.0) + held * elapsed
                at[owner] = now

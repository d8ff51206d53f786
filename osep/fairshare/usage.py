"""The Fair-Share baseline (Kay and Lauder's Share; Slurm's classic algorithm, flat): usage decays
with a half-life, and an owner's priority factor is F = 2^(-U/S), with U its share of the pool's
decayed usage and S its normalized share. F = 0.5 means an owner used exactly its share; above 0.5 it
is owed, below it has had more than its share. Matching favours the highest F; nothing is preempted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping


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
    """Decayed usage per owner, told only when what an owner occupies changes (:meth:`occupy`), and
    read at any instant (:meth:`usage_at`, :meth:`fractions`, :meth:`charged_at`).

    All usage decays by the same factor, so it is kept scaled up by the pool's growth
    ``g(t) = 2^((t - base) / h)``: an owner holding ``n`` slots since it was last told of has
    ``U(t) = A / g(t) + n * c`` (``c = h / ln 2``), the exact solution of ``dU/dt = n - U ln 2 / h``.
    A change of ``n`` moves ``A`` so that ``U`` does not jump. So a change costs one owner's update, a
    read costs no accrual, and reading changes nothing: the same changes give the same values however
    often they are read. ``base`` moves up to a change's time once ``g`` passes 2^64 (it would overflow
    after 1,024 half-lives). Values are exact but for rounding relative to what an owner held. The
    undecayed slot-seconds each owner held (``charged``) are kept the same way, unscaled: ``K + n * t``.
    """

    REBASE = 64.0  # half-lives after ``base`` at which a change moves ``base`` up

    def __init__(self, half_life: float, initial: Mapping[str, float]) -> None:
        self.half_life = half_life
        self._c = half_life / math.log(2)
        self._base = 0.0
        # owner -> [A, K, n]: usage scaled by g, charged less n * t, slots held
        self._owners: dict[str, list[float]] = {o: [float(u), 0.0, 0.0] for o, u in initial.items()}
        self._scaled_total = sum(r[0] for r in self._owners.values())  # of every A
        self._held = 0.0  # of every n
        self._at = self._base  # the last change's instant, and ``c * g`` there
        self._unit = self._c

    def occupy(self, now: float, owner: str, slots: int) -> None:
        """From ``now`` on, ``owner`` holds ``slots`` more slots (fewer if negative)."""
        if now == self._at:
            unit = self._unit
        else:  # the last change is now: ``c * g(now)`` worked out (here: every other call moves it)
            power = (now - self._base) / self.half_life
            if power > self.REBASE:
                self._rebase(now, power)
                power = 0.0
            self._at = now
            unit = self._unit = self._c * 2.0 ** power
        record = self._owners.get(owner)
        if record is None:
            record = self._owners[owner] = [0.0, 0.0, 0.0]
        scaled = slots * unit
        record[0] -= scaled
        record[1] -= slots * now
        record[2] += slots
        self._scaled_total -= scaled
        self._held += slots

    def _rebase(self, now: float, power: float) -> None:
        """``g(now)`` (``2^power``) is large: ``base`` moves up to ``now``, every ``A`` divided by it."""
        shrink = 2.0 ** -power  # 1 / g(now), 0 if g would overflow
        for record in self._owners.values():
            record[0] *= shrink
        self._scaled_total = sum(r[0] for r in self._owners.values())
        self._base = now

    def _shrink(self, now: float) -> float:
        """``1 / g(now)`` (0 once ``g`` would overflow)."""
        return float(2.0 ** (-(now - self._base) / self.half_life))

    def usage_at(self, now: float) -> dict[str, float]:
        """Every owner's decayed usage at ``now`` (owners with initial usage, and every owner that
        has held a slot)."""
        shrink, c = self._shrink(now), self._c
        return {o: max(0.0, a * shrink + n * c) for o, (a, _, n) in self._owners.items()}

    def fractions(self, now: float, owners: Iterable[str]) -> dict[str, float]:
        """Each of ``owners``' share of the pool's decayed usage at ``now`` (0 for all if there is
        none), as ``usage_at(now)[o] / sum(usage_at(now).values())`` gives it but for rounding."""
        shrink, c, records = self._shrink(now), self._c, self._owners
        total = self._scaled_total * shrink + self._held * c
        if not total > 0:
            return dict.fromkeys(owners, 0.0)
        out = {}
        for owner in owners:
            record = records.get(owner)
            if record is None:
                out[owner] = 0.0
            else:
                used = record[0] * shrink + record[2] * c
                out[owner] = used / total if used > 0 else 0.0
        return out

    def charged_at(self, now: float) -> dict[str, float]:
        """The slot-seconds each owner that has held a slot held from the start to ``now``,
        undecayed."""
        return {o: k + n * now for o, (_, k, n) in self._owners.items() if k or n}

"""What the meter keeps for plotting: a bounded series of the curves, and the exact step curves.

:class:`Bins` accrues each owner's SuR_i and SuI_i (see :mod:`osep.measure.meter`) as areas over
equal bins, and the evictions in each, doubling the bins' width whenever they would exceed
:data:`MAX_BINS`: a run of any length stays small enough to plot. :class:`Series` is what it gives
(time-weighted means per bin); :class:`Curves`, the exact step curves a meter keeps for small runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MAX_BINS = 2048


@dataclass(frozen=True, slots=True)
class Series:
    """Time-weighted means of SuR_i and SuI_i over equal bins, and the evictions in each bin.

    Bin k covers [start + k * width, start + (k + 1) * width). The meter doubles the width whenever
    the bins would exceed their bound, so a series of any length stays small enough to plot.
    """

    start: float
    width: float
    real: Mapping[str, tuple[float, ...]]
    ideal: Mapping[str, tuple[float, ...]]
    evictions: tuple[int, ...]

    @property
    def times(self) -> tuple[float, ...]:
        """The left edge of every bin."""
        return tuple(self.start + k * self.width for k in range(len(self.evictions)))


@dataclass(frozen=True, slots=True)
class Curves:
    """Exact step curves (each value holds from times[k] until times[k+1])."""

    times: tuple[float, ...]
    real: Mapping[str, tuple[float, ...]]
    ideal: Mapping[str, tuple[float, ...]]


@dataclass(slots=True)
class Bins:
    """Accumulated areas per bin; ``width`` doubles (pairs merged) when the bins run out."""

    start: float
    width: float = 1.0
    real: dict[str, list[float]] = field(default_factory=dict)
    ideal: dict[str, list[float]] = field(default_factory=dict)
    evictions: list[int] = field(default_factory=list)

    def _grow(self, index: int) -> int:
        while index >= MAX_BINS:
            self.width *= 2
            for series in (*self.real.values(), *self.ideal.values()):
                series[:] = [sum(series[k:k + 2]) for k in range(0, len(series), 2)]
            self.evictions[:] = [
                sum(self.evictions[k:k + 2]) for k in range(0, len(self.evictions), 2)
            ]
            index //= 2
        need = index + 1 - len(self.evictions)
        if need > 0:
            for series in (*self.real.values(), *self.ideal.values()):
                series.extend([0.0] * need)
            self.evictions.extend([0] * need)
        return index

    def _series(self, table: dict[str, list[float]], owner: str) -> list[float]:
        series = table.get(owner)
        if series is None:
            series = table[owner] = [0.0] * len(self.evictions)
        return series

    def add(self, owner: str, t0: float, t1: float, real: float, ideal: float) -> None:
        """Spread value * time over the bins that [t0, t1) covers."""
        if real == 0 and ideal == 0:
            return
        self._grow(int((t1 - self.start) / self.width) if t1 > self.start else 0)
        r, i = self._series(self.real, owner), self._series(self.ideal, owner)
        t = t0
        while t < t1:
            k = int((t - self.start) / self.width)
            edge = min(t1, self.start + (k + 1) * self.width)
            if edge <= t:  # rounding at a bin edge
                edge = min(t1, t + self.width * 1e-9 + 1e-12)
            r[k] += real * (edge - t)
            i[k] += ideal * (edge - t)
            t = edge

    def evicted(self, t: float) -> None:
        k = self._grow(int((t - self.start) / self.width))
        self.evictions[k] += 1

    def series(self, owners: list[str]) -> Series:
        n = len(self.evictions)
        empty = [0.0] * n

        def means(table: dict[str, list[float]]) -> dict[str, tuple[float, ...]]:
            return {o: tuple(v / self.width for v in table.get(o, empty)) for o in owners}

        return Series(self.start, self.width, means(self.real), means(self.ideal),
                      tuple(self.evictions))

"""The paper's metrics for a run given as job records (the simulator's output).

The definitions live in :mod:`osep.meter`, which integrates them from events in time order; this module
turns a list of :class:`osep.history.JobRecord` into those events, so simulated runs and replayed event
logs are measured by the same code. :func:`curves` gives the exact step curves for plotting small runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from osep.history import JobRecord
from osep.meter import Meter, Metrics, OwnerMetrics
from osep.shares import feasible_shares

__all__ = ["Curves", "Metrics", "OwnerMetrics", "compute", "curves", "feed"]


@dataclass(frozen=True, slots=True)
class Curves:
    """Step curves (value holds from times[k] until times[k+1])."""

    times: tuple[float, ...]
    real: Mapping[str, tuple[int, ...]]
    ideal: Mapping[str, tuple[float, ...]]


def curves(records: Sequence[JobRecord], capacity: int, shares: Mapping[str, float]) -> Curves:
    """SuR_i and SuI_i at every instant where any of them changes."""
    deltas: dict[float, list[tuple[str, int, int]]] = defaultdict(list)
    owners = set(shares)
    for rec in records:
        owners.add(rec.owner)
        deltas[rec.submit].append((rec.owner, 0, 1))
        if rec.finish is not None:
            deltas[rec.finish].append((rec.owner, 0, -1))
        for run in rec.runs:
            deltas[run.start].append((rec.owner, 1, 0))
            deltas[run.end].append((rec.owner, -1, 0))
    names = sorted(owners)
    occupied = dict.fromkeys(names, 0)
    demand = dict.fromkeys(names, 0)
    times: list[float] = []
    real: dict[str, list[int]] = {o: [] for o in names}
    ideal: dict[str, list[float]] = {o: [] for o in names}
    for time in sorted(deltas):
        for owner, d_occ, d_dem in deltas[time]:
            occupied[owner] += d_occ
            demand[owner] += d_dem
        fes = feasible_shares(shares, demand, capacity)
        times.append(time)
        for o in names:
            real[o].append(occupied[o])
            ideal[o].append(fes.get(o, 0.0))
    return Curves(
        times=tuple(times),
        real={o: tuple(v) for o, v in real.items()},
        ideal={o: tuple(v) for o, v in ideal.items()},
    )


def violation_by_owner(c: Curves) -> dict[str, float]:
    out = {}
    for owner in c.real:
        area = 0.0
        real, ideal = c.real[owner], c.ideal[owner]
        for k in range(len(c.times) - 1):
            short = ideal[k] - real[k]
            if short > 0:
                area += short * (c.times[k + 1] - c.times[k])
        out[owner] = area
    return out


def events(records: Sequence[JobRecord]) -> list[tuple[float, int, int, str, Any]]:
    """The records as meter events, sorted by time. At one instant: submits, then runs ending by
    eviction (so that a slot freed and taken again in the same second counts no idle gap), then
    other ends, then starts; a job's own events keep their order (a run of zero length ends after
    it starts)."""
    out: list[tuple[float, int, int, str, Any]] = []
    for rec in records:
        seq = 0

        def add(time: float, rank: int, kind: str, data: Any) -> None:
            nonlocal seq
            out.append((time, rank, seq, kind, data))
            seq += 1

        add(rec.submit, 0, "submit", rec)
        finished = False
        for run in rec.runs:
            add(run.start, 3, "start", (rec, run))
            if run.vacated and run.vacate_sent is not None:
                add(run.vacate_sent, 3, "signal", (rec, run))
            empty = run.end <= run.start
            if not run.vacated and rec.finish is not None and run.end == rec.finish:
                add(run.end, 3 if empty else 2, "finish", (rec, run))
                finished = True
            else:
                add(run.end, 3 if empty else (1 if run.vacated else 2), "end", (rec, run))
        if rec.finish is not None and not finished:
            add(rec.finish, 2, "finish", (rec, None))
    out.sort(key=lambda e: (e[0], e[1], e[2]))
    return out


def feed(meter: Meter, records: Sequence[JobRecord]) -> Meter:
    for time, _, _, kind, data in events(records):
        if kind == "submit":
            meter.submit(time, data.id, data.owner)
            continue
        rec, run = data
        if kind == "start":
            meter.start(time, rec.id, run.slot)
        elif kind == "signal":
            meter.signal(time, rec.id)
        elif kind == "end":
            meter.end(time, rec.id, evicted=run.vacated, saved=run.useful)
        else:
            meter.finish(time, rec.id, runtime=rec.runtime)
    return meter


def compute(
    records: Sequence[JobRecord], capacity: int, shares: Mapping[str, float]
) -> Metrics:
    """All metrics for one run, its clock starting at 0. ``shares`` are resolved owner shares in
    slots."""
    return feed(Meter(shares, capacity, origin=0.0), records).result()

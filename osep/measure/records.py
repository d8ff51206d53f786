"""What happened to each job, as run records: what a simulation keeps when asked (plots, tests),
measured by the meter.

A simulation feeds its meters as it runs (:class:`osep.sim.watch.Metering`, the meter's own events
in time order) and keeps no record of finished jobs; when its records are asked for,
:class:`JobRecord` and :class:`Run` hold them. :func:`feed` turns records into the meter's events
(:mod:`osep.measure.meter`), so records, simulated runs and replayed event logs are measured by the same
code, and :func:`curves` asks the same meter for the exact step curves of a small run, for plotting.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from osep.core.resources import ZERO, Measure, Vec
from osep.measure.meter import Meter
from osep.measure.metrics import Metrics
from osep.measure.pieces import Ideal
from osep.measure.series import Curves

# Each owner's dominant-share measure, and the one for owners without a share (see the meter).
Dominant = tuple[Mapping[str, Measure], Measure]

__all__ = ["Curves", "JobRecord", "Run", "compute", "curves", "feed"]


@dataclass(frozen=True, slots=True)
class Run:
    """One stay of a job on a slot. ``useful`` is the work it kept (all of it for a run that
    completed; what a checkpoint saved for one that was vacated)."""

    slot: str
    start: float
    end: float
    vacated: bool
    useful: float
    vacate_sent: float | None = None


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: Hashable
    owner: str
    submit: float
    runtime: float
    finish: float | None
    runs: tuple[Run, ...]
    weight: float = 1.0  # what it holds while running, in the unit measured (see the meter)
    amount: Vec = ZERO  # what it holds per resource while running (for dominant measures)


# The order of a record's events at one instant (see :func:`_events`).
_SUBMIT, _EVICTED, _ENDED, _STARTED = 0, 1, 2, 3


def _events(records: Sequence[JobRecord]) -> list[tuple[float, int, int, str, JobRecord, Run | None]]:
    """The records as meter events, sorted by time. At one instant: submits, then runs ending by
    eviction (so that a slot freed and taken again in the same second counts no idle gap), then
    other ends, then starts; a job's own events keep their order (a run of zero length ends after
    it starts)."""
    out: list[tuple[float, int, int, str, JobRecord, Run | None]] = []
    for rec in records:
        seq = 0

        def add(time: float, rank: int, kind: str, run: Run | None, rec: JobRecord = rec) -> None:
            nonlocal seq
            out.append((time, rank, seq, kind, rec, run))
            seq += 1

        add(rec.submit, _SUBMIT, "submit", None)
        finished = False
        for run in rec.runs:
            add(run.start, _STARTED, "start", run)
            if run.vacated and run.vacate_sent is not None:
                add(run.vacate_sent, _STARTED, "signal", run)
            empty = run.end <= run.start
            if not run.vacated and rec.finish is not None and run.end == rec.finish:
                add(run.end, _STARTED if empty else _ENDED, "finish", run)
                finished = True
            else:
                add(run.end, _STARTED if empty else (_EVICTED if run.vacated else _ENDED), "end",
                    run)
        if rec.finish is not None and not finished:
            add(rec.finish, _ENDED, "finish", None)
    out.sort(key=lambda e: (e[0], e[1], e[2]))
    return out


def feed(meter: Meter, records: Sequence[JobRecord]) -> Meter:
    for time, _, _, kind, rec, run in _events(records):
        if kind == "submit":
            meter.submit(time, rec.id, rec.owner, rec.weight, rec.amount)
        elif kind == "finish":
            meter.finish(time, rec.id, runtime=rec.runtime)
        elif run is None:
            continue
        elif kind == "start":
            meter.start(time, rec.id, run.slot)
        elif kind == "signal":
            meter.signal(time, rec.id)
        else:
            meter.end(time, rec.id, evicted=run.vacated, saved=run.useful)
    return meter


def compute(records: Sequence[JobRecord], capacity: float, shares: Mapping[str, float],
            dominant: Dominant | None = None, ideal: Ideal | None = None) -> Metrics:
    """All metrics for one run, its clock starting at 0. ``shares`` (resolved) and ``capacity`` are
    in the unit of the records' weights; ``dominant``: measure PV in dominant shares instead;
    ``ideal``: an owner tree's feasible shares (see :class:`osep.measure.meter.Meter`)."""
    return feed(Meter(shares, capacity, origin=0.0, dominant=dominant, ideal=ideal),
                records).result()


def curves(records: Sequence[JobRecord], capacity: float, shares: Mapping[str, float],
           dominant: Dominant | None = None, ideal: Ideal | None = None) -> Curves:
    """SuR_i and SuI_i at every instant where any of them changes, as the meter integrates them."""
    meter = feed(Meter(shares, capacity, origin=0.0, steps=True, dominant=dominant, ideal=ideal),
                 records)
    return meter.steps()

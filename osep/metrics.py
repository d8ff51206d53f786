"""The paper's metrics, computed from what happened to each job.

Input is a list of job records (submit, run time, finish, and every stay on a slot). The simulator
produces them and replay of HTCondor event logs will too, so both are measured by this one module.
All areas are in slot-seconds.

Curves, per owner i:
- SuR_i(t): slots occupied by owner i's jobs at t, counting a job being vacated until it releases
  its slot;
- SuI_i(t): the ideal: fes_i(t), the feasible share (:func:`osep.shares.feasible_shares`) computed from
  owner i's demand at t (jobs submitted and not yet finished), i.e. every owner holds its feasible
  share the instant demand appears.

Metrics:
- PV (Policy Violation) = sum_i integral of max(0, SuI_i - SuR_i) dt: the area where an owner had
  less than it should, whatever the cause (enforcement latency, negotiation latency, no enforcement).
- LC (Loss of Capacity) = for every vacated run, the time its slot then stood idle until the next job
  started on it. This is capacity lost to the enforcement's own actions; gaps that end with no job
  starting on the slot again are not counted (no demand was waiting for that slot).
- PC (Policy Cost) = area of SuR summed over owners minus the area of the ideal, which runs every job
  exactly once: = sum over runs of (run length - work the run kept) = lost work (executed but not
  checkpointed before the vacate signal) + vacate time (signal to release).
- US_j = 100 * runtime_j / (finish_j - submit_j): ideal delivery (submit + run time) over real
  delivery, both measured from submission; A_US_i = mean of US_j over owner i's finished jobs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from osep.shares import feasible_shares
from osep.history import JobRecord


@dataclass(frozen=True, slots=True)
class OwnerMetrics:
    owner: str
    share: float
    jobs: int
    finished: int
    satisfaction: float | None  # A_US, percent; None when no job finished
    violation: float  # this owner's part of PV
    vacated: int  # runs of this owner's jobs that ended in a vacate
    lost_work: float


@dataclass(frozen=True, slots=True)
class Metrics:
    violation: float  # PV
    capacity_loss: float  # LC
    cost: float  # PC
    vacates: int
    lost_work: float
    vacate_time: float
    makespan: float
    owners: tuple[OwnerMetrics, ...]


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


def capacity_loss(records: Sequence[JobRecord]) -> float:
    by_slot: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    for rec in records:
        for run in rec.runs:
            by_slot[run.slot].append((run.start, run.end, run.vacated))
    loss = 0.0
    for runs in by_slot.values():
        runs.sort()
        for k, (_, end, vacated) in enumerate(runs):
            if vacated and k + 1 < len(runs):
                loss += max(0.0, runs[k + 1][0] - end)
    return loss


def compute(
    records: Sequence[JobRecord], capacity: int, shares: Mapping[str, float]
) -> Metrics:
    """All metrics for one run. ``shares`` are resolved owner shares in slots."""
    c = curves(records, capacity, shares)
    pv = violation_by_owner(c)
    lost = vacate_time = 0.0
    vacates = 0
    per_owner: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    us: dict[str, list[float]] = defaultdict(list)
    makespan = 0.0
    for rec in records:
        stats = per_owner[rec.owner]
        stats["jobs"] += 1
        for run in rec.runs:
            if run.vacated:
                sent = run.vacate_sent if run.vacate_sent is not None else run.end
                wasted = max(0.0, sent - run.start - run.useful)
                lost += wasted
                vacate_time += run.end - sent
                vacates += 1
                stats["vacated"] += 1
                stats["lost_work"] += wasted
        if rec.finish is not None:
            stats["finished"] += 1
            makespan = max(makespan, rec.finish)
            elapsed = rec.finish - rec.submit
            us[rec.owner].append(100.0 if elapsed <= 0 else 100.0 * rec.runtime / elapsed)
    owners = tuple(
        OwnerMetrics(
            owner=o,
            share=shares.get(o, 0.0),
            jobs=int(per_owner[o]["jobs"]),
            finished=int(per_owner[o]["finished"]),
            satisfaction=(sum(us[o]) / len(us[o])) if us[o] else None,
            violation=pv.get(o, 0.0),
            vacated=int(per_owner[o]["vacated"]),
            lost_work=per_owner[o]["lost_work"],
        )
        for o in sorted(set(per_owner) | set(shares))
    )
    return Metrics(
        violation=sum(pv.values()),
        capacity_loss=capacity_loss(records),
        cost=lost + vacate_time,
        vacates=vacates,
        lost_work=lost,
        vacate_time=vacate_time,
        makespan=makespan,
        owners=owners,
    )

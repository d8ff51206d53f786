"""Rebuilding a pool's history from job event logs, and measuring it.

Each owner's running-slot curve comes from the logs' submit, execute, evict and terminate events; the
meter (:mod:`osep.measure.meter`) integrates the paper's metrics against the ideal for the recorded demand as
the events stream past, so memory holds the jobs in flight and nothing else. Several logs (one per
user, or a schedd's event log) are merged by time.

What the logs cannot tell is filled in from elsewhere:
- the owner of a job: from ad information events (``EVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner``)
  or, for a user's own log, from the ``OWNER=FILE`` form of the argument;
- when a vacate was asked for (so that PC splits into lost work and vacate time), and which evictions
  were osep's: from the daemon's decision log, joined on ``cluster.proc``;
- the pool's size: from the decision log, or given.

A job counts as one slot whatever it requested.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from osep.core.model import JobId
from osep.core.tree import ShareTree
from osep.measure.meter import Meter, Metrics, Series
from osep.measure.trees import group_shares, top_group, tree_ideal
from osep.replay.damage import Damage
from osep.replay.events import EventKind, LogEvent

UNKNOWN_OWNER = "(unknown)"

# What an event can have wrong with it in its history (counted, see osep.replay.damage).
NO_OWNER = (f"a job with no owner (give the file as OWNER=FILE, or log Owner with "
            f"EVENT_LOG_JOB_AD_INFORMATION_ATTRS); counted as {UNKNOWN_OWNER}")
EARLIER = "earlier than an event already replayed; taken as happening then"
SUBMITTED_AGAIN = "submitted again while still in the queue, skipped"
NO_SUBMIT = "no submit event for this job; it counts from this event"
RUNS_AGAIN = "runs again with no event ending its last run; that run ends here"
FINISHED_AGAIN = "the same job id finished again; left out of the what-if runs"


@dataclass(frozen=True, slots=True)
class RecordedJob:
    """A finished job's arrival and run time, as the simulator needs them for a what-if run."""

    id: JobId
    owner: str
    submit: float  # seconds after the start of the log
    runtime: float


@dataclass(slots=True)
class Replay:
    metrics: Metrics
    series: Series | None
    events: int
    start: float | None
    end: float | None
    capacity: int
    unfinished: int  # jobs still queued or running when the logs end
    osep_evictions: dict[str, int] = field(default_factory=dict)  # owner -> evictions osep asked for
    workload: list[RecordedJob] = field(default_factory=list)
    warnings: int = 0  # odd events counted
    groups: Metrics | None = None  # an owner tree's top-level groups, measured as owners


# At one instant, across logs: runs end before runs start (a slot freed and taken in the same second).
_RANK = {EventKind.EVICT: 0, EventKind.TERMINATE: 0, EventKind.ABORT: 0, EventKind.HOLD: 0,
         EventKind.RUN_FAILED: 0}


def merge(streams: Iterable[Iterator[LogEvent]]) -> Iterator[LogEvent]:
    """One stream in time order. Each log keeps its own order; between logs, events of the same
    second that end a run come before the others."""
    return heapq.merge(*streams, key=lambda e: (e.time, _RANK.get(e.kind, 1)))


def replay(
    events: Iterable[LogEvent],
    shares: Mapping[str, float],
    capacity: int,
    *,
    warn: Callable[[str], None],
    owners: Mapping[str, str] | None = None,
    signals: Mapping[JobId, list[float]] | None = None,
    curves: bool = False,
    workload: bool = False,
    progress: Callable[[int, float], None] | None = None,
    every: int = 100_000,
    tree: ShareTree | None = None,
) -> Replay:
    """Measure the history the ``events`` (in time order) describe.

    ``owners``: file -> owner, for logs that do not name owners. ``signals``: the job (as the log names it) ->
    times osep sent a vacate for the job (from the decision log). ``workload``: also keep every
    finished job's arrival and run time (memory then grows with the jobs, for what-if runs only).
    ``progress`` is called every ``every`` events with the count and the log time reached.
    ``tree``: an owner tree; each job counts for the member its whole accounting name (or the owner
    its log or file gives) places it as, the ideal is the tree's feasible share, and the top-level
    groups are measured too.
    """
    owners = owners or {}
    pending = {_key(job): list(times) for job, times in (signals or {}).items()}
    meter = _Meters(shares, capacity, curves, tree)
    osep_evictions: dict[str, int] = {}
    recorded: list[RecordedJob] = []
    finished: set[Hashable] = set()  # the jobs in recorded
    damage = Damage(warn)  # every odd event counted, one line per file and kind at the end
    count = 0
    start: float | None = None

    def owner_for(event: LogEvent) -> str:
        name = event.account or event.owner or owners.get(event.source)
        if name:
            return tree.owner_of(name) if tree is not None else (event.owner or name)
        damage.add(event.source, event.place, NO_OWNER)
        return UNKNOWN_OWNER

    for event in events:
        count += 1
        if progress is not None and count % every == 0:
            progress(count, event.time)
        t = event.time
        if start is None:
            start = t
        if meter.now is not None and t < meter.now:
            damage.add(event.source, event.place, EARLIER)
            t = meter.now
        job, kind = _key(event.job), event.kind
        known = meter.owner_of(job) is not None
        if kind is EventKind.SUBMIT:
            if known:
                damage.add(event.source, event.place, SUBMITTED_AGAIN)
            else:
                meter.submit(t, job, owner_for(event))
            continue
        if not known:
            if kind is not EventKind.EXECUTE:
                continue  # the rest of a job whose submission is not in these logs
            damage.add(event.source, event.place, NO_SUBMIT)
            meter.submit(t, job, owner_for(event))
        if kind is EventKind.EXECUTE:
            if meter.running(job):
                damage.add(event.source, event.place, RUNS_AGAIN)
                meter.end(t, job, evicted=False)
            meter.start(t, job, event.slot or "?")
        elif kind is EventKind.EVICT:
            if not meter.running(job):
                continue
            asked = _signal_for(pending, job, meter, t)
            if asked is not None:
                meter.signal(asked, job)
                owner = meter.owner_of(job) or UNKNOWN_OWNER
                osep_evictions[owner] = osep_evictions.get(owner, 0) + 1
            meter.end(t, job, evicted=True, saved=math.inf if event.checkpointed else 0.0)
        elif kind is EventKind.TERMINATE:
            owner = meter.owner_of(job) or UNKNOWN_OWNER
            submitted = meter.submitted(job)
            runtime = meter.finish(t, job)
            if workload:
                if job in finished:  # the simulator needs one job per id
                    damage.add(event.source, event.place, FINISHED_AGAIN)
                else:
                    finished.add(job)
                    recorded.append(RecordedJob(event.job, owner, submitted, runtime))
        elif kind is EventKind.ABORT:
            meter.withdraw(t, job)
        elif kind is EventKind.HOLD:
            if meter.running(job):
                meter.end(t, job, evicted=False)
            meter.hold(t, job, True)
        elif kind is EventKind.RELEASE:
            meter.hold(t, job, False)
        elif kind is EventKind.RUN_FAILED and meter.running(job):
            meter.end(t, job, evicted=False)
    warnings = damage.total
    damage.report()
    if start is not None:
        recorded = [
            RecordedJob(r.id, r.owner, r.submit - start, r.runtime) for r in recorded
        ]
    return Replay(
        metrics=meter.result(),
        series=meter.main.series(),
        events=count,
        start=start,
        end=meter.now,
        capacity=capacity,
        unfinished=meter.in_flight,
        osep_evictions=osep_evictions,
        workload=recorded,
        warnings=warnings,
        groups=meter.groups.result() if meter.groups is not None else None,
    )


class _Meters:
    """The owners' meter and, with an owner tree, its top-level groups' meter, fed the same events
    (a job counts for its owner's group); questions go to the owners' meter."""

    def __init__(self, shares: Mapping[str, float], capacity: int, curves: bool,
                 tree: ShareTree | None) -> None:
        self.main = Meter(shares, capacity, curves=curves, ideal=tree_ideal(tree))
        self.groups: Meter | None = None
        self.tree = tree
        if tree is not None:
            self.groups = Meter(group_shares(tree, capacity), capacity)

    @property
    def now(self) -> float | None:
        return self.main.now

    @property
    def in_flight(self) -> int:
        return self.main.in_flight

    def owner_of(self, job: Hashable) -> str | None:
        return self.main.owner_of(job)

    def running(self, job: Hashable) -> bool:
        return self.main.running(job)

    def submitted(self, job: Hashable) -> float:
        return self.main.submitted(job)

    def started(self, job: Hashable) -> float | None:
        return self.main.started(job)

    def result(self) -> Metrics:
        return self.main.result()

    def submit(self, t: float, job: Hashable, owner: str) -> None:
        self.main.submit(t, job, owner)
        if self.groups is not None and self.tree is not None:
            self.groups.submit(t, job, top_group(self.tree, owner))

    def start(self, t: float, job: Hashable, slot: str) -> None:
        self.main.start(t, job, slot)
        if self.groups is not None:
            self.groups.start(t, job, slot)

    def signal(self, t: float, job: Hashable) -> None:
        self.main.signal(t, job)
        if self.groups is not None:
            self.groups.signal(t, job)

    def end(self, t: float, job: Hashable, *, evicted: bool, saved: float = 0.0) -> None:
        self.main.end(t, job, evicted=evicted, saved=saved)
        if self.groups is not None:
            self.groups.end(t, job, evicted=evicted, saved=saved)

    def finish(self, t: float, job: Hashable) -> float:
        if self.groups is not None:
            self.groups.finish(t, job)
        return self.main.finish(t, job)

    def withdraw(self, t: float, job: Hashable) -> None:
        self.main.withdraw(t, job)
        if self.groups is not None:
            self.groups.withdraw(t, job)

    def hold(self, t: float, job: Hashable, held: bool) -> None:
        self.main.hold(t, job, held)
        if self.groups is not None:
            self.groups.hold(t, job, held)


def _signal_for(pending: dict[Hashable, list[float]], job: Hashable, meter: _Meters, t: float
                ) -> float | None:
    """The vacate osep sent for this run, if any: the latest one after the run started."""
    times = pending.get(job)
    if not times:
        return None
    started = meter.started(job)
    chosen = None
    while times and times[0] <= t:
        sent = times.pop(0)
        if started is None or sent >= started - 1.0:  # log times are whole seconds
            chosen = sent
    if not times:
        del pending[job]
    return chosen


def _key(job: Hashable) -> Hashable:
    """The job as the meter knows it: a job id as a plain tuple, which hashes in C (a log of
    millions of events asks the meter about its job several times per event)."""
    if isinstance(job, JobId):
        return job.schedd, job.cluster, job.proc, job.pool
    return job

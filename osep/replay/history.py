"""Rebuilding a pool's history from job event logs in time order (:mod:`osep.replay.merging`) and
measuring it with the meter (:mod:`osep.measure.meter`) as the events stream past: memory holds the
jobs in flight and nothing else. A job counts as one slot whatever it requested.

What the logs cannot tell comes from elsewhere: a job's owner from ad information events
(``EVENT_LOG_JOB_AD_INFORMATION_ATTRS = Owner``) or a user's log given as ``OWNER=FILE``; when a
vacate was asked for (so that PC splits into lost work and vacate time) and which evictions were
osep's, from the daemon's decision log joined on ``cluster.proc``; the pool's size from that log, or
given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from osep.core.model import JobId
from osep.core.tree import ShareTree
from osep.measure.meter import Meter
from osep.measure.metrics import Metrics
from osep.measure.series import Series
from osep.measure.trees import group_shares, top_group, tree_ideal
from osep.replay.damage import Damage
from osep.replay.events import RANK, EventKind, LogEvent, Row, job_of, key_of

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

    ``owners``: file -> owner, for logs that name none. ``signals``: job -> times osep sent it a
    vacate (from the decision log). ``workload``: also keep every finished job's arrival and run
    time, for what-if runs (memory then grows with the jobs). ``progress(count, log time)`` is called
    every ``every`` events. ``tree``: an owner tree; a job counts for the member its accounting name
    (or else its owner) places it as, the ideal is the tree's feasible share, and the top-level
    groups are measured too.
    """
    sources: list[str] = []
    return replay_rows(_rows(events, sources), sources, shares, capacity, warn=warn, owners=owners,
                       signals=signals, curves=curves, workload=workload, progress=progress,
                       every=every, tree=tree)


def _rows(events: Iterable[LogEvent], sources: list[str]) -> Iterator[Row]:
    """The events as rows, each file's name put in ``sources`` before its first row."""
    index: dict[str, int] = {}
    for event in events:
        at = index.get(event.source)
        if at is None:
            at = index[event.source] = len(sources)
            sources.append(event.source)
        yield (event.time, RANK[event.kind], at, event.position, event.kind, _key(event.job),
               event.slot, event.checkpointed, event.owner, event.account)


def replay_rows(
    rows: Iterable[Row],
    sources: Sequence[str],
    shares: Mapping[str, float],
    capacity: int,
    *,
    warn: Callable[[str], None],
    owners: Mapping[str, str] | None = None,
    signals: Mapping[JobId, list[float]] | None = None,
    vacates: Iterable[tuple[float, JobId]] | None = None,
    curves: bool = False,
    workload: bool = False,
    progress: Callable[[int, float], None] | None = None,
    every: int = 100_000,
    tree: ShareTree | None = None,
) -> Replay:
    """:func:`replay` of ``rows`` (:data:`osep.replay.events.Row`, in time order, a row's file
    ``sources[i]`` for its index i): what ``osep replay`` runs, with no object made per event.
    ``vacates``: ``signals`` as a stream of (time sent, job) in time order
    (:func:`osep.replay.decisions.vacates_in_order`), read as the replay reaches each time, so
    that only the signals of jobs in flight are kept."""
    owners = owners or {}
    pending: dict[Hashable, list[float]] = {_key(job): list(times)
                                            for job, times in (signals or {}).items()}
    meter = _Meters(shares, capacity, curves, tree)
    main = meter.main
    jobs = main.jobs
    # The meter's own methods when there is no tree: one call less per event.
    submit, start_run, end_run, finish = ((meter.submit, meter.start, meter.end, meter.finish)
                                          if tree is not None else
                                          (main.submit, main.start, main.end, main.finish))
    osep_evictions: dict[str, int] = {}
    recorded: list[RecordedJob] = []
    finished: set[Hashable] = set()  # the jobs in recorded
    damage = Damage(warn)  # every odd event counted, one line per file and kind at the end
    count = 0
    start: float | None = None
    SUBMIT, EXECUTE, EVICT, TERMINATE = (EventKind.SUBMIT, EventKind.EXECUTE, EventKind.EVICT,
                                         EventKind.TERMINATE)
    stream = iter(vacates) if vacates is not None else None
    upcoming = next(stream, None) if stream is not None else None
    due = upcoming[0] if upcoming is not None else math.inf  # when the next vacate was sent

    def pull(t: float) -> float:
        """Take the vacates sent by ``t`` into ``pending``; when the next one was sent. One for a
        job not in flight that was sent over a second ago can date none of its runs (see
        :func:`_signal_for`) and is dropped."""
        nonlocal upcoming
        assert stream is not None
        while upcoming is not None and upcoming[0] <= t:
            sent, job_id = upcoming
            key = _key(job_id)
            if key in jobs or sent >= t - 1.0:
                pending.setdefault(key, []).append(sent)
            upcoming = next(stream, None)
        return upcoming[0] if upcoming is not None else math.inf

    def owner_for(index: int, position: int, job: Hashable, owner: str | None,
                  account: str | None) -> str:
        name = account or owner or owners.get(sources[index])
        if name:
            return tree.owner_of(name) if tree is not None else (owner or name)
        damage.add(sources[index], _place(position, job), NO_OWNER)
        return UNKNOWN_OWNER

    for when, _, index, position, kind, job, slot, checkpointed, owner, account in rows:
        t = when
        count += 1
        if progress is not None and count % every == 0:
            progress(count, t)
        if start is None:
            start = t
        now = main.now
        if now is not None and t < now:
            damage.add(sources[index], _place(position, job), EARLIER)
            t = now
        state = jobs.get(job)
        if kind is SUBMIT:
            if state is not None:
                damage.add(sources[index], _place(position, job), SUBMITTED_AGAIN)
            elif tree is None:  # what owner_for gives, without a call when the owner is known
                submit(t, job, owner or account or owners.get(sources[index])
                       or owner_for(index, position, job, owner, account))
            else:
                submit(t, job, owner_for(index, position, job, owner, account))
            continue
        if state is None:
            if kind is not EXECUTE:
                continue  # the rest of a job whose submission is not in these logs
            damage.add(sources[index], _place(position, job), NO_SUBMIT)
            submit(t, job, owner_for(index, position, job, owner, account))
            state = jobs[job]
        if kind is EXECUTE:
            if state.start is not None:
                damage.add(sources[index], _place(position, job), RUNS_AGAIN)
                end_run(t, job, evicted=False)
            start_run(t, job, slot or "?")
        elif kind is EVICT:
            if state.start is None:
                continue
            if due <= t:
                due = pull(t)
            if job in pending:
                asked = _signal_for(pending, job, meter, t)
                if asked is not None:
                    meter.signal(asked, job)
                    osep_evictions[state.owner] = osep_evictions.get(state.owner, 0) + 1
            end_run(t, job, evicted=True, saved=math.inf if checkpointed else 0.0)
        elif kind is TERMINATE:
            runtime = finish(t, job)
            if job in pending:
                _forget(pending, job, t)
            if workload:
                name, submitted = state.owner, state.submit
                if job in finished:  # the simulator needs one job per id
                    damage.add(sources[index], _place(position, job), FINISHED_AGAIN)
                else:
                    finished.add(job)
                    recorded.append(RecordedJob(_job_id(job), name, submitted, runtime))
        elif kind is EventKind.ABORT:
            meter.withdraw(t, job)
            if job in pending:
                _forget(pending, job, t)
        elif kind is EventKind.HOLD:
            if state.start is not None:
                meter.end(t, job, evicted=False)
            meter.hold(t, job, True)
        elif kind is EventKind.RELEASE:
            meter.hold(t, job, False)
        elif kind is EventKind.RUN_FAILED and state.start is not None:
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


def _forget(pending: dict[Hashable, list[float]], job: Hashable, t: float) -> None:
    """The job left the queue at ``t``: its signals sent over a second before can date none of
    the runs of a job of the same id that comes later (see :func:`_signal_for`)."""
    kept = [sent for sent in pending[job] if sent >= t - 1.0]
    if kept:
        pending[job] = kept
    else:
        del pending[job]


def _key(job: Hashable) -> Hashable:
    """The job as the meter knows it: a job id as its key (:data:`osep.replay.events.JobKey`, made,
    hashed and compared in C); anything else as it is (hand-made events in tests)."""
    return key_of(job) if isinstance(job, JobId) else job


def _job_id(key: Hashable) -> JobId:
    """The job id a key stands for (anything else as it is: hand-made events in tests)."""
    if isinstance(key, int) or (isinstance(key, tuple) and len(key) == 4):
        return job_of(key)
    return key  # type: ignore[return-value]


def _place(position: int, job: Hashable) -> str:
    """Where an event is in its file (as :attr:`LogEvent.place` says it)."""
    return f"event {position} (job {_job_id(job)})"

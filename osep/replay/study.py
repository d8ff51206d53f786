"""``osep replay`` end to end: logs in, the comparison document (and what the plot needs) out.

The pieces are elsewhere (reading logs in :mod:`osep.htcondor.eventlog` and
:mod:`osep.replay.decisions`, rebuilding the history in :mod:`osep.replay.history`, what-if runs
in :mod:`osep.experiment.runs`); this module only wires them, so that the CLI stays a shell and tests
can run the whole path without it.
"""

from __future__ import annotations

import datetime
import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.core.tree import ShareTree
from osep.errors import OsepError
from osep.measure.documents import column, document, iso
from osep.measure.meter import Meter
from osep.measure.records import feed
from osep.measure.series import Series
from osep.replay.damage import MAX_SLOTS, regular_file
from osep.replay.decisions import DecisionLog, read_decisions, vacates_in_order
from osep.replay.events import Row
from osep.replay.history import Replay, replay_rows
from osep.replay.merging import merge_rows
from osep.sim.specs import Order

if TYPE_CHECKING:  # the simulator is imported for what-if runs only
    from osep.config.scenario import Scenario
    from osep.experiment.runs import Outcome

RECORDED = "recorded"
MAX_WHAT_IF_CYCLES = 1_000_000  # negotiation and enforcement cycles of one what-if run
# The vacates sent that the first reading of a decision log keeps (24 bytes each), so that it
# need not be read a second time; a log with more is streamed a second time.
KEPT_VACATES = 1 << 16


@dataclass(frozen=True, slots=True)
class LogSource:
    path: Path
    owner: str | None = None  # every job in this log belongs to this owner

    @classmethod
    def parse(cls, text: str) -> LogSource:
        """``FILE`` or ``OWNER=FILE`` (an owner name has no slash, a path may have an equals sign)."""
        owner, sep, rest = text.partition("=")
        if sep and owner and "/" not in owner and rest:
            return cls(Path(rest), owner)
        return cls(Path(text))


@dataclass(frozen=True, slots=True)
class WhatIf:
    policies: tuple[str, ...] = ()
    negotiation_interval: float = 60.0
    vacate_delay: float = 10.0


@dataclass(frozen=True, slots=True)
class Study:
    document: dict[str, Any]
    replay: Replay
    outcomes: dict[str, Outcome]
    capacity: int

    def panels(self) -> dict[str, tuple[Series, Any, int]]:
        """What :func:`osep.ui.plot.draw_series` draws: the recorded history, then each what-if run."""
        out: dict[str, tuple[Series, Any, int]] = {}
        if self.replay.series is not None:
            out[RECORDED] = (self.replay.series, self.replay.metrics, self.capacity)
        for name, outcome in self.outcomes.items():
            meter = feed(Meter(outcome.shares, self.capacity, curves=True, origin=0.0),
                         outcome.result.jobs)
            series = meter.series()
            if series is not None:
                # The simulation's clock starts at the log's first event.
                start = (self.replay.start or 0.0) + series.start
                out[name] = (Series(start, series.width, series.real, series.ideal,
                                    series.evictions), outcome.metrics, self.capacity)
        return out


def study(
    sources: Sequence[LogSource],
    policy: PolicySettings,
    *,
    interval: float,
    read_log: Callable[[Path, Callable[[str], None], int], Iterable[list[Row]]],
    warn: Callable[[str], None],
    decisions: Path | None = None,
    slots: int | None = None,
    what_if: WhatIf = WhatIf(),
    curves: bool = False,
    progress: Callable[[int, float], None] | None = None,
    excess: Order = Order.FAIRSHARE,
    min_run_time: float = 0.0,
) -> Study:
    """Replay ``sources`` (``read_log`` turns a path, and its index among the sources, into its
    events as rows: :func:`osep.htcondor.eventlog.read_event_rows`) and run each what-if policy on
    the recorded workload (the enforcing ones over the negotiator ``excess`` names, vacating no job
    that has run less than ``min_run_time`` seconds). With an owner tree in ``policy``, jobs are
    placed in it by their accounting names and its top-level groups are measured too."""
    result, capacity, log = recorded(sources, policy, read_log=read_log, warn=warn, decisions=decisions,
                                     slots=slots, curves=curves, workload=bool(what_if.policies),
                                     progress=progress)
    outcomes: dict[str, Outcome] = {}
    what_ifs: dict[str, dict[str, Any]] = {}
    if what_if.policies:
        from osep.experiment.runs import outcome_column, run_scenario, totals

        check_what_if(sources, result, interval, capacity, what_if)
        scenario = replace(what_if_scenario(sources, result, policy, interval, capacity, what_if),
                           excess=excess, min_run_time=min_run_time)
        outcomes = run_scenario(scenario, what_if.policies, policy, interval, records=curves)
        what_ifs = {n: outcome_column(o, totals(scenario), scenario.horizon) for n, o in outcomes.items()}
    jobs = sum(o.jobs for o in result.metrics.owners)
    info = {
        "name": ", ".join(s.path.name for s in sources) if len(sources) <= 3
        else f"{sources[0].path.name} and {len(sources) - 1} more logs",
        "file": [str(s.path) for s in sources],
        "description": "recorded history" + (", with what-if runs" if outcomes else ""),
        "slots": capacity,
        "jobs": jobs,
        "events": result.events,
        "start": iso(result.start),
        "end": iso(result.end),
        "span": _span(result.start, result.end),
        "decision_log": str(decisions) if decisions is not None else None,
        "warnings": result.warnings,
    }
    if outcomes:
        info["what_if_jobs"] = len(result.workload)
        info["what_if_left_out"] = jobs - len(result.workload)  # not finished in the logs
        info["what_if"] = {"negotiation_interval": what_if.negotiation_interval,
                           "vacate_delay": what_if.vacate_delay}
    extra: dict[str, Any] = {"unfinished": result.unfinished}
    if result.groups is not None:
        extra["groups"] = column(result.groups, "top-level groups")["owners"]
    if log is not None:  # only the decision log tells osep's evictions from anybody else's
        extra["evicted_by_osep"] = sum(result.osep_evictions.values())
    columns = {RECORDED: column(result.metrics, "what the logs recorded", None, **extra)}
    columns.update(what_ifs)
    return Study(document(info, columns), result, outcomes, capacity)



def recorded(
    sources: Sequence[LogSource],
    policy: PolicySettings,
    *,
    read_log: Callable[[Path, Callable[[str], None], int], Iterable[list[Row]]],
    warn: Callable[[str], None],
    decisions: Path | None = None,
    slots: int | None = None,
    curves: bool = False,
    workload: bool = False,
    progress: Callable[[int, float], None] | None = None,
) -> tuple[Replay, int, DecisionLog | None]:
    """The history ``sources`` recorded, measured against ``policy``'s shares (as :func:`study` does),
    the pool's size in slots and the decision log read; with ``workload``, the finished jobs'
    arrivals and run times too (what a what-if run simulates)."""
    # The decision log is read first for the pool's size, its damage and whether its vacates are in
    # time order, holding a line at a time and keeping the vacates sent (up to KEPT_VACATES of
    # them, in arrays), which are then taken as the replay reaches their times. With more, it is
    # read a second time, as a stream of them; read whole only when they are not in order.
    for source in sources:  # a log that cannot be read is named before anything else is asked
        regular_file(source.path, "event log")
    log = (read_decisions(decisions, warn, actions=False, keep=KEPT_VACATES)
           if decisions is not None else None)
    capacity = slots if slots is not None else (log.capacity if log is not None else None)
    if capacity is None or capacity <= 0:
        if log is not None:
            raise OsepError(f"{log.path}: no cycle in this decision log records the pool's size: "
                            "pass --slots N")
        raise OsepError(
            "the pool's size is unknown: pass --slots N (or a decision log whose cycles record it)"
        )
    shares = policy.shares.resolve(capacity)
    signals: dict[JobId, list[float]] | None = None
    vacates: Iterator[tuple[float, JobId]] | None = None
    if decisions is not None and log is not None and log.vacates:
        if log.vacates_ordered:
            vacates = log.kept_in_order() or vacates_in_order(decisions)
        else:
            signals = read_decisions(decisions, lambda _: None).vacates_sent()
    streams = [read_log(s.path, warn, index) for index, s in enumerate(sources)]
    owners = {str(s.path): s.owner for s in sources if s.owner}
    # The replay makes a few objects per event and drops them as it goes, with no reference cycles
    # among them: the cyclic collector, which would run every few hundred events, has nothing to
    # find there (docs/performance.md).
    collecting = gc.isenabled()
    gc.disable()
    try:
        result = replay_rows(
            merge_rows(streams),
            [str(s.path) for s in sources],
            shares,
            capacity,
            warn=warn,
            owners=owners,
            signals=signals,
            vacates=vacates,
            curves=curves,
            workload=workload,
            progress=progress,
            tree=policy.shares if isinstance(policy.shares, ShareTree) else None,
        )
    finally:
        if collecting:
            gc.enable()
    if result.events == 0:
        raise OsepError(", ".join(str(s.path) for s in sources) + ": no job events in "
                        + ("it" if len(sources) == 1 else "them"))
    return result, capacity, log

def what_if_scenario(sources: Sequence[LogSource], result: Replay, policy: PolicySettings,
              interval: float, capacity: int, what_if: WhatIf) -> Scenario:
    """The recorded workload (finished jobs: their arrival and run time) as a scenario."""
    from osep.config.scenario import Scenario
    from osep.sim.horizon import BOUND, Horizon, within_cycles
    from osep.sim.specs import Checkpointing, JobSpec, PoolSettings, SlotSpec

    # The run stops where it would have made MAX_WHAT_IF_CYCLES cycles, every one of them run: past
    # the recorded workload's end (check_what_if), so only a run whose queue does not drain stops.
    n = what_if.negotiation_interval
    limit = within_cycles(n, interval, MAX_WHAT_IF_CYCLES)
    horizon = Horizon(limit, BOUND, limit, f"{MAX_WHAT_IF_CYCLES:,} cycles at a negotiation cycle every {n:g} s "
                      f"and an enforcement cycle every {interval:g} s", "give a longer --negotiation-interval or -t")
    return Scenario(
        path=str(sources[0].path),
        name="what-if",
        description="the recorded workload on a simulated pool",
        policies=what_if.policies,
        slots=tuple(SlotSpec(f"slot{k + 1}") for k in range(capacity)),
        jobs=tuple(JobSpec(j.id, j.owner, j.submit, j.runtime) for j in result.workload),
        pool=PoolSettings(
            negotiation_interval=what_if.negotiation_interval,
            vacate_delay=what_if.vacate_delay,
            checkpointing=Checkpointing.ON_VACATE,
            horizon=limit,
        ),
        policy=policy,
        interval=interval,
        horizon=horizon,
    )


def check_what_if(sources: Sequence[LogSource], result: Replay, interval: float, capacity: int,
                   what_if: WhatIf) -> None:
    """Refuse a what-if run too large to end: a pool of more slots than any log may give, or one
    that would take too many cycles (the simulated pool negotiates and enforces at every interval
    until its last job ends, however idle it is)."""
    if capacity > MAX_SLOTS:
        raise OsepError(f"a what-if pool of {capacity:,} slots: at most {MAX_SLOTS:,} are simulated")
    span = max((j.submit + j.runtime for j in result.workload), default=0.0)
    cycles = span / what_if.negotiation_interval + span / interval
    if cycles > MAX_WHAT_IF_CYCLES:
        raise OsepError(
            f"{sources[0].path}: the recorded workload spans {span:,.0f} s, {cycles:,.0f} "
            f"negotiation and enforcement cycles of the what-if pool; at most "
            f"{MAX_WHAT_IF_CYCLES:,} are simulated (give a longer --negotiation-interval or -t)"
        )


def _span(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return ""
    first = datetime.datetime.fromtimestamp(start, datetime.UTC)
    last = datetime.datetime.fromtimestamp(end, datetime.UTC)
    fmt = "%H:%M:%S" if first.date() == last.date() else "%Y-%m-%d %H:%M:%S"
    return f"{first:%Y-%m-%d %H:%M:%S} to {last.strftime(fmt)} UTC ({end - start:.0f} s)"

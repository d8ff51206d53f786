"""What the daemon's Prometheus endpoint serves: the figures its cycles leave, carried from one cycle
to the next, and the metric families made from them. Pure: no server, no clock, no pool (serving
them is :mod:`osep.enforce.exporter`'s part).

:func:`after_cycle` takes the figures so far and one cycle's report to the figures after it;
:func:`families` makes the metric families of one scrape from them. A cycle that read the pool
replaces every per-owner figure with its plan's, so an owner who has left the policy (or the pool)
leaves the endpoint at the next cycle rather than standing at its last value; a cycle that failed
leaves no per-owner figure at all, as the daemon's ad then carries none. Counters only grow, from
0 at the daemon's start.

Figures in the policy's unit (shares, targets, what an owner runs, gaps, the pool's capacity) carry
it in a ``unit`` label, the value the ad's ``OSEPUnit`` and the log's ``unit`` give: a SIGHUP to
another unit starts new series instead of joining figures of two units in one. Counts of jobs and
rooms say so in their names.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)

from osep.act.cycle import CycleReport
from osep.act.records import Outcome
from osep.core.plan import OwnerView, Vacate

# What became of a cycle: it read the pool and acted as configured (a dry run too); it failed
# (the pool could not be read, or a fault of osep's own); it stood aside as a dry run does (another
# osep holds the pool, or the state file could not be written).
OK, FAILED, ASIDE = "ok", "failed", "stood-aside"
RESULTS = (OK, FAILED, ASIDE)
# Why an owner is held, as osep.core.holds decides it: its idle jobs wait while it is at or above its
# target, or it has none waiting and is losing jobs to vacates (this cycle's or earlier ones').
HELD_ABOVE = "at or above its target with idle jobs"
HELD_LOSING = "losing jobs to vacates"
# The outcomes of an action that was not carried out (a dry run's are not failures).
NOT_DONE = (Outcome.FAILED, Outcome.CHANGED, Outcome.RATE_LIMITED)
# Upper bounds of the cycle-time histograms' buckets, in seconds: from a decision among a few owners
# (a millisecond) to a cycle that waited on a schedd that did not answer (minutes).
BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
K = TypeVar("K", bound=Hashable)
WHOLE = "cycle"  # the key of a whole cycle's seconds in CycleReport.seconds (the rest are phases)


@dataclass(frozen=True, slots=True)
class Histogram:
    """Observations of one duration: how many fell in each bucket of BUCKETS (and past the last),
    and their sum."""

    counts: tuple[int, ...] = (0,) * (len(BUCKETS) + 1)
    total: float = 0.0

    def observe(self, seconds: float) -> Histogram:
        index = bisect_left(BUCKETS, seconds)  # the first bucket whose bound is at least seconds
        counts = list(self.counts)
        counts[index] += 1
        return Histogram(tuple(counts), self.total + seconds)

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative, as the exposition format has them: (upper bound, observations up to it)."""
        out: list[tuple[str, float]] = []
        seen = 0
        for bound, count in zip((*map(str, BUCKETS), "+Inf"), self.counts, strict=True):
            seen += count
            out.append((bound, seen))
        return out


@dataclass(frozen=True, slots=True)
class Figures:
    """What the endpoint serves, as the last cycle left it. The mappings are never changed once
    made: each cycle makes new ones."""

    version: str
    dry_run: bool = False
    interval: float = 0.0
    # The last cycle's result (None before the first), and when the last one that read the pool
    # ended (epoch seconds).
    last_result: str | None = None
    last_cycle: float | None = None
    # The last cycle's plan: the unit, the pool's capacity in it (None with dominant) and its slots,
    # every owner's figures and the holds it set (owner -> allowance). None of it after a failed
    # cycle, but the holds, which stay in force until a cycle changes them.
    unit: str | None = None
    capacity: float | None = None
    slots: int | None = None
    owners: tuple[OwnerView, ...] = ()
    held: Mapping[str, int] = field(default_factory=dict)
    # Counters: cycles by result; vacates sent by the plan's rule; holds begun by why; actions not
    # carried out by (kind, outcome).
    cycles: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(RESULTS, 0))
    vacates: Mapping[str, int] = field(default_factory=dict)
    holds: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys((HELD_ABOVE, HELD_LOSING), 0))
    failed: Mapping[tuple[str, str], int] = field(default_factory=dict)
    # Wall seconds of the whole cycles and of their phases (osep.timing's names, and "other").
    seconds: Histogram = field(default_factory=Histogram)
    phases: Mapping[str, Histogram] = field(default_factory=dict)


def configured(figures: Figures, dry_run: bool, interval: float) -> Figures:
    """The figures with the daemon's configuration as it is now (a SIGHUP may change it)."""
    if (figures.dry_run, figures.interval) == (dry_run, interval):
        return figures
    return replace(figures, dry_run=dry_run, interval=interval)


def after_cycle(figures: Figures, report: CycleReport | None, stood_aside: bool, now: float) -> Figures:
    """The figures after one cycle: its report (None: the cycle failed), whether it stood aside,
    and when it ended (epoch seconds)."""
    result = FAILED if report is None else ASIDE if stood_aside else OK
    cycles = _add(figures.cycles, [result])
    if report is None:
        return replace(figures, last_result=result, cycles=cycles, unit=None, capacity=None,
                       slots=None, owners=())
    plan = report.plan
    sent = (r.action for r in report.results if r.outcome is Outcome.DONE)
    not_done = [("vacate" if isinstance(r.action, Vacate) else "claim", r.outcome.value)
                for r in report.results if r.outcome in NOT_DONE]
    steps = [(step, Outcome.FAILED.value) for step, count in report.steps_failed.items()
             for _ in range(count)]
    views = {v.owner: v for v in plan.owners} if report.held else {}
    begun = [HELD_ABOVE if owner in views and views[owner].idle > 0 else HELD_LOSING
             for owner in report.held if owner not in figures.held]
    phases = dict(figures.phases)
    for phase, seconds in report.seconds.items():
        if phase != WHOLE:
            phases[phase] = phases.get(phase, Histogram()).observe(seconds)
    whole = report.seconds.get(WHOLE)
    return replace(
        figures, last_result=result, last_cycle=now, cycles=cycles,
        unit=plan.unit.value, capacity=plan.size, slots=plan.capacity, owners=plan.owners,
        held=report.held,
        vacates=_add(figures.vacates, [a.reason.rule for a in sent if isinstance(a, Vacate)]),
        holds=_add(figures.holds, begun),
        failed=_add(figures.failed, [*not_done, *steps]),
        seconds=figures.seconds.observe(whole) if whole is not None else figures.seconds,
        phases=phases,
    )


def _add(counts: Mapping[K, int], keys: Iterable[K]) -> dict[K, int]:
    out = dict(counts)
    for key in keys:
        out[key] = out.get(key, 0) + 1
    return out


# The per-owner figures: (metric name, what it is, whether it is in the policy's unit, its value).
_OWNER: tuple[tuple[str, str, bool, str], ...] = (
    ("osep_owner_share", "The owner's share", True, "share"),
    ("osep_owner_feasible", "The owner's feasible share: min(share + its part of what others leave, "
                            "its demand)", True, "feasible"),
    ("osep_owner_target", "What the policy holds the owner to (its share or its feasible share, as "
                          "the policy's target says)", True, "target"),
    ("osep_owner_running", "What the owner's running jobs hold", True, "holding"),
    ("osep_owner_kept", "Room kept for the owner, on its way to one of its jobs", True, "kept"),
    ("osep_owner_gap", "target - (running + kept): above 0 the owner is owed capacity, below 0 it "
                       "holds more than its target", True, "gap"),
    ("osep_owner_running_jobs", "The owner's jobs running", False, "running"),
    ("osep_owner_idle_jobs", "The owner's jobs waiting", False, "idle"),
    ("osep_owner_vacating_jobs", "The owner's jobs on their way out after a vacate", False, "vacating"),
    ("osep_owner_kept_rooms", "Rooms kept for the owner", False, "reserved"),
)
IN_UNIT = " (in the policy's unit: the unit label)"


def faults_family(faults: int) -> Metric:
    """The endpoint's own faults so far: what a scrape still says when nothing else can be made."""
    return CounterMetricFamily("osep_metrics_faults", "Faults of this endpoint (each logged as metrics_failed)",
                               value=faults)


def _rows(counts: Mapping[str, int]) -> list[tuple[Sequence[str], int]]:
    return [((key,), count) for key, count in counts.items()]


def _owner_value(view: OwnerView, attribute: str) -> float:
    if attribute == "kept":
        return view.active - view.holding
    value: float = getattr(view, attribute)
    return value


def families(figures: Figures, faults: int = 0) -> list[Metric]:
    """The metric families of one scrape. ``faults``: the endpoint's own faults so far (the serving
    part counts them)."""
    out: list[Metric] = []

    def gauge(name: str, text: str, value: float | None) -> None:
        family = GaugeMetricFamily(name, text)
        if value is not None:
            family.add_metric([], value)
        out.append(family)

    def counter(name: str, text: str, labels: list[str], rows: Iterable[tuple[Sequence[str], int]]) -> None:
        family = CounterMetricFamily(name, text, labels=labels)
        for key, count in sorted(rows):
            family.add_metric(key, count)
        out.append(family)

    out.append(InfoMetricFamily("osep", "The osep that serves these figures",
                                value={"version": figures.version}))
    gauge("osep_dry_run", "1 while osep runs dry (decides and logs, touches nothing), else 0",
          float(figures.dry_run))
    gauge("osep_interval_seconds", "Seconds between the starts of two cycles (t)", figures.interval)
    gauge("osep_last_cycle_timestamp_seconds", "When the last cycle that read the pool ended (Unix time)",
          figures.last_cycle)
    gauge("osep_last_cycle_ok", "1 when the last cycle read the pool and acted as configured, else 0",
          None if figures.last_result is None else float(figures.last_result == OK))
    counter("osep_cycles", "Cycles since osep started, by result: ok, failed (the pool could not be "
            "read, or a fault of osep's own), stood-aside (as a dry run: another osep holds the pool, "
            "or the state file could not be written)", ["result"], _rows(figures.cycles))
    counter("osep_vacates", "Vacates sent, by the policy's rule that planned them", ["reason"],
            _rows(figures.vacates))
    counter("osep_holds", "Owners osep began to hold (a ceiling set where the cycle before set none), "
            "by why", ["reason"], _rows(figures.holds))
    counter("osep_failed_actions", "Planned actions not carried out, by kind (vacate, claim, hold, "
            "reserve) and reason (failed, skipped-changed, skipped-rate-limit)", ["kind", "reason"],
            figures.failed.items())
    out.append(faults_family(faults))
    capacity = GaugeMetricFamily("osep_capacity", "The pool's capacity" + IN_UNIT, labels=["unit"])
    if figures.capacity is not None and figures.unit is not None:
        capacity.add_metric([figures.unit], figures.capacity)
    out.append(capacity)
    gauge("osep_slots", "The pool's slots (static, and partitionable machines' dynamic and unclaimed "
          "parts)", None if figures.slots is None else float(figures.slots))
    unit = figures.unit or ""
    for name, text, in_unit, attribute in _OWNER:
        family = GaugeMetricFamily(name, text + (IN_UNIT if in_unit else ""),
                                   labels=["owner", "unit"] if in_unit else ["owner"])
        for view in figures.owners:
            family.add_metric([view.owner, unit] if in_unit else [view.owner], _owner_value(view, attribute))
        out.append(family)
    held = GaugeMetricFamily("osep_owner_held", "1 while the owner is held (a ceiling osep set keeps "
                             "it from being given more than its allowance), else 0", labels=["owner"])
    for view in figures.owners:
        held.add_metric([view.owner], float(view.owner in figures.held))
    out.append(held)
    whole = HistogramMetricFamily("osep_cycle_seconds", "Wall seconds of the cycles that read the pool")
    whole.add_metric([], figures.seconds.buckets(), figures.seconds.total)
    out.append(whole)
    parts = HistogramMetricFamily("osep_cycle_phase_seconds", "Wall seconds of the cycles' phases: "
                                  "query, translate (or snapshot), decide, act, state, other",
                                  labels=["phase"])
    for phase, histogram in sorted(figures.phases.items()):
        parts.add_metric([phase], histogram.buckets(), histogram.total)
    out.append(parts)
    return out

"""The recorded history a sweep runs its candidates on, and its periods.

A history is a workload log in the Standard Workload Format read as ``osep simulate --trace`` reads
one (:class:`TraceHistory`), or a pool's job event logs read as ``osep replay`` reads them, their
finished jobs simulated as its what-if runs are (:class:`EventHistory`). Either is cut in time into
the period the candidates are tuned on (``tune``) and, when asked, the period after it, held out to
check the recommendation on (``check``): a job belongs to the period it was submitted in, and each
period's clock starts at its own beginning.

A candidate's interval is part of its scenario (the simulator's bounds depend on it), so a period's
scenario is made for an interval, once. A history is described as JSON (:meth:`describe`), the
files it reads named apart (:meth:`inputs`), so that a run elsewhere (a pool's job) can make the same
scenarios from copies of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol

from osep.config.policy import PolicyFile, load_policy
from osep.config.scenario import Scenario
from osep.config.trace import TraceOptions, trace_scenario
from osep.errors import ConfigError
from osep.replay.events import Row
from osep.replay.study import LogSource, WhatIf, check_what_if, recorded, what_if_scenario

TUNE, CHECK = "tune", "check"
DAY = 86400.0

ReadLog = Callable[[Path, Callable[[str], None], int], Iterable[list[Row]]]


class History(Protocol):
    """What a sweep needs of a recorded history."""

    policy: PolicyFile

    def periods(self) -> tuple[str, ...]:
        """``(TUNE,)``, or ``(TUNE, CHECK)`` with a period held out."""

    def scenario(self, period: str, interval: float) -> Scenario:
        """The period's workload on its pool, its runs bounded for enforcement every ``interval``."""

    def describe(self) -> dict[str, Any]:
        """The history as JSON, every file it reads named by its index in :meth:`inputs`."""

    def inputs(self) -> tuple[Path, ...]:
        """The files it reads: the log(s), the policy file, a decision log."""

    def span(self, period: str) -> tuple[float, float | None]:
        """Where the period starts and ends (None: the history's end), in seconds of the history."""


class _Cached:
    """Scenarios made once per period and interval; the cache is not pickled (a worker process
    makes its own)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, float], Scenario] = {}

    def scenario(self, period: str, interval: float) -> Scenario:
        key = (period, interval)
        made = self._made.get(key)
        if made is None:
            if len(self._made) >= 2:  # a scenario holds every job; a sweep runs one interval at a time
                self._made.pop(next(iter(self._made)))
            made = self._made[key] = self._make(period, interval)
        return made

    def _make(self, period: str, interval: float) -> Scenario:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_made"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _split(option: str, start: float, end: float | None, tune_days: float | None) -> float | None:
    """Where the tuned period ends (None: nothing held out), refusing one that leaves nothing after."""
    if tune_days is None:
        return None
    split = start + tune_days * DAY
    if end is not None and split >= end:
        raise ConfigError(None, option, f"{tune_days:g} days from {start:,.0f} s reach the history's end at "
                                        f"{end:,.0f} s: nothing is left to check on")
    return split


class TraceHistory(_Cached):
    """A workload log read as ``osep simulate --trace`` reads it with ``options``; its first
    ``tune_days`` tuned on, the rest of its window held out. ``options`` must name a policy file."""

    def __init__(self, options: TraceOptions, tune_days: float | None = None) -> None:
        super().__init__()
        if options.policy_file is None:
            raise ConfigError(None, "--policy-file", "a policy file is needed: it has the shares and the settings "
                                                     "the candidates start from")
        self.options = options
        self.tune_days = tune_days
        self.policy = load_policy(options.policy_file)
        self.split = _split("--tune-days", options.since, options.until, tune_days)
        # Each period is read now, so that a log or a window that cannot be run is said before any run.
        self.scenario(TUNE, self.policy.interval)
        if self.split is not None:
            try:
                self.scenario(CHECK, self.policy.interval)
            except ConfigError as exc:
                if "no jobs in the log" not in exc.reason:
                    raise
                raise ConfigError(None, "--tune-days", f"no job of the log is submitted after {tune_days:g} days: "
                                                       "nothing is left to check on") from None

    def periods(self) -> tuple[str, ...]:
        return (TUNE,) if self.split is None else (TUNE, CHECK)

    def span(self, period: str) -> tuple[float, float | None]:
        o = self.options
        if self.split is None:
            return o.since, o.until
        return (o.since, self.split) if period == TUNE else (self.split, o.until)

    def _make(self, period: str, interval: float) -> Scenario:
        since, until = self.span(period)
        made = trace_scenario(replace(self.options, since=since, until=until), interval)
        return made.scenario

    def inputs(self) -> tuple[Path, ...]:
        assert self.options.policy_file is not None
        return (self.options.path, self.options.policy_file)

    def describe(self) -> dict[str, Any]:
        options = {k: v for k, v in asdict(self.options).items() if k not in ("path", "policy_file")}
        return {"kind": "trace", "log": 0, "policy_file": 1, "options": options, "tune_days": self.tune_days}

    @classmethod
    def described(cls, data: Mapping[str, Any], files: Sequence[Path]) -> TraceHistory:
        options = TraceOptions(path=files[data["log"]], policy_file=files[data["policy_file"]], **data["options"])
        return cls(options, data["tune_days"])


class EventHistory(_Cached):
    """A pool's job event logs, read as ``osep replay`` reads them (``read_log``: the event log
    reader), measured against the policy file's shares; the finished jobs are the workload, on a
    pool of ``slots`` one-core slots (default: the decision log's largest), negotiating and
    vacating as ``what_if`` says. Its first ``tune_days`` are tuned on, the rest held out."""

    def __init__(self, sources: Sequence[LogSource], policy_file: Path, read_log: ReadLog,
                 warn: Callable[[str], None], *, decisions: Path | None = None, slots: int | None = None,
                 what_if: WhatIf = WhatIf(), tune_days: float | None = None) -> None:
        super().__init__()
        self.sources = tuple(sources)
        self.policy_file = policy_file
        self.decisions = decisions
        self.what_if = what_if
        self.tune_days = tune_days
        self.policy = load_policy(policy_file)
        replayed, self.capacity, _ = recorded(sources, self.policy.settings, read_log=read_log, warn=warn,
                                              decisions=decisions, slots=slots, workload=True)
        self.slots = slots
        self.replayed = replace(replayed, series=None)
        last = max((j.submit for j in replayed.workload), default=0.0)
        self.split = _split("--tune-days", 0.0, last, tune_days)
        if not replayed.workload:
            raise ConfigError(None, None, f"{sources[0].path}: no job in the logs finished: there is no "
                                          "workload to tune on")

    def periods(self) -> tuple[str, ...]:
        return (TUNE,) if self.split is None else (TUNE, CHECK)

    def span(self, period: str) -> tuple[float, float | None]:
        if self.split is None:
            return 0.0, None
        return (0.0, self.split) if period == TUNE else (self.split, None)

    def _make(self, period: str, interval: float) -> Scenario:
        start, end = self.span(period)
        jobs = [replace(j, submit=j.submit - start) for j in self.replayed.workload
                if j.submit >= start and (end is None or j.submit < end)]
        if not jobs:
            raise ConfigError(None, "--tune-days", f"no finished job was submitted in the {period} period")
        result = replace(self.replayed, workload=jobs)
        check_what_if(self.sources, result, interval, self.capacity, self.what_if)
        scenario = what_if_scenario(self.sources, result, self.policy.settings, interval, self.capacity,
                                    self.what_if)
        return replace(scenario, excess=self.policy.excess)

    def inputs(self) -> tuple[Path, ...]:
        logs = tuple(s.path for s in self.sources)
        return (*logs, self.policy_file) + ((self.decisions,) if self.decisions is not None else ())

    def describe(self) -> dict[str, Any]:
        n = len(self.sources)
        return {"kind": "events", "logs": [{"file": k, "owner": s.owner} for k, s in enumerate(self.sources)],
                "policy_file": n, "decisions": n + 1 if self.decisions is not None else None,
                "slots": self.slots, "what_if": asdict(self.what_if), "tune_days": self.tune_days}

    @classmethod
    def described(cls, data: Mapping[str, Any], files: Sequence[Path], read_log: ReadLog,
                  warn: Callable[[str], None]) -> EventHistory:
        sources = [LogSource(files[log["file"]], log["owner"]) for log in data["logs"]]
        decisions = data["decisions"]
        what_if = WhatIf(**{**data["what_if"], "policies": tuple(data["what_if"]["policies"])})
        return cls(sources, files[data["policy_file"]], read_log, warn,
                   decisions=files[decisions] if decisions is not None else None,
                   slots=data["slots"], what_if=what_if, tune_days=data["tune_days"])

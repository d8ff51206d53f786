"""Where a cycle's time goes: wall and CPU seconds per phase, on clocks passed in.

A cycle of the daemon is spent in four phases: ``query`` (asking HTCondor's daemons: the collector
for slots and schedds, each schedd for its jobs; also kept per daemon), ``translate`` (ads into the
project's types, and the pool's own bookkeeping of that snapshot), ``decide`` (the policy) and ``act``
(logging the plan and carrying it out: re-checks, vacates, rooms, ceilings, the state file). The
daemon adds ``state`` (saving the state file before a real cycle). Whatever the phases leave of the
whole cycle is ``other``. Wall seconds say how long the cycle took; CPU seconds (this process's) say
how much of that was osep's own work rather than waiting on a daemon.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

Clock = Callable[[], float]

QUERY, TRANSLATE, DECIDE, ACT, STATE = "query", "translate", "decide", "act", "state"
SNAPSHOT = "snapshot"  # the whole snapshot, from a pool that does not split it into the two above
PHASES = (QUERY, TRANSLATE, SNAPSHOT, DECIDE, ACT, STATE)
OWN = (TRANSLATE, DECIDE, ACT, STATE)  # osep's own work; the rest is waiting on HTCondor
DIGITS = 4  # seconds are logged to 0.1 ms


@dataclass(frozen=True, slots=True)
class Clocks:
    """A wall clock (monotonic) and this process's CPU clock."""

    wall: Clock = time.monotonic
    cpu: Clock = time.process_time


class Phases:
    """The seconds one cycle spent in each phase, from when it was made. A phase timed twice (the
    queries of several schedds, a translation per schedd) adds up."""

    def __init__(self, clocks: Clocks | None = None) -> None:
        self.clocks = clocks if clocks is not None else Clocks()
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.queries: dict[str, float] = {}  # daemon -> wall seconds spent querying it
        self._began = (self.clocks.wall(), self.clocks.cpu())

    @contextmanager
    def timing(self, phase: str, daemon: str | None = None) -> Iterator[None]:
        """Time what the ``with`` block does as ``phase`` (a query of ``daemon``, if given), whether
        it ends or raises."""
        wall, cpu = self.clocks.wall(), self.clocks.cpu()
        try:
            yield
        finally:
            self.add(phase, self.clocks.wall() - wall, self.clocks.cpu() - cpu, daemon)

    def add(self, phase: str, wall: float, cpu: float, daemon: str | None = None) -> None:
        self.wall[phase] = self.wall.get(phase, 0.0) + wall
        self.cpu[phase] = self.cpu.get(phase, 0.0) + cpu
        if daemon is not None:
            self.queries[daemon] = self.queries.get(daemon, 0.0) + wall

    def total(self) -> tuple[float, float]:
        """Wall and CPU seconds since the cycle began."""
        return self.clocks.wall() - self._began[0], self.clocks.cpu() - self._began[1]

    def fields(self) -> dict[str, Any]:
        """What the cycle's log event says of its time: ``seconds`` and ``cpu_seconds`` per phase
        (with ``other`` and the whole ``cycle``), and ``query_seconds`` per daemon."""
        wall, cpu = self.total()
        return {
            "seconds": _rounded(self.wall, wall),
            "cpu_seconds": _rounded(self.cpu, cpu),
            "query_seconds": {k: round(v, DIGITS) for k, v in self.queries.items()},
        }


def _rounded(phases: dict[str, float], whole: float) -> dict[str, float]:
    out = {k: round(v, DIGITS) for k, v in phases.items()}
    out["other"] = round(max(0.0, whole - sum(phases.values())), DIGITS)
    out["cycle"] = round(whole, DIGITS)
    return out

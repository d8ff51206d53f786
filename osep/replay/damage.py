"""Damage found in a log, counted: one warning line per file and kind of damage, however many
records it hit; and the bounds every number read from a log must meet.

Every log reader (HTCondor event logs, the daemon's decision log) and the history rebuilt from them
note each bad record here with where it is and what is wrong with it; :meth:`Damage.report` then
passes one line per (file, problem) to ``warn``, with the first few places, so that a badly damaged
log of a million events says what is wrong in a few lines. A problem is a fixed text (it never
quotes the record, which may be huge or binary); the place says which record.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osep.errors import LogError
from osep.files import NotRegular, regular

EXAMPLES = 3  # places shown per kind of damage

# Bounds on what logs may say; anything outside is damage (docs/replay.md).
EARLIEST = 0.0  # 1970-01-01 00:00 UTC
LATEST = 4_102_444_800.0  # 2100-01-01 00:00 UTC, not included
LONGEST = LATEST - EARLIEST  # a duration (a run time, work lost) no longer than the range of times
MAX_JOB_NUMBER = 2**31 - 1  # a cluster or proc number, as HTCondor keeps them
MAX_SLOTS = 1_000_000  # a pool's size in slots
MAX_NAME = 1024  # characters in an owner's name
MAX_RECORD_BYTES = 4 << 20  # one event of an event log, one line of a decision log


def brief(problem: str) -> str:
    """A problem's text without what was done about it, for an error that ends the command."""
    for done in (", skipped", ", ignored", " (read all the same)"):
        problem = problem.removesuffix(done)
    return problem


def regular_file(path: Path, what: str) -> int:
    """The size of the file at ``path``, which must be a regular file osep can read (a directory,
    a device or a pipe could never end or never start): :class:`LogError` naming it if not."""
    try:
        info = regular(path)
        with path.open("rb"):
            pass
    except NotRegular:
        raise LogError(f"{path}: cannot read the {what}: not a regular file") from None
    except OSError as exc:
        raise LogError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    return info.st_size


def number_in(value: Any, low: float, high: float) -> float | None:
    """``value`` as a float if it is a number (not a bool) from ``low`` to ``high``, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if not low <= value <= high:  # compared before any conversion: a huge int does not overflow
        return None
    return float(value)


def log_time(value: Any) -> float | None:
    """Seconds since the epoch within the bounds above, or None."""
    t = number_in(value, EARLIEST, LATEST)
    return t if t is not None and t < LATEST else None


def whole_in(value: Any, low: int, high: int) -> int | None:
    """``value`` if it is an int (not a bool) from ``low`` to ``high``, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return None
    return value


def name_ok(value: Any) -> bool:
    """An owner's (or a slot's) name: a string of 1 to ``MAX_NAME`` printable characters."""
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME and value.isprintable()


@dataclass(slots=True)
class _Found:
    count: int = 0
    places: list[str] = field(default_factory=list)


class Damage:
    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self._found: dict[tuple[str, str], _Found] = {}
        self.total = 0

    def add(self, source: str, where: str, problem: str) -> None:
        """One bad record of ``source`` at ``where`` ("line 12", "event 40 (job 3.0)")."""
        found = self._found.setdefault((source, problem), _Found())
        found.count += 1
        self.total += 1
        if len(found.places) < EXAMPLES:
            found.places.append(where)

    def first(self, source: str) -> tuple[str, str] | None:
        """The place and problem of the first damage noted in ``source``."""
        for (name, problem), found in self._found.items():
            if name == source:
                return found.places[0], problem
        return None

    def report(self) -> None:
        """Pass on what was counted, one line per file and problem, and start counting afresh."""
        for (source, problem), found in self._found.items():
            if found.count == 1:
                self.warn(f"{source}: {found.places[0]}: {problem}")
            else:
                more = "; ..." if found.count > len(found.places) else ""
                self.warn(f"{source}: {found.count} times: {problem} "
                          f"({'; '.join(found.places)}{more})")
        self._found.clear()

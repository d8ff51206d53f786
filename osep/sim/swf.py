"""Workloads in the Standard Workload Format (the Parallel Workloads Archive) as simulator jobs.

One job a line, 18 whitespace-separated numbers; ``;`` lines are the header (``; Key: value``).
Fields used (1-based): 1 job number, 2 submit time (seconds from the log's start), 4 run time,
5 allocated processors (8, requested processors, where 5 is -1), 12 user, 13 group. A job becomes
a :class:`osep.sim.specs.JobSpec` of that many cores, owned by ``user<N>``, ``group<N>``, or
``group<G>.user<N>`` (its user in its group, as an accounting group names a member: what an owner
tree places).

Nothing in a log stops the reading: a line that is not 18 numbers, a job with no run time or no
processors, is skipped and counted per reason, with the first few line numbers as examples.
"""

from __future__ import annotations

import gzip
import io
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from osep.core.model import JobId
from osep.errors import OsepError
from osep.sim.specs import JobSpec

FIELDS = 18
OWNERS = {"user": 11, "group": 12}  # 0-based field of the owner's number
NAMINGS = (*OWNERS, "group.user")


class TraceError(OsepError):
    """A trace that cannot be read at all (missing, not a file, not text)."""


@dataclass(slots=True)
class Workload:
    """What a log gave: the jobs, its header, and what was skipped (reason -> count)."""

    jobs: list[JobSpec] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def skip(self, reason: str, line: int) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if len(self.examples) < 3:
            self.examples.append(f"line {line}: {reason}")


def _lines(path: Path) -> Iterator[str]:
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with raw:
        stream = gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw
        try:
            yield from io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
        except (OSError, EOFError) as exc:  # a damaged or truncated gzip file
            raise TraceError(f"{path}: cannot read: {exc}") from None


def parse(lines: Iterable[str], owners: str = "user", since: float = 0.0, until: float | None = None,
          limit: int | None = None) -> Workload:
    """The jobs submitted in ``[since, until)`` (at most ``limit``), submit times counted from
    ``since``."""
    if owners not in NAMINGS:
        raise ValueError(f"owners is 'user', 'group' or 'group.user', not {owners!r}")
    out = Workload()
    numbering: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith(";"):
            key, colon, value = text[1:].partition(":")
            if colon and key.strip() and key.strip() not in out.header:
                out.header[key.strip()] = value.strip()
            continue
        parts = text.split()
        if len(parts) != FIELDS:
            out.skip(f"{len(parts)} fields, not {FIELDS}", number)
            continue
        try:
            values = [float(p) for p in parts]
        except ValueError:
            out.skip("a field that is not a number", number)
            continue
        submit, runtime = values[1], values[3]
        procs = values[4] if values[4] > 0 else values[7]
        if not 0 <= submit < math.inf:
            out.skip("no submit time", number)
        elif not 0 < runtime < math.inf:
            out.skip("no run time", number)
        elif not 1 <= procs < 2**31:
            out.skip("no processors", number)
        elif submit < since or (until is not None and submit >= until):
            continue
        else:
            owner = ".".join(_name(kind, values[OWNERS[kind]]) for kind in owners.split("."))
            n = numbering.get(owner, 0)
            numbering[owner] = n + 1
            out.jobs.append(JobSpec(JobId(owner, 0, n), owner, submit - since, runtime, int(procs)))
            if limit is not None and len(out.jobs) >= limit:
                break
    return out


def _name(kind: str, who: float) -> str:
    return f"{kind}{int(who)}" if 0 <= who < 2**31 else f"{kind}-unknown"


def read(path: Path | str, owners: str = "user", since: float = 0.0, until: float | None = None,
         limit: int | None = None) -> Workload:
    """A log file, plain or gzipped."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    return parse(_lines(path), owners, since, until, limit)

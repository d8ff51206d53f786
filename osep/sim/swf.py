"""Workloads in the Standard Workload Format (the Parallel Workloads Archive) as simulator jobs.

One job a line, 18 whitespace-separated numbers, -1 where a value is unknown; ``;`` lines are the
header (``; Key: value``). Fields used (1-based): 2 submit time (seconds from the log's start), 3 wait
time, 4 run time, 5 allocated processors (8, requested processors, where 5 is unknown), 11 status,
and for the owner 12 user, 13 group, 15 queue or 16 partition. A job becomes a
:class:`osep.sim.specs.JobSpec` of that many cores, owned by ``user<N>``, ``group<N>``, ``queue<N>``,
``partition<N>`` (``<kind>-unknown`` where the field is -1), or ``group<G>.user<N>`` (its user in its
group, as an accounting group names a member: what an owner tree places).

What is left out, following the format's definition (status: 1 completed, 0 failed, 5 cancelled;
2, 3 and 4 mark the partial executions of a checkpointed or swapped job, whose own line sums them up),
each counted per reason with the first few line numbers as examples; nothing in a log stops the reading:

- a line that is not 18 numbers (``nan`` and ``inf`` are not numbers here);
- a partial execution (status 2, 3 or 4): the job's summary line already counts its run;
- a status the format does not define (anything but -1, 0, 1, 2, 3, 4 and 5);
- a job without a submit time (-1, or negative);
- a cancelled job that never ran (status 5, run time -1 or 0);
- a job without a run time (-1 or negative) or of run time 0 (the format's rounding: it ran under half
  a second, which a simulated pool with cycles of a second or more cannot show), or longer than
  ``longest``;
- a job without processors (allocated and requested both -1 or 0) or with 2^31 or more.

Failed jobs (status 0) and cancelled jobs that ran (status 5 with a run time) are kept: they held their
processors for their run time.
"""

from __future__ import annotations

import gzip
import io
import math
import re
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from osep.core.model import JobId
from osep.errors import OsepError
from osep.sim.specs import JobSpec

FIELDS = 18
OWNERS = {"user": 11, "group": 12, "queue": 14, "partition": 15}  # 0-based field of the owner's number
NAMINGS = (*OWNERS, "group.user")
MAX_PROCESSORS = 2**31
STATUSES = {-1.0, 0.0, 1.0, 5.0}  # unknown, failed, completed, cancelled
PARTIAL = {2.0, 3.0, 4.0}  # partial executions

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_RECORD = re.compile(rf"(?:{_NUMBER}\s+){{{FIELDS - 1}}}{_NUMBER}")

# Why a line was left out (the keys of Workload.skipped).
NOT_NUMBERS = "a field that is not a number"
PARTIAL_RUN = "a partial execution (status 2, 3 or 4)"
UNKNOWN_STATUS = "a status the format does not define"
NO_SUBMIT = "no submit time"
CANCELLED = "cancelled before it ran"
NO_RUNTIME = "no run time"
ZERO_RUNTIME = "run time 0 (under half a second)"
TOO_LONG = "a run time too long"
NO_PROCESSORS = "no processors"
TOO_MANY = "2^31 processors or more"


class TraceError(OsepError):
    """A trace that cannot be read at all (missing, not a file, not text)."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


@dataclass(slots=True)
class Workload:
    """What a log gave: the jobs, its header, and what was skipped (reason -> count); ``starts``: each
    job's start in the log's own clock (submit plus wait; submit where the wait is unknown)."""

    jobs: list[JobSpec] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    starts: array[float] = field(default_factory=lambda: array("d"))
    records: int = 0  # data lines read (jobs, skipped ones and those outside the window)

    def skip(self, reason: str, line: int) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if len(self.examples) < 3:
            self.examples.append(f"line {line}: {reason}")

    def header_number(self, key: str) -> int | None:
        """A header field that is a whole number of at least 1 (``MaxProcs``), else None."""
        text = self.header.get(key, "")
        return int(text) if text.isdigit() and 0 < int(text) < MAX_PROCESSORS else None


def peak_cores(work: Workload) -> int:
    """The most cores the log's jobs (those read) held at once, as the log ran them."""
    events: list[tuple[float, int]] = []
    for start, job in zip(work.starts, work.jobs, strict=True):
        events.append((start, job.cpus))
        events.append((start + job.runtime, -job.cpus))
    events.sort()  # at the same instant an end (negative) comes before a start
    peak = held = 0
    for _, change in events:
        held += change
        peak = max(peak, held)
    return peak


def _lines(path: Path) -> Iterator[str]:
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    with raw:
        stream = gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw
        try:
            yield from io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
        except (OSError, EOFError, zlib.error) as exc:  # a damaged or truncated gzip file
            raise TraceError(path, f"cannot read: {exc}") from None


def parse(lines: Iterable[str], owners: str = "user", since: float = 0.0, until: float | None = None,
          limit: int | None = None, longest: float = math.inf) -> Workload:
    """The jobs submitted in ``[since, until)`` (at most ``limit``), submit times counted from
    ``since``."""
    if owners not in NAMINGS:
        raise ValueError(f"owners is one of {', '.join(NAMINGS)}, not {owners!r}")
    kinds = [(kind, OWNERS[kind]) for kind in owners.split(".")]
    out = Workload()
    numbering: dict[str, int] = {}
    names: dict[tuple[str, ...], str] = {}  # one string per owner, shared by its jobs
    end = math.inf if until is None else until
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text[0] == ";":
            key, colon, value = text[1:].partition(":")
            if colon and key.strip() and key.strip() not in out.header:
                out.header[key.strip()] = value.strip()
            continue
        out.records += 1
        if _RECORD.fullmatch(text) is None:
            count = len(text.split())
            out.skip(f"{count} fields, not {FIELDS}" if count != FIELDS else NOT_NUMBERS, number)
            continue
        parts = text.split()
        status = float(parts[10])
        submit, runtime = float(parts[1]), float(parts[3])
        procs = float(parts[4])
        if not procs > 0:
            procs = float(parts[7])
        if status in PARTIAL:
            out.skip(PARTIAL_RUN, number)
        elif status not in STATUSES:
            out.skip(UNKNOWN_STATUS, number)
        elif not 0 <= submit < math.inf:
            out.skip(NO_SUBMIT, number)
        elif status == 5 and not runtime > 0:
            out.skip(CANCELLED, number)
        elif runtime == 0:
            out.skip(ZERO_RUNTIME, number)
        elif not runtime > 0:
            out.skip(NO_RUNTIME, number)
        elif not runtime <= longest or runtime == math.inf:
            out.skip(TOO_LONG, number)
        elif not procs >= 1:
            out.skip(NO_PROCESSORS, number)
        elif procs >= MAX_PROCESSORS:
            out.skip(TOO_MANY, number)
        elif since <= submit < end:
            who = tuple(parts[k] for _, k in kinds)
            owner = names.get(who)
            if owner is None:
                owner = names[who] = ".".join(_name(kind, float(parts[k])) for kind, k in kinds)
            n = numbering.get(owner, 0)
            numbering[owner] = n + 1
            out.jobs.append(JobSpec(JobId(owner, 0, n), owner, submit - since, runtime, int(procs)))
            wait = float(parts[2])
            out.starts.append(submit + wait if 0 <= wait < math.inf else submit)
            if limit is not None and len(out.jobs) >= limit:
                break
    return out


def _name(kind: str, who: float) -> str:
    return f"{kind}{int(who)}" if 0 <= who < MAX_PROCESSORS else f"{kind}-unknown"


def read(path: Path | str, owners: str = "user", since: float = 0.0, until: float | None = None,
         limit: int | None = None, longest: float = math.inf) -> Workload:
    """A log file, plain or gzipped."""
    path = Path(path)
    try:
        if not path.is_file():
            raise TraceError(path, "no such file")
    except OSError as exc:  # a name the system refuses to look up (too long, a loop of links)
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    return parse(_lines(path), owners, since, until, limit, longest)

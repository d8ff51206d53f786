"""Workloads in the Standard Workload Format (the Parallel Workloads Archive) as simulator jobs.

Each record becomes a :class:`osep.sim.specs.JobSpec` of its processors as cores, owned as
``owners`` says (``user``, ``group``, ``queue``, ``partition`` or ``group.user``). What the format's
definition says is no job (a partial execution, an undefined status, no submit time, no run time, no
processors...) is left out and counted per reason, with the first few line numbers; no record stops
the reading. docs/simulate.md lists the fields read and every reason.

What a log may cost is bounded (:mod:`osep.bounds`). Past a bound the reading stops with one
:class:`TraceError` naming it, rather than skipping on: a line of 64 KiB or a million lines of junk is
no log of the format, and reading on through a decompression bomb is what the bounds prevent. Only a
regular file is opened (a FIFO would block), and a line is read with a bounded ``readline``, so memory
never grows with a line's length or the file's size.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import re
import zlib
from array import array
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from osep import bounds as B
from osep.core.model import JobId
from osep.errors import OsepError
from osep.files import open_regular, unreadable
from osep.sim.specs import JobSpec

FIELDS = 18
OWNERS = {"user": 11, "group": 12, "queue": 14, "partition": 15}  # 0-based field of the owner's number
NAMINGS = (*OWNERS, "group.user")
MAX_PROCESSORS = 2**31
_MANY = 100  # fields counted in a line that is no record (more are "more than 100")
STATUSES = {-1.0, 0.0, 1.0, 5.0}  # unknown, failed, completed, cancelled
PARTIAL = {2.0, 3.0, 4.0}  # partial executions

# Possessive quantifiers: a number's parts and the spaces between numbers can be split only one way,
# so giving up nothing matches what backtracking would, in a third of the time (a fifteenth on a run of
# thousands of digits). For ASCII text the same pattern with \d and \s spelled out as the ASCII
# characters they match is three times faster again on long runs of digits.
_NUMBER = r"[-+]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][-+]?+\d++)?+"
_RECORD = re.compile(rf"(?:{_NUMBER}\s++){{{FIELDS - 1}}}{_NUMBER}")
_ASCII_RECORD = re.compile(_RECORD.pattern.replace(r"\d", "[0-9]").replace(r"\s", r"[\t-\r\x1c- ]"))

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
    """A trace that cannot be read at all (missing, not a file, not gzip, past a bound)."""

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
        """A header field that is a whole number of at least 1 and under 2^31 (``MaxProcs``), else
        None. Only ASCII digits count (``str.isdigit`` takes ``²``, which ``int`` refuses), and no more
        than ten of them (``int`` refuses thousands)."""
        text = self.header.get(key, "")
        if not (text.isascii() and text.isdigit() and len(text) <= 10):
            return None
        return int(text) if 0 < int(text) < MAX_PROCESSORS else None


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


_PART = "such as its first lines: zcat -f LOG | head -n 1000000 > part.swf"


class _Capped(io.RawIOBase):
    """The bytes of ``stream`` (a file's, or a gzip file's decompressed), a :class:`TraceError` past
    ``MAX_TRACE_BYTES`` of them: what a compressed file claims is never read in full."""

    def __init__(self, stream: io.RawIOBase | io.BufferedIOBase, path: Path) -> None:
        self.stream, self.path, self.left = stream, path, B.MAX_TRACE_BYTES

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = self.stream.readinto(buffer) or 0
        self.left -= count
        if self.left < 0:
            raise TraceError(self.path, f"more than {B.MAX_TRACE_BYTES:,} bytes (uncompressed), more than osep "
                                        f"reads of a log: give it a part of the log ({_PART})")
        return count


def _open(path: Path) -> io.FileIO:
    """The regular file at ``path``, opened without waiting: a FIFO is refused before it is opened,
    and anything swapped in meanwhile once it is (see :mod:`osep.files`)."""
    try:
        return io.FileIO(open_regular(path), "rb")
    except (OSError, ValueError) as exc:
        raise TraceError(path, unreadable(exc, "a directory, not a workload log")) from None


def _lines(path: Path) -> Generator[str, None, None]:
    """The lines of the log at ``path``, each read with a bounded ``readline``: a line longer than
    ``MAX_TRACE_LINE`` is an error naming it. Gunzipped if its name ends in ``.gz`` (a file so named
    that is not gzip is an error), or if it begins as gzip does (a log compressed but not so named)."""
    with _open(path) as raw:
        try:
            zipped = path.name.endswith(".gz") or raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
        except OSError as exc:
            raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
        stream: io.RawIOBase | io.BufferedIOBase = gzip.GzipFile(fileobj=raw) if zipped else raw
        text = io.TextIOWrapper(io.BufferedReader(_Capped(stream, path), 1 << 16), encoding="utf-8",
                                errors="replace")
        number = 0
        try:
            while line := text.readline(B.MAX_TRACE_LINE + 1):
                number += 1
                if len(line) > B.MAX_TRACE_LINE and line[-1] != "\n":
                    raise TraceError(path, f"line {number:,} is longer than {B.MAX_TRACE_LINE:,} characters: "
                                           "is it a log in the Standard Workload Format?")
                yield line
        except (OSError, EOFError, zlib.error) as exc:  # a damaged or truncated gzip file
            raise TraceError(path, f"cannot read: {exc}") from None


def parse(lines: Iterable[str], owners: str = "user", since: float = 0.0, until: float | None = None,
          limit: int | None = None, longest: float = math.inf, path: Path = Path("<lines>")) -> Workload:
    """The jobs submitted in ``[since, until)`` (at most ``limit``), submit times counted from
    ``since``; a :class:`TraceError` (naming ``path``) past ``MAX_TRACE_RECORDS`` records or
    ``MAX_TRACE_OTHER_LINES`` lines that are none. The header keeps its first
    ``MAX_TRACE_HEADER_KEYS`` keys, each value cut to ``MAX_TRACE_HEADER_VALUE`` characters."""
    if owners not in NAMINGS:
        raise ValueError(f"owners is one of {', '.join(NAMINGS)}, not {owners!r}")
    kinds = [(kind, OWNERS[kind]) for kind in owners.split(".")]
    out = Workload()
    numbering: dict[str, int] = {}
    names: dict[tuple[str, ...], str] = {}  # one string per owner, shared by its jobs
    end = math.inf if until is None else until
    others = 0  # lines that are no record: blank, comments, not 18 numbers
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text[0] == ";":
            others += 1
            if others > B.MAX_TRACE_OTHER_LINES:
                raise TraceError(path, _too_many_others(number))
            if text:
                _header(out.header, text)
            continue
        out.records += 1
        if out.records > B.MAX_TRACE_RECORDS:
            raise TraceError(path, f"more than {B.MAX_TRACE_RECORDS:,} records (data lines), more than osep "
                                   f"reads of a log: give it a part of the log ({_PART})")
        parts = text.split(None, _MANY)  # no more pieces: a line of 30,000 fields costs no more
        # 18 pieces first: the pattern (costlier) can only match a line of 18
        if len(parts) != FIELDS or (_ASCII_RECORD if text.isascii() else _RECORD).fullmatch(text) is None:
            others += 1
            if others > B.MAX_TRACE_OTHER_LINES:
                raise TraceError(path, _too_many_others(number))
            count = len(parts)
            out.skip(NOT_NUMBERS if count == FIELDS else f"{count} fields, not {FIELDS}" if count <= _MANY
                     else f"more than {_MANY} fields, not {FIELDS}", number)
            continue
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


def _header(header: dict[str, str], text: str) -> None:
    """Keep a ``; Key: value`` line's key and value, if the key is new and there is room."""
    key, colon, value = text[1:].partition(":")
    key = key.strip()[:B.MAX_TRACE_HEADER_VALUE]
    if colon and key and key not in header and len(header) < B.MAX_TRACE_HEADER_KEYS:
        header[key] = value.strip()[:B.MAX_TRACE_HEADER_VALUE]


def _too_many_others(number: int) -> str:
    return (f"more than {B.MAX_TRACE_OTHER_LINES:,} lines that are no record (blank, comments, or not 18 "
            f"numbers) by line {number:,}: is it a log in the Standard Workload Format?")


def _name(kind: str, who: float) -> str:
    return f"{kind}{int(who)}" if 0 <= who < MAX_PROCESSORS else f"{kind}-unknown"


def read(path: Path | str, owners: str = "user", since: float = 0.0, until: float | None = None,
         limit: int | None = None, longest: float = math.inf) -> Workload:
    """A log file, plain or gzipped."""
    path = Path(path)
    with contextlib.closing(_lines(path)) as lines:  # closed also when ``limit`` stops the reading
        return parse(lines, owners, since, until, limit, longest, path)

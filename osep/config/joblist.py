"""A compact job list: a CSV file a scenario's ``[workload] csv = "jobs.csv"`` names, one job a row.

A header row names the columns, in any order: ``owner``, ``submit`` (seconds) and ``runtime``
(seconds) are required; ``cpus`` (default 1), ``memory`` (MiB), ``gpus`` and ``disk`` (KiB) (default
0) may follow, and an empty cell takes the default. Blank lines are ignored. Every cell is checked
against the bounds of a ``[[submit]]`` table; the first bad one is an error naming the file, its line,
its column and the reason, as for the scenario file itself.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from osep import bounds as B
from osep.config.toml import bound_text, check_name, show
from osep.core.model import JobId
from osep.errors import ConfigError, OsepError
from osep.files import open_regular, unreadable
from osep.sim.specs import JobSpec
from osep.sim.swf import Workload

if TYPE_CHECKING:
    from _csv import Reader

REQUIRED = ("owner", "submit", "runtime")
# column: (default, largest); all whole numbers of at least the default's floor
OPTIONAL = {"cpus": (1, B.MAX_SLOT_CPUS), "memory": (0, B.MAX_SLOT_MEMORY), "gpus": (0, B.MAX_SLOT_GPUS),
            "disk": (0, B.MAX_SLOT_DISK)}
COLUMNS = (*REQUIRED, *OPTIONAL)


class JobListError(OsepError):
    """A job list that cannot be read at all (missing, not a file, too large): the scenario names it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class _Bounded(io.RawIOBase):
    """A file read no further than ``limit`` bytes (an error past them)."""

    def __init__(self, fd: int, path: Path, limit: int) -> None:
        self.fd, self.path, self.left = fd, path, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = os.read(self.fd, len(buffer))
        self.left -= len(data)
        if self.left < 0:
            raise JobListError(f"larger than {B.MAX_JOB_LIST_BYTES:,} bytes: split the job list")
        buffer[:len(data)] = data
        return len(data)


def read_job_list(path: Path, since: float = 0.0, until: float | None = None,
                  limit: int | None = None) -> Workload:
    """The jobs submitted in ``[since, until)`` (at most ``limit``), submit times counted from
    ``since``; at most MAX_JOBS + 1 of them (enough to tell that there are too many)."""
    try:
        fd = open_regular(path)
    except (OSError, ValueError) as exc:
        raise JobListError(unreadable(exc)) from None
    raw = _Bounded(fd, path, B.MAX_JOB_LIST_BYTES)
    text = io.TextIOWrapper(io.BufferedReader(raw, 1 << 16), encoding="utf-8", newline="",
                            errors="surrogateescape")  # a byte that is not UTF-8 shows in its cell
    try:
        rows = csv.reader(text, strict=True)
        try:
            return _parse(path, rows, since, until, limit if limit is not None else B.MAX_JOBS + 1)
        except csv.Error as exc:
            raise ConfigError(path, f"line {rows.line_num}", f"not valid CSV: {exc}") from None
        except OSError as exc:
            raise JobListError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _parse(path: Path, rows: Reader, since: float, until: float | None, limit: int) -> Workload:
    header = next(rows, None)
    if header is None or not [c for c in header if c.strip()]:
        raise ConfigError(path, "line 1", f"expected a header row naming the columns ({', '.join(COLUMNS)})")
    try:
        names = [_utf8(c).strip().lower() for c in header]
    except _Bad as bad:
        raise ConfigError(path, "line 1", bad.reason) from None
    for k, name in enumerate(names):
        if name not in COLUMNS:
            close = difflib.get_close_matches(name, COLUMNS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(path, f"line 1, column {k + 1}",
                              f"unknown column {show(name)}{hint}; known: {', '.join(COLUMNS)}")
        if name in names[:k]:
            raise ConfigError(path, f"line 1, column {k + 1}", f"column {name!r} given twice")
    for name in REQUIRED:
        if name not in names:
            raise ConfigError(path, "line 1", f"no {name!r} column; required: {', '.join(REQUIRED)}")
    at = {name: k for k, name in enumerate(names)}
    width = len(names)
    o, s, r = at["owner"], at["submit"], at["runtime"]
    # (column, place in the job's shape, least, most) of each optional column given
    extras = [(at[name], place, low, high) for place, (name, (low, high)) in enumerate(OPTIONAL.items())
              if name in at]
    out = Workload()
    owners: dict[str, str] = {}  # checked names, each kept once
    numbering: dict[str, int] = {}
    end = math.inf if until is None else until
    for row in rows:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        out.records += 1
        if len(row) != width:
            raise ConfigError(path, f"line {rows.line_num}",
                              f"{len(row)} cells, but the header names {width} columns")
        column = o
        try:
            owner = owners.get(row[o])
            if owner is None:
                owner = owners[row[o]] = check_name(_utf8(row[o]).strip(), _Bad)
            column = s
            submit = _time(row[s], B.MAX_TRACE_SECONDS, zero=True)
            column = r
            runtime = _time(row[r], B.MAX_SECONDS, zero=False)
            shape = [1, 0, 0, 0]
            for column, place, low, high in extras:
                text = row[column].strip()
                if text:
                    shape[place] = _whole(text, low, high)
        except _Bad as bad:
            raise ConfigError(path, f"line {rows.line_num}, column {column + 1} ({names[column]})",
                              bad.reason) from None
        if not since <= submit < end:
            continue
        n = numbering.get(owner, 0)
        numbering[owner] = n + 1
        out.jobs.append(JobSpec(JobId(owner, 0, n), owner, submit - since, runtime, *shape))
        out.starts.append(submit)
        if len(out.jobs) >= limit:
            break
    return out


class _Bad(ConfigError):
    """A cell's reason for being refused; the reader adds where the cell is."""

    def __init__(self, reason: str) -> None:
        super().__init__(None, None, reason)


def _utf8(text: str) -> str:
    """``text`` if it was UTF-8 in the file (else a byte of it shows as a lone surrogate)."""
    bad = next((c for c in text if "\udc80" <= c <= "\udcff"), None)
    if bad is not None:
        raise _Bad(f"not UTF-8 text (byte 0x{ord(bad) - 0xDC00:02x})")
    return text


def _time(text: str, largest: float, *, zero: bool) -> float:
    # float() also reads Python's spellings, which a CSV file does not have: "1_000", and digits of
    # other scripts ("\uff15", a full-width 5). Blanks around the number are allowed.
    try:
        if not text.isascii() or "_" in text:
            raise ValueError
        value = float(text)
    except ValueError:
        raise _Bad(f"expected a number of seconds, got {show(text.strip())}") from None
    if not math.isfinite(value):
        raise _Bad(f"expected a finite number, got {show(text.strip())}")
    if value < 0 or (value == 0 and not zero):
        raise _Bad(f"must be {'at least 0' if zero else 'greater than 0'}, got {value:g}")
    if value > largest:
        raise _Bad(f"must be at most {bound_text(largest)} s, got {value:g}")
    return value


def _whole(text: str, low: int, high: int) -> int:
    digits = text[1:] if text[:1] in ("+", "-") else text  # one sign at most: int() refuses "+-5"
    if not text.isascii() or not digits.isdigit() or len(text) > 20:
        raise _Bad(f"expected a whole number, got {show(text)}")
    value = int(text)
    if not low <= value <= high:
        raise _Bad(f"must be {bound_text(low)} to {bound_text(high)}, got {value:,}")
    return value

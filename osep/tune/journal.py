"""The record of a sweep's finished runs, kept as they finish, so that a sweep run again after an
interrupt runs none of them twice.

A journal is JSON lines: a first line naming the sweep (:func:`fingerprint`: osep's version, the
history as described and the contents of every file it reads), then one line per finished run (its
period, its candidate, its figures). A run's figures depend on nothing else, so a sweep with other
candidates over the same history reuses the runs they share. A line that is not a finished run of
this sweep (cut off by the interrupt, damaged) is counted and left out, never trusted; a line is
read at most :data:`MAX_LINE` bytes at a time, whatever the file holds.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from osep import __version__
from osep.errors import ConfigError
from osep.tune.candidates import Candidate
from osep.tune.sweep import Figures, Task

FORMAT = "osep-tune-journal/1"
MAX_LINE = 64 * 1024


def fingerprint(description: dict[str, Any], inputs: Sequence[Path]) -> str:
    """What a sweep's runs depend on besides their candidates, as a SHA-256 in hex."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"osep": __version__, "history": description}, sort_keys=True).encode())
    for path in inputs:
        file_digest = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                while block := f.read(1 << 20):
                    file_digest.update(block)
        except OSError as exc:
            raise ConfigError(path, None, f"cannot read it: {exc.strerror or exc}") from None
        digest.update(file_digest.digest())
    return digest.hexdigest()


def default_path(sweep: str) -> Path:
    """Where a sweep's journal is kept unless told: the user's cache directory, by fingerprint."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "osep" / "tune" / f"{sweep[:32]}.jsonl"


class Journal:
    """The finished runs of the sweep ``sweep`` (a fingerprint) recorded in ``path``; ``fresh``:
    forget what it holds. ``warn`` is told, once, of lines left out."""

    def __init__(self, path: Path, sweep: str, warn: Callable[[str], None], fresh: bool = False) -> None:
        self.path = path
        self.sweep = sweep
        self.done: dict[tuple[str, Candidate], Figures] = {}
        self._file: IO[str] | None = None
        if not fresh and path.exists():
            self._read(warn)
        elif fresh and path.exists():
            path.unlink()

    def _read(self, warn: Callable[[str], None]) -> None:
        if not self.path.is_file():
            raise ConfigError(self.path, None, "a journal is a regular file")
        bad = 0
        try:
            with open(self.path, "rb") as f:
                head = f.readline(MAX_LINE)
                if not self._is_header(head):
                    raise ConfigError(self.path, None, "not a journal of this sweep (another history, policy file or "
                                                       "osep version): give another --journal, or --fresh")
                while line := f.readline(MAX_LINE):
                    if not line.endswith(b"\n"):  # longer than a run's line, or cut off
                        bad += 1
                        while line and not line.endswith(b"\n"):
                            line = f.readline(MAX_LINE)
                        continue
                    entry = _entry(line)
                    if entry is None:
                        bad += 1
                    else:
                        self.done[entry[0]] = entry[1]
        except OSError as exc:
            raise ConfigError(self.path, None, f"cannot read it: {exc.strerror or exc}") from None
        if bad:
            warn(f"{self.path}: {bad:,} line(s) that are not a finished run left out (they run again)")

    def _is_header(self, line: bytes) -> bool:
        try:
            head = json.loads(line)
        except ValueError:
            return False
        return isinstance(head, dict) and head.get("format") == FORMAT and head.get("sweep") == self.sweep

    def record(self, task: Task, result: Figures) -> None:
        """Keep one finished run (written through at once: an interrupt loses none before it)."""
        self.done[task] = result
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            new = not self.path.exists() or self.path.stat().st_size == 0
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (held open for the sweep)
            if new:
                self._file.write(json.dumps({"format": FORMAT, "sweep": self.sweep}) + "\n")
        period, candidate = task
        self._file.write(json.dumps({"period": period, "candidate": candidate.as_dict(),
                                     "figures": result.as_dict()}, allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _entry(line: bytes) -> tuple[Task, Figures] | None:
    try:
        data = json.loads(line)
        period = data["period"]
        if period not in ("tune", "check"):
            return None
        return (period, Candidate.from_dict(data["candidate"])), Figures.from_dict(data["figures"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None

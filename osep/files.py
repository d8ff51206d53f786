"""Opening files anyone may have put in osep's way: policy and scenario files, the state file, logs.

Only regular files are read. A FIFO put where a file should be would block the opening (or the
reading) forever, a device such as ``/dev/zero`` would never end, a directory is no file at all:
each is refused before a byte is read, and opening never waits. No more than a given bound is read.
Each reader turns the errors raised here into its own one-line error.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegular(OSError):
    """The path names something other than a regular file (``directory``: a directory)."""

    def __init__(self, path: Path, directory: bool) -> None:
        super().__init__(f"{path}: {'a directory' if directory else 'not a regular file'}")
        self.directory = directory


def _check(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegular(path, stat.S_ISDIR(mode))


def regular(path: Path) -> os.stat_result:
    """What ``path`` is, if it is a regular file osep may read: FileNotFoundError if there is none,
    :class:`NotRegular` if it is something else, OSError (ValueError for a NUL in the name) if it
    cannot be looked at."""
    info = path.stat()
    _check(path, info.st_mode)
    return info


def unreadable(exc: OSError | ValueError, directory: str = "is a directory, not a file") -> str:
    """Why :func:`open_regular` or :func:`read_regular` refused a path, as a reader's one-line error
    says it (``directory``: what it says of a directory)."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, NotRegular):
        return directory if exc.directory else "not a regular file"
    if isinstance(exc, ValueError):  # os.open refuses a name with a NUL in it
        return "cannot read: the name has a NUL character"
    return f"cannot read: {exc.strerror or exc}"


def open_regular(path: Path) -> int:
    """A descriptor of the regular file at ``path``, open for reading, without waiting; raises as
    :func:`regular` does."""
    regular(path)  # before opening: a FIFO is not even opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        _check(path, os.fstat(fd).st_mode)  # and again once open: it may have been swapped
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit + 1`` of them (so that a file
    longer than ``limit`` shows as such); raises as :func:`regular` does."""
    fd = open_regular(path)
    try:
        data = bytearray()
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
        return bytes(data)
    finally:
        os.close(fd)

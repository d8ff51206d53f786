"""The state file of one running osep (``OSEP_STATE_FILE``) on disk: read, written whole, and kept
beside an exclusive lock that keeps a second osep out. What it holds, and the checks it must pass, are
:mod:`osep.htcondor.state_format`'s.

A file that cannot be read or fails a check is left as it is. Writing is whole: a new file beside it
(never through a link), flushed to disk, renamed over the old one, and the directory flushed, so that
a crash at any point leaves the old file or the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Callable
from pathlib import Path

from osep.files import NotRegular, read_regular, regular
from osep.htcondor.state_format import MAX_BYTES, SavedState, StateError, decode, encode

TEMP_SUFFIX = ".osep-tmp"
LOCK_SUFFIX = ".lock"


def read_state(path: Path) -> SavedState:
    """The state in ``path`` (empty if there is no such file); :class:`StateError` if it cannot be
    read or fails any check."""
    try:
        # Without waiting: a FIFO or a device put there must not hang osep (see osep.files).
        raw = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return SavedState()
    except NotRegular:
        raise StateError(path, None, "is not a regular file") from None
    except (OSError, ValueError) as exc:
        raise StateError(path, None, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(raw) > MAX_BYTES:
        raise StateError(path, None, f"is larger than {MAX_BYTES // 2**20} MiB; osep writes far less")
    return decode(raw, path)


def write_state(path: Path, state: SavedState) -> None:
    """Replace ``path`` with ``state``, durably; OSError if that cannot be done (the old file is
    then still whole)."""
    data = encode(state)
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # a leftover of a crash, or anything else put there: never written through
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


# -- the file and its lock --------------------------------------------------------------------------


class StateFile:
    """The state file of one running osep: :meth:`open` takes its lock (held until :meth:`close` or
    the process ends, however it ends) and reads it; :meth:`save` replaces it."""

    def __init__(self, path: Path, holder: Callable[[], str] | None = None) -> None:
        """:class:`StateError` if ``path`` cannot name a file (``/``, ``.``, ``..``, empty): the lock
        and the temporary file go beside it, under names made from its own."""
        if path.name in ("", ".", ".."):
            raise StateError(path, None, "names a directory, not a file: the state file is a file in "
                             "a directory osep may write in")
        self.path = path
        self.lock_path = path.with_name(path.name + LOCK_SUFFIX)
        self._holder = holder if holder is not None else _holder
        self._fd: int | None = None

    def open(self) -> SavedState:
        """Lock and read the file; :class:`StateError` if either fails. Something other than a
        regular file in its place (a directory, a FIFO, a device) is refused before the lock file is
        made beside it."""
        try:
            regular(self.path)
        except NotRegular:
            raise StateError(self.path, None, f"is not a regular file{_UNTIL}") from None
        except (OSError, ValueError):
            pass  # missing (a first run), or unreadable: the lock or the reading says which
        self.lock()
        try:
            return read_state(self.path)
        except StateError as exc:
            self.close()
            raise StateError(exc.path, exc.key, f"{exc.reason}{_UNTIL}") from None

    def lock(self) -> None:
        """Take the exclusive lock beside the state file, or say who has it."""
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # exist_ok covers a directory only
            raise StateError(self.path, None, f"cannot be made: {self.path.parent} is not a "
                             "directory") from None
        except (OSError, ValueError) as exc:
            raise StateError(self.path, None, f"cannot be made: its directory cannot be: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except (OSError, ValueError) as exc:
            raise StateError(self.lock_path, None, f"cannot be opened to lock the state file: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = printable(os.pread(fd, 200, 0))
            except OSError:
                holder = ""
            os.close(fd)
            raise StateError(self.path, None, f"in use by another osep ({holder or 'which, unknown'}): "
                             "this one does nothing while that one runs") from None
        except OSError as exc:
            os.close(fd)
            raise StateError(self.lock_path, None, f"cannot be locked: {exc.strerror or exc}") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (self._holder() + "\n").encode("utf-8", "replace"), 0)
        except OSError:
            pass  # who holds it is for the message of another osep only
        self._fd = fd

    def save(self, state: SavedState) -> None:
        """Write ``state``; :class:`StateError` if it cannot be written."""
        try:
            write_state(self.path, state)
        except (OSError, ValueError) as exc:
            raise StateError(self.path, None, f"cannot be written: {_reason(exc)}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_UNTIL = '; osep sets and lifts no ceiling until it is repaired or moved away (see docs/operating.md, "The state file")'


def _holder() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        name = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{name}"
    return str(exc)


def printable(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return "".join(c if c.isprintable() else "?" for c in text)[:120]

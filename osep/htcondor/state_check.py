"""Whether a state file (``OSEP_STATE_FILE``) would let ``osep run`` start and act, found without
changing it or taking it from an osep that runs on it (:mod:`osep.htcondor.state` keeps the file and
its lock).

Checked: that there is one (a real run needs it); that its directory can be written in, or made (the
file is replaced whole through a temporary file beside it, so the directory is what must be
writable); that what is there reads as a state file; and that no osep holds its lock. The lock is
tested by taking it *shared* for an instant and letting it go at once: an osep that runs holds it
exclusively, so the test fails and nothing of that osep's changes (its lock file, with its name and
process, is opened read-only and never written). An osep that starts in that very instant finds the
file in use and stops with its one line, as it does beside any other osep. A lock file that is not
there is held by no one, and is not made.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from osep.htcondor.rights import FAIL, OK
from osep.htcondor.state import LOCK_SUFFIX, printable, read_state
from osep.htcondor.state_format import StateError


def inspect(path: Path | None) -> tuple[str, str]:
    """(status, detail) of the state file ``path`` for a real run: OK, or FAIL and why."""
    if path is None:
        return FAIL, "none set (OSEP_STATE_FILE, --state-file): a real run needs one to act"
    if path.name in ("", ".", ".."):
        return FAIL, f"{path} names a directory, not a file"
    problem = _directory(path.parent)
    if problem is not None:
        return FAIL, problem
    try:
        saved = read_state(path)
    except StateError as exc:
        return FAIL, f"{exc.key}: {exc.reason}" if exc.key else exc.reason
    holder = _holder(path.with_name(path.name + LOCK_SUFFIX))
    if holder is not None:
        return FAIL, f"in use by another osep ({holder or 'which, unknown'}): a run would not start beside it"
    if not path.exists():
        return OK, "not there yet: the first run makes it"
    ceilings = sum(len(c) for c in saved.ceilings.values())
    return OK, (f"readable, not locked; {ceilings} ceiling(s) and {len(saved.vacates)} vacate(s) "
                "on record")


def _directory(folder: Path) -> str | None:
    """Why the state file could not be written in ``folder`` (None: it could). A folder that is not
    there is made by the run: the nearest one that is must be writable."""
    here = folder
    while not here.exists():
        if here.parent == here:
            break
        here = here.parent
    if not here.is_dir():
        return f"{here} is not a directory"
    if not os.access(here, os.W_OK | os.X_OK):
        return f"cannot write in {here}"
    return None


def _holder(lock: Path) -> str | None:
    """Who holds ``lock`` ("" if it does not say), or None if no one does."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # not there (no one holds it), or not a file osep could lock either: the run says
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            with contextlib.suppress(OSError):
                return printable(os.pread(fd, 200, 0))
            return ""
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)

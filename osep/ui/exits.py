"""The exit statuses of every ``osep`` command: one table, held here as data (the documentation's
table is made from :data:`STATUSES`), and :func:`status_of`, which turns osep's own errors into one.

A status means the same in every command: an unreachable pool is :data:`POOL` in ``report`` as in
``run --once``, ``release``, ``shares --from-pool`` and ``doctor``; anything wrong in what the user
gave (an option, a file, a knob, a name, a log) is :data:`USAGE`.
"""

from __future__ import annotations

from dataclasses import dataclass

from osep.errors import OsepError, PoolError


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """One exit status: its number, a name to refer to it by, and what it means."""

    code: int
    name: str
    meaning: str


DONE = ExitStatus(0, "done", "done, and all well (doctor: a real run would work; run --once: the "
                  "cycle finished)")
POOL = ExitStatus(1, "pool", "the pool could not be read or acted on (a daemon unreachable, a right "
                  "refused, a cycle that did not finish), or doctor found something that stops a "
                  "real run")
USAGE = ExitStatus(2, "usage", "usage or input error: a bad option, file, knob, name or log")
INTERRUPTED = ExitStatus(130, "interrupted", "interrupted (Ctrl-C, SIGINT)")

STATUSES: tuple[ExitStatus, ...] = (DONE, POOL, USAGE, INTERRUPTED)


def status_of(exc: OsepError) -> int:
    """The status an osep error ends a command with: :data:`POOL` for the pool's errors
    (:class:`osep.errors.PoolError`), :data:`USAGE` for any other (a file, a knob, a log)."""
    return POOL.code if isinstance(exc, PoolError) else USAGE.code

"""The one exception hierarchy of osep.

The CLI turns an :class:`OsepError` into a one-line message and a non-zero exit; anything else that
escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class OsepError(Exception):
    """Base class of every error osep raises on purpose."""


class ConfigError(OsepError):
    """A policy or scenario file (or an option standing in for one) is wrong.

    Carries the file and the dotted key so that an administrator can go straight to the line at fault.
    """

    def __init__(self, path: Path | str | None, key: str | None, reason: str) -> None:
        self.path = str(path) if path is not None else None
        self.key = key
        self.reason = reason
        super().__init__(str(self))

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str | None, str | None, str]]:
        """Pickled as its three parts (a worker process of a sweep raises it to its parent)."""
        return type(self), (self.path, self.key, self.reason)

    def __str__(self) -> str:
        where = self.path or "<options>"
        if self.key:
            return f"{where}: {self.key}: {self.reason}"
        return f"{where}: {self.reason}"


class PoolError(OsepError):
    """The pool could not be read or acted on (a daemon down, a query refused)."""


class UnknownOutcome(PoolError):
    """A command was sent and no answer came back: it may have been carried out, or not."""


class LogError(OsepError):
    """A log to replay or report on cannot be read at all (missing, unreadable, not a log).

    Problems inside a readable log (a cut-off event, an unknown event type) are warnings, not this.
    """

"""The last few results of a pure function of a frozen object and plain values.

A decision works out some things once per pool capacity: each owner's resolved share, and ``p``. A
cycle on a pool whose capacity did not change finds them here instead of working them out again.
Keyed by the object itself (compared by identity: settings and share tables are frozen, and are
not changed in place) and by the values (compared by equality)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """The ``keep`` results put last, the latest first."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._entries: list[tuple[object, tuple[Hashable, ...], V]] = []

    def get(self, of: object, key: tuple[Hashable, ...]) -> V | None:
        """The result put for ``of`` (that object) and ``key`` (equal values), or None."""
        for entry in self._entries:
            if entry[0] is of and entry[1] == key:
                return entry[2]
        return None

    def put(self, of: object, key: tuple[Hashable, ...], value: V) -> V:
        """Keep ``value`` as the result for ``of`` and ``key``; returns it."""
        self._entries.insert(0, (of, key, value))
        del self._entries[self.keep:]
        return value

"""Merging several job event logs (one per user, or a schedd's) into one stream in time order."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import chain

from osep.replay.events import RANK, LogEvent, Row


def merge(streams: Iterable[Iterator[LogEvent]]) -> Iterator[LogEvent]:
    """One stream in time order. Each log keeps its own order; between logs, events of the same
    second that end a run come before the others."""
    return heapq.merge(*streams, key=lambda e: (e.time, RANK[e.kind]))


def merge_rows(streams: Iterable[Iterable[list[Row]]]) -> Iterator[Row]:
    """:func:`merge` for logs read as rows (each stream a file's lists of rows): what
    ``heapq.merge`` of the rows gives (rows order themselves), but a list at a time while every log
    is in order, so that the work per row is done in C."""
    return chain.from_iterable(_merged_lists([iter(s) for s in streams]))


def _merged_lists(streams: list[Iterator[list[Row]]]) -> Iterator[list[Row]]:
    """The rows of ``streams`` in ``heapq.merge``'s order, in lists. Each stream keeps the rows it
    has read and not given out, and at least its last one while it may have more; every row below
    the least of those last rows (``horizon``) can be given out, sorted, since no unread row is
    below it. A stream out of order (a damaged log) hands the rest to ``heapq.merge``, which from
    there gives what it would have given from the start: rows are all different, so its order
    depends only on the rows at the heads."""
    kept: list[list[Row]] = []
    live: list[Iterator[list[Row]] | None] = []
    for each in streams:
        kept.append([])
        live.append(each)
    while True:
        # Read on until every stream that may have more holds at least two rows (or one, which
        # is then its last read: it stays back as that stream's bound).
        for k, stream in enumerate(live):
            rows = kept[k]
            while stream is not None and len(rows) < 2:
                more = next(stream, None)
                if more is None:
                    live[k] = None
                    break
                if not more:
                    continue
                joined = rows + more
                if joined != sorted(joined):
                    yield from _rest(kept, live, k, more)
                    return
                kept[k] = rows = joined
        bounds = [rows[-1] for rows, stream in zip(kept, live, strict=True) if stream is not None]
        if not bounds:  # every stream read to its end
            out = [row for rows in kept for row in rows]
            out.sort()
            if out:
                yield out
            return
        horizon = min(bounds)
        out = []
        for k, rows in enumerate(kept):
            cut = bisect_left(rows, horizon)
            if cut:
                out += rows[:cut]
                kept[k] = rows[cut:]
        out.sort()
        yield out


def _rest(kept: list[list[Row]], live: list[Iterator[list[Row]] | None], k: int, more: list[Row]
          ) -> Iterator[list[Row]]:
    """``heapq.merge`` of what every stream has not given out yet (stream ``k`` with ``more``, the
    list that put it out of order, read after what it kept)."""
    tails = []
    for j, (rows, stream) in enumerate(zip(kept, live, strict=True)):
        parts: list[Iterable[list[Row]]] = [[rows]]
        if j == k:
            parts.append([more])
        if stream is not None:
            parts.append(stream)
        tails.append(chain.from_iterable(chain.from_iterable(parts)))
    for row in heapq.merge(*tails):
        yield [row]

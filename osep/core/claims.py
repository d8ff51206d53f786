"""Step two of a decision: hand the free room to the owners below target.

Free room is a free static slot, or the unclaimed part of a partitionable slot, not kept for anyone.
Each is claimed for the owner with the largest gap (:func:`osep.core.wants.beneficiaries`) that has
an idle job fitting it, one job at a time, the places taken by name. No job is touched for these,
and they do not count against ``p``.
"""

from __future__ import annotations

import heapq
from collections.abc import Container, Iterable

from osep.core.ledger import Holds, Ledger, Rank, reason_for
from osep.core.plan import Claim, OwnerView, claim
from osep.core.resources import EPS, NO_ROOM, Room, fits, less
from osep.core.wants import WantsBook, beneficiaries

_FREE_ROOM = "free room to the owner furthest below target"


def claim_free_room(free: Iterable[tuple[str, Room]], wants: WantsBook, ledger: Ledger,
                    views: dict[str, OwnerView], partitionable: Container[str],
                    left: dict[str, Room] | None = None) -> list[Claim]:
    """Hand ``free`` room (place and room, in the order given, read only as far as needed) to the
    owners ``wants`` lists, largest gap first, one job at a time. Updates ``ledger`` and ``wants``
    for what it hands out, and puts in ``left`` the room each partitionable place it looked at has
    left. With flat shares in one resource, leaves the beneficiaries' heap in ``wants.ranked``."""
    claims: list[Claim] = []
    if not wants:
        return claims
    heap = beneficiaries(wants, ledger)
    if ledger.groups is None and ledger.index is not None:
        wants.ranked = heap  # kept up to date below: the claims push and pop this very list
    if not heap:
        return claims
    passed: list[tuple[Rank, str]] = []
    rule = _FREE_ROOM
    # No job asks for less than this in any resource: room below it is no use to anyone, and is
    # passed over without asking every owner (a pool has many nearly full machines).
    smallest = wants.smallest()
    tree = ledger.groups is not None
    holds = Holds()
    for place, offered in free:
        room = offered
        # Owners that cannot use this room are set aside and come back for the next one.
        while heap and fits(smallest, room):
            rank, owner = heapq.heappop(heap)
            if tree and rank != ledger.owed(owner):
                # A group's member gained: its siblings rank lower now (ranks only fall here).
                if ledger.gap(owner) > EPS:
                    heapq.heappush(heap, (ledger.owed(owner), owner))
                continue
            wanted = wants[owner]
            shape = wanted.fitting(room)
            if shape is None:
                passed.append((rank, owner))
                continue
            wanted.consume(shape)
            claims.append(claim(place, owner, reason_for(rule, ledger, views, owner), shape, None))
            ledger.give(owner, holds[shape])
            gap = ledger.gap(owner)
            if gap > EPS and wanted:  # back where it ranks now (as beneficiaries ranks it)
                heapq.heappush(heap, (ledger.owed(owner) if tree else -gap, owner))
            if place not in partitionable:
                room = NO_ROOM
                break
            room = less(room, shape)
        if left is not None and place in partitionable:
            left[place] = room
        for entry in passed:
            heapq.heappush(heap, entry)
        passed.clear()
        if not heap:
            break
    return claims


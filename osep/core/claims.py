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
from osep.core.plan import Claim, OwnerView, claim, reason
from osep.core.resources import EPS, NO_ROOM, ZERO, Room, fits, less
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
        wants.ranked = heap  # (kept up to date by _claim_flat)
        return _claim_flat(free, heap, wants, ledger, partitionable, left) if heap else claims
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


def _claim_flat(free: Iterable[tuple[str, Room]], heap: list[tuple[Rank, str]], wants: WantsBook,
                ledger: Ledger, partitionable: Container[str], left: dict[str, Room] | None
                ) -> list[Claim]:
    """:func:`claim_free_room` with flat shares in one resource: the same steps, with what the
    ledger's and the book's methods do written out (a simulated pool claims free room at nearly
    every cycle, a few places each time)."""
    claims: list[Claim] = []
    passed: list[tuple[Rank, str]] = []
    rule = _FREE_ROOM
    smallest = wants.smallest()
    holds = Holds()
    holding, targets, index = ledger.holding, ledger.targets, ledger.index
    assert index is not None
    made = wants.made
    pop, push = heapq.heappop, heapq.heappush
    for place, offered in free:
        room = offered
        while heap and fits(smallest, room):
            rank, owner = pop(heap)
            wanted = made.get(owner) or wants[owner]
            shapes = wanted.shapes
            if len(shapes) == 1:  # Wants.fitting, for the one shape most owners' idle jobs have
                shape = next(iter(shapes))
                if not fits(shape, room):
                    passed.append((rank, owner))
                    continue
            else:
                found = wanted.fitting(room)
                if found is None:
                    passed.append((rank, owner))
                    continue
                shape = found
            # Wants.consume
            count = shapes[shape] - 1
            if count:
                shapes[shape] = count
            else:
                del shapes[shape]
            # reason_for's figures (an owner's view has its target), then Ledger.give and Ledger.gap
            a = holding.get(owner, ZERO)
            aim = targets[owner]
            claims.append(claim(place, owner, reason(rule, aim, a[index], None, None), shape, None))
            b = holds[shape]
            holding[owner] = now = (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])
            gap = aim - now[index]
            if gap > EPS and shapes:  # back where it ranks now (as beneficiaries ranks it)
                push(heap, (-gap, owner))
            if place not in partitionable:
                room = NO_ROOM
                break
            room = less(room, shape)
        if left is not None and place in partitionable:
            left[place] = room
        if passed:
            for entry in passed:
                push(heap, entry)
            passed.clear()
        if not heap:
            break
    return claims

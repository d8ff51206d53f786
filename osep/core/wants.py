"""The wants book: what every owner below target still wants room for in a decision, and the
beneficiaries ranked by how much they are owed.

Claims of free room (:mod:`osep.core.claims`) and vacates (:mod:`osep.core.vacates`) consume it one
job at a time, both in the order :func:`beneficiaries` gives: largest gap first (with an owner tree,
the group owed most first, top-down), ties by owner name.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from osep.core.ledger import Ledger, Rank
from osep.core.plan import OwnerView
from osep.core.resources import EPS, Room, Shape, fits
from osep.core.tally import Tally


class Wants:
    """The idle jobs of one owner that no room has been found for yet, counted per shape, the shapes
    in queue order (of their first job).

    Only counts per shape are kept: which of the owner's idle jobs ends up in the room is the
    negotiator's business; the policy only needs to know that one of them can use it.
    """

    __slots__ = ("shapes",)

    def __init__(self, tally: Tally, already_served: int) -> None:
        counts = tally.shapes
        if len(counts) > 1:  # queue order matters only between shapes (most owners have one)
            self.shapes: dict[Shape, int] = {s: counts[s] for s in sorted(counts, key=tally.first)}
        else:
            self.shapes = dict(counts)
        # Kept room will take some of these jobs; drop the smallest shapes first, they fit most.
        for _ in range(min(already_served, tally.idle)):
            self.consume(min(self.shapes))

    def consume(self, shape: Shape) -> None:
        left = self.shapes[shape] - 1
        if left:
            self.shapes[shape] = left
        else:
            del self.shapes[shape]

    def __bool__(self) -> bool:
        return bool(self.shapes)

    def fitting(self, room: Room) -> Shape | None:
        """The largest shape that fits ``room`` (small jobs stay available for small rooms)."""
        best: Shape | None = None
        for shape in self.shapes:
            if fits(shape, room) and (best is None or shape > best):
                best = shape
        return best


class WantsBook:
    """What every owner below target still wants: :class:`Wants` for each of ``owners`` (those
    with idle jobs beyond the room kept for them, in name order), each made when it is first asked
    for (a pool has thousands of owners below target; a cycle serves a few). One not made yet
    wants something: its idle jobs outnumber the rooms kept for it."""

    __slots__ = ("_reserved", "_tallies", "made", "owners", "ranked")

    def __init__(self, owners: list[str], tallies: Mapping[str, Tally],
                 views: Mapping[str, OwnerView]) -> None:
        self.owners = owners
        self._tallies = tallies
        self._reserved = views
        self.made: dict[str, Wants] = {}
        # With flat shares, the beneficiaries as the claims of free room left them, in a heap by
        # rank (what beneficiaries gives then); None until claims are made.
        self.ranked: list[tuple[Rank, str]] | None = None

    def __getitem__(self, owner: str) -> Wants:
        wants = self.made.get(owner)
        if wants is None:
            wants = self.made[owner] = Wants(self._tallies[owner], self._reserved[owner].reserved)
        return wants

    def __bool__(self) -> bool:
        return bool(self.owners)

    def wanting(self) -> list[str]:
        """The owners that still want something, in name order."""
        made = self.made
        if not made:
            return self.owners
        return [o for o in self.owners if o not in made or made[o]]

    def smallest(self) -> Shape:
        """What no idle job of these owners asks for less of, in any resource: of each resource,
        the least any of their idle jobs' shapes asks for (those kept room will take included, so
        it may be less than what they still want). Reads the tallies: no :class:`Wants` is made."""
        tallies = self._tallies
        cpus, memory, gpus, disk = map(min, zip(*(s for o in self.owners for s in tallies[o].shapes),
                                                 strict=True))
        return (cpus, memory, gpus, disk)



def beneficiaries(wants: WantsBook, ledger: Ledger,
                  passed: set[str] | None = None) -> list[tuple[Rank, str]]:
    """The owners of ``wants`` still below target and wanting, not ``passed`` over, in a heap by
    :meth:`Ledger.owed` (flat: the gap negated, a float)."""
    owners = wants.wanting()
    heap: list[tuple[Rank, str]]
    if ledger.groups is None:  # flat: the rank is the gap negated (Ledger.owed), worked out once
        heap = [(-g, o) for o, g in zip(owners, ledger.gaps_of(owners), strict=True)
                if g > EPS and (passed is None or o not in passed)]
    else:
        heap = [(ledger.owed(o), o) for o in owners
                if ledger.gap(o) > EPS and (passed is None or o not in passed)]
    heapq.heapify(heap)
    return heap

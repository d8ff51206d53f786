"""The one book of reservations and holds, kept by every pool adapter under the same rules.

A reservation says that room on a place is on its way to an owner for one job of a given shape. The
adapter shows it on its snapshot (:attr:`osep.core.model.Snapshot.kept`), so that the policy counts
the room as the owner's and does not vacate twice for the same deficit. A reservation ends when the
negotiator hands its room over (:meth:`ReservationBook.take`), when its owner runs as many jobs as
it did when it was made plus the others made for it that cycle, when its owner has no idle job left
to put there, or ``lifetime`` seconds after it was made. A hold caps how many more cores an owner may
be given until the next cycle: a live pool turns it into a ceiling, the simulated negotiator asks
:meth:`ReservationBook.may_match`. Time is always passed in: each adapter uses its own single clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, cast

from osep.core.drafts import maker
from osep.core.model import Kept, Slot
from osep.core.resources import ONE_CORE, Room, Shape, fits, less


@dataclass(frozen=True, slots=True)
class Reservation:
    owner: str
    slot: str  # the place: a static slot or a partitionable slot
    expires: float
    until_running: int  # fulfilled once the owner runs at least this many jobs
    shape: Shape = ONE_CORE


class Places(Protocol):
    """What :meth:`ReservationBook.mark` reads of a pool (its :class:`osep.core.view.PoolView`)."""

    @property
    def slots(self) -> Mapping[str, Slot]: ...

    def runs_on(self, name: str) -> bool:
        """Whether a job runs on the slot ``name``."""
        ...

    def room_on(self, place: str) -> Room:
        """What the partitionable slot ``place`` has for a new job, its leaving jobs gone."""
        ...


# ``Reservation(...)`` with every field given, positionally, the fast way (the book makes one each
# time it hands a reservation out: to the negotiator at every handover).
_reservation = cast(Callable[[str, str, float, int, Shape], Reservation], maker(Reservation))


class _Entry:
    """A reservation as the book keeps it: the owner's running count it ends at moves with
    handovers, in place (a :class:`Reservation` is made only when one is handed out)."""

    __slots__ = Reservation.__slots__

    def __init__(self, owner: str, slot: str, expires: float, until_running: int,
                 shape: Shape) -> None:
        self.owner = owner
        self.slot = slot
        self.expires = expires
        self.until_running = until_running
        self.shape = shape

    def frozen(self) -> Reservation:
        """This reservation as it stands (:mod:`osep.core.drafts`)."""
        return _reservation(self.owner, self.slot, self.expires, self.until_running, self.shape)


class ReservationBook:
    """The reservations in the order they were made, with each place's and each owner's in the same
    order beside them, so that a handover looks only at its place's and its owner's reservations
    (a simulated week hands over some 460,000 slots, with a hundred reservations standing)."""

    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        # Each a dictionary used as an ordered set: an entry hashes by identity.
        self._entries: dict[_Entry, None] = {}
        self._at: dict[str, dict[_Entry, None]] = {}  # place -> its reservations
        self._of: dict[str, dict[_Entry, None]] = {}  # owner -> its reservations
        self._this_cycle: dict[str, int] = {}
        self._holds: dict[str, int] = {}

    # -- reservations ---------------------------------------------------------------------------

    def _add(self, entry: _Entry) -> None:
        self._entries[entry] = None
        at = self._at.get(entry.slot)
        if at is None:
            self._at[entry.slot] = {entry: None}
        else:
            at[entry] = None
        of = self._of.get(entry.owner)
        if of is None:
            self._of[entry.owner] = {entry: None}
        else:
            of[entry] = None

    def _drop(self, entry: _Entry) -> None:
        del self._entries[entry]
        at = self._at[entry.slot]
        del at[entry]
        if not at:
            del self._at[entry.slot]
        of = self._of[entry.owner]
        del of[entry]
        if not of:
            del self._of[entry.owner]

    def _keep_only(self, kept: Iterable[_Entry]) -> None:
        """The book holds ``kept`` (in the order made), and nothing else."""
        self._entries = {}
        self._at = {}
        self._of = {}
        for entry in kept:
            self._add(entry)

    def reserve(self, slot: str, owner: str, now: float, running: int,
                shape: Shape = ONE_CORE) -> None:
        """Keep room for a job of ``shape`` on ``slot`` for ``owner``, which runs ``running`` jobs
        now."""
        made = self._this_cycle.get(owner, 0) + 1
        self._this_cycle[owner] = made
        self._add(_Entry(owner, slot, now + self.lifetime, running + made, shape))

    def expire(self, now: float, running: Mapping[str, int], idle: Mapping[str, int]
               ) -> list[Reservation]:
        """Drop what has ended by the rules above, given what each owner runs and has idle now;
        returns the reservations that ran out of time (the others ended as they should). Starts a
        new cycle for :meth:`reserve`."""
        self._this_cycle.clear()
        if not self._entries:
            return []
        kept: list[_Entry] = []
        timed_out: list[Reservation] = []
        for entry in self._entries:
            if entry.expires < now:
                timed_out.append(entry.frozen())
            elif running.get(entry.owner, 0) < entry.until_running and idle.get(entry.owner, 0) > 0:
                kept.append(entry)
        if len(kept) < len(self._entries):
            self._keep_only(kept)
        return timed_out

    def mark(self, places: Places) -> tuple[tuple[Kept, ...], tuple[Reservation, ...]]:
        """Every pending reservation whose room the pool still shows, as kept on its place; and the
        reservations that end here because it does not (their room was taken or is gone).

        A static slot's room is there while the slot is and runs no job (its victim leaving does not
        count); a partitionable slot's while what it has for a new job (:meth:`Places.room_on`,
        less the room of the reservations before it there, in the order made) still fits the job.
        Room taken by anyone else, or a machine gone, ends its reservation in the cycle that sees it,
        so that the owner's deficit is planned again at once instead of hidden behind room that is
        not there."""
        if not self._entries:
            return (), ()
        slots = places.slots
        left: dict[str, Room] = {}  # partitionable place -> its room not yet kept for anyone
        static_kept: set[str] = set()
        out: list[Kept] = []
        lost: list[_Entry] = []
        for res in self._entries:
            place = slots.get(res.slot)
            if place is None or place.parent is not None:
                lost.append(res)
            elif place.partitionable:
                room = left.get(res.slot)
                if room is None:
                    room = places.room_on(res.slot)
                if fits(res.shape, room):
                    left[res.slot] = less(room, res.shape)
                    out.append(Kept(res.owner, res.slot, res.shape))
                else:
                    lost.append(res)
            elif places.runs_on(res.slot) or res.slot in static_kept:
                lost.append(res)
            else:
                static_kept.add(res.slot)
                out.append(Kept(res.owner, res.slot, res.shape))
        for res in lost:
            self._drop(res)
        return tuple(out), tuple(res.frozen() for res in lost)

    def take(self, slot: str, now: float) -> Reservation | None:
        """The reservation ``slot`` is kept under, if one still stands; it ends here, whether or
        not its owner has a job that fits (a negotiator hands a slot over once)."""
        at = self._at.get(slot)
        if at is None:
            return None
        entry = next(iter(at))
        self._drop(entry)
        return entry.frozen() if now <= entry.expires else None

    def take_fitting(self, slot: str, now: float, room: Room) -> Reservation | None:
        """Like :meth:`take`, for room on a partitionable slot: the first reservation there whose
        job fits what ``room`` the slot has unclaimed now (the others wait for their room)."""
        at = self._at.get(slot)
        if at is None:
            return None
        found: _Entry | None = None
        ended: list[_Entry] = []
        for entry in at:
            if entry.expires < now:
                ended.append(entry)  # lapsed: ends here, without standing in the way of the others
            elif found is None and fits(entry.shape, room):
                found = entry
        for entry in ended:
            self._drop(entry)
        if found is None:
            return None
        self._drop(found)
        return found.frozen()

    def standing(self) -> tuple[Reservation, ...]:
        """The reservations not ended yet (some may have run out of time: see :meth:`take`)."""
        return tuple(entry.frozen() for entry in self._entries)

    def kept_places(self) -> Counter[str]:
        """How many reservations stand on each place (of :meth:`standing`, without making them)."""
        return Counter({place: len(at) for place, at in self._at.items()})

    def entries(self) -> list[Reservation]:
        """The reservations standing, as a state file keeps them (:meth:`standing`, as a list)."""
        return list(self.standing())

    def restore(self, saved: Iterable[Reservation]) -> None:
        """Stand exactly ``saved`` (what :meth:`entries` gave), in its order."""
        self._keep_only(_Entry(r.owner, r.slot, r.expires, r.until_running, r.shape) for r in saved)

    def handed_over(self, taken: Reservation) -> None:
        """A job of the owner started on the slot ``taken`` kept: that raises the owner's running
        count by one, which must not fulfil the owner's reservations that would have ended before
        this one (their slots have not been handed over)."""
        of = self._of.get(taken.owner)
        if of is None:
            return
        bound = taken.until_running
        for entry in of:
            if entry.until_running <= bound:
                entry.until_running += 1

    # -- holds ----------------------------------------------------------------------------------

    def hold(self, holds: Mapping[str, int]) -> None:
        """Replace the holds: each owner named may be given that many more cores until the next
        call."""
        self._holds = dict(holds)

    @property
    def holds(self) -> dict[str, int]:
        return dict(self._holds)

    def holding(self) -> bool:
        """Whether any owner is held (``bool(holds)`` without a copy)."""
        return bool(self._holds)

    def pending(self) -> bool:
        """Whether any reservation stands (``bool(standing())`` without a copy)."""
        return bool(self._entries)

    def may_match(self, owner: str, cpus: int = 1) -> bool:
        allowed = self._holds.get(owner)
        return allowed is None or allowed >= cpus

    def may_match_any(self, owners: Collection[str]) -> bool:
        """Whether any of ``owners`` may be given a core (``may_match`` of each, at most one call
        per owner held: more owners than are held means one of them is not held)."""
        holds = self._holds
        if len(owners) > len(holds):
            return True
        return any(holds.get(owner, 1) >= 1 for owner in owners)

    def allowance(self, owner: str) -> int | None:
        """How many more cores ``owner`` may be given (None: it is not held)."""
        return self._holds.get(owner)

    def matched(self, owner: str, cpus: int = 1) -> None:
        """``owner`` was given ``cpus`` more cores: that much less of its allowance, if it is held."""
        allowed = self._holds.get(owner)
        if allowed is not None:
            self._holds[owner] = allowed - cpus

    def clear(self) -> None:
        self._entries.clear()
        self._at.clear()
        self._of.clear()
        self._this_cycle.clear()
        self._holds.clear()

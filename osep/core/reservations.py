"""The one book of reservations and holds, kept by every pool adapter under the same rules.

A reservation says that room on a place (a static slot, or part of a partitionable slot) is on its
way to an owner for one job of a given shape: the policy freed it (vacates) or found it free (a claim)
for that owner, and the next negotiation should hand it over. Until then the adapter shows it on its
snapshot (:attr:`osep.core.model.Snapshot.kept`), so that the policy counts the room as the owner's
and does not vacate twice for the same deficit. A reservation ends:

- when the negotiator hands its room over, used or not (:meth:`ReservationBook.take`, where the
  pool's negotiator is modelled; :meth:`ReservationBook.handed_over` when a job starts there);
- when its owner runs as many jobs as it did when the slot was reserved plus the reservations made
  for it in the same cycle (the slot, or an equivalent one, reached it);
- when its owner has no idle job left to put there;
- at the latest ``lifetime`` seconds after it was made.

A hold caps, until the next cycle, how many more cores an owner may still be given (the plan's
allowance). The live pool turns holds into negotiator ceilings; the simulated negotiator asks
:meth:`ReservationBook.may_match` and reports each match.

Time is always passed in: each adapter uses its own single clock (the simulator's virtual time, the
live pool's snapshot time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from osep.core.model import Kept, Slot
from osep.core.resources import ONE_CORE, Room, Shape, fits


@dataclass(frozen=True, slots=True)
class Reservation:
    owner: str
    slot: str  # the place: a static slot or a partitionable slot
    expires: float
    until_running: int  # fulfilled once the owner runs at least this many jobs
    shape: Shape = ONE_CORE


class _Draft:
    """A :class:`Reservation` made the fast way (as :class:`osep.core.plan.OwnerView`'s draft is):
    the same slots set the plain way, then the object becomes the frozen class. A frozen dataclass
    sets each field through ``object.__setattr__``; a pool makes one per claim or vacate, and again
    for each of an owner's reservations a handover moves on."""

    __slots__ = Reservation.__slots__

    def __init__(self, owner: str, slot: str, expires: float, until_running: int,
                 shape: Shape) -> None:
        self.owner = owner
        self.slot = slot
        self.expires = expires
        self.until_running = until_running
        self.shape = shape
        self.__class__ = Reservation  # type: ignore[assignment]


# ``Reservation(...)`` with every field given, positionally, at a fraction of the cost.
_reservation = cast(Callable[[str, str, float, int, Shape], Reservation], _Draft)


class _Places:
    """The places among ``slots`` by name (slots without a parent), looked up without a copy."""

    __slots__ = ("_slots",)

    def __init__(self, slots: Mapping[str, Slot]) -> None:
        self._slots = slots

    def get(self, name: str) -> Slot | None:
        slot = self._slots.get(name)
        return slot if slot is not None and slot.parent is None else None


class ReservationBook:
    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self._reservations: list[Reservation] = []
        self._this_cycle: dict[str, int] = {}
        self._holds: dict[str, int] = {}

    # -- reservations ---------------------------------------------------------------------------

    def reserve(self, slot: str, owner: str, now: float, running: int,
                shape: Shape = ONE_CORE) -> None:
        """Keep room for a job of ``shape`` on ``slot`` for ``owner``, which runs ``running`` jobs
        now."""
        made = self._this_cycle.get(owner, 0) + 1
        self._this_cycle[owner] = made
        self._reservations.append(
            _reservation(owner, slot, now + self.lifetime, running + made, shape))

    def expire(self, now: float, running: Mapping[str, int], idle: Mapping[str, int]
               ) -> list[Reservation]:
        """Drop what has ended by the rules above, given what each owner runs and has idle now;
        returns the reservations that ran out of time (the others ended as they should). Starts a
        new cycle for :meth:`reserve`."""
        self._this_cycle.clear()
        kept: list[Reservation] = []
        timed_out: list[Reservation] = []
        for res in self._reservations:
            if res.expires < now:
                timed_out.append(res)
            elif running.get(res.owner, 0) < res.until_running and idle.get(res.owner, 0) > 0:
                kept.append(res)
        self._reservations = kept
        return timed_out

    def mark(self, slots: Sequence[Slot] | Mapping[str, Slot],
             occupied: Iterable[str]) -> tuple[Kept, ...]:
        """Every pending reservation as the snapshot shows it: on its place, or, when that is a
        static slot that is busy or gone, on another free static slot.

        ``slots`` in the pool's order, or by name (a pool view's, read as it is: no copy of every
        slot per cycle); ``occupied`` the slots with a job on them (a set or a mapping by name)."""
        if not self._reservations:
            return ()
        taken = occupied if isinstance(occupied, (set, frozenset, Mapping)) else set(occupied)
        if isinstance(slots, Mapping):
            pool: Mapping[str, Slot] = slots
        else:
            pool = {s.name: s for s in slots if s.parent is None}
        places = _Places(pool)
        static_kept: set[str] = set()
        out: list[Kept] = []
        pending: list[Reservation] = []
        for res in self._reservations:
            place = places.get(res.slot)
            if place is not None and place.partitionable:
                out.append(Kept(res.owner, res.slot, res.shape))
            elif place is not None and res.slot not in taken and res.slot not in static_kept:
                static_kept.add(res.slot)
                out.append(Kept(res.owner, res.slot, res.shape))
            else:
                pending.append(res)
        if not pending:
            return tuple(out)
        free = (s for s in pool.values() if s.parent is None
                and not s.partitionable and s.name not in taken and s.name not in static_kept)
        for res, slot in zip(pending, free, strict=False):
            out.append(Kept(res.owner, slot.name, res.shape))
        return tuple(out)

    def take(self, slot: str, now: float) -> Reservation | None:
        """The reservation ``slot`` is kept under, if one still stands; it ends here, whether or
        not its owner has a job that fits (a negotiator hands a slot over once)."""
        for k, res in enumerate(self._reservations):
            if res.slot == slot:
                del self._reservations[k]
                return res if now <= res.expires else None
        return None

    def take_fitting(self, slot: str, now: float, room: Room) -> Reservation | None:
        """Like :meth:`take`, for room on a partitionable slot: the first reservation there whose
        job fits what ``room`` the slot has unclaimed now (the others wait for their room)."""
        found: Reservation | None = None
        kept: list[Reservation] = []
        for res in self._reservations:
            if res.slot == slot and res.expires < now:
                continue  # lapsed: ends here, without standing in the way of the others
            if found is None and res.slot == slot and fits(res.shape, room):
                found = res
            else:
                kept.append(res)
        self._reservations = kept
        return found

    def standing(self) -> tuple[Reservation, ...]:
        """The reservations not ended yet (some may have run out of time: see :meth:`take`)."""
        return tuple(self._reservations)

    def handed_over(self, taken: Reservation) -> None:
        """A job of the owner started on the slot ``taken`` kept: that raises the owner's running
        count by one, which must not fulfil the owner's reservations that would have ended before
        this one (their slots have not been handed over)."""
        owner, bound = taken.owner, taken.until_running
        # (Made by the draft, positionally: dataclasses.replace costs several times as much.)
        self._reservations = [
            _reservation(r.owner, r.slot, r.expires, r.until_running + 1, r.shape)
            if r.owner == owner and r.until_running <= bound else r
            for r in self._reservations
        ]

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
        return bool(self._reservations)

    def may_match(self, owner: str, cpus: int = 1) -> bool:
        allowed = self._holds.get(owner)
        return allowed is None or allowed >= cpus

    def allowance(self, owner: str) -> int | None:
        """How many more cores ``owner`` may be given (None: it is not held)."""
        return self._holds.get(owner)

    def matched(self, owner: str, cpus: int = 1) -> None:
        """``owner`` was given ``cpus`` more cores: that much less of its allowance, if it is held."""
        allowed = self._holds.get(owner)
        if allowed is not None:
            self._holds[owner] = allowed - cpus

    def clear(self) -> None:
        self._reservations.clear()
        self._this_cycle.clear()
        self._holds.clear()

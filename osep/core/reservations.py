"""The one book of reservations and holds, kept by every pool adapter under the same rules.

A reservation says that a slot is on its way to an owner: the policy freed it (a vacate) or found it
free (a claim) for that owner, and the next negotiation should hand it over. Until then the adapter
shows it on its snapshot's slots (:attr:`osep.core.model.Slot.reserved_for`), so that the policy
counts the slot as the owner's and does not vacate twice for the same deficit. A reservation ends:

- when the negotiator hands its slot over, used or not (:meth:`ReservationBook.take`, where the
  pool's negotiator is modelled; :meth:`ReservationBook.handed_over` when a job starts there);
- when its owner runs as many jobs as it did when the slot was reserved plus the reservations made
  for it in the same cycle (the slot, or an equivalent one, reached it);
- when its owner has no idle job left to put there;
- at the latest ``lifetime`` seconds after it was made.

A hold caps, until the next cycle, how many new slots an owner may still be given (the plan's
allowance). The live pool turns holds into negotiator ceilings; the simulated negotiator asks
:meth:`ReservationBook.may_match` and reports each match.

Time is always passed in: each adapter uses its own single clock (the simulator's virtual time, the
live pool's snapshot time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from osep.core.model import Slot


@dataclass(frozen=True, slots=True)
class Reservation:
    owner: str
    slot: str
    expires: float
    until_running: int  # fulfilled once the owner runs at least this many jobs


class ReservationBook:
    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self._reservations: list[Reservation] = []
        self._this_cycle: dict[str, int] = {}
        self._holds: dict[str, int] = {}

    # -- reservations ---------------------------------------------------------------------------

    def reserve(self, slot: str, owner: str, now: float, running: int) -> None:
        """Keep ``slot`` for ``owner``, which runs ``running`` jobs now."""
        made = self._this_cycle.get(owner, 0) + 1
        self._this_cycle[owner] = made
        self._reservations.append(Reservation(owner, slot, now + self.lifetime, running + made))

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

    def mark(self, slots: Sequence[Slot], occupied: Iterable[str]) -> list[Slot]:
        """``slots`` with each pending reservation shown on its slot, or, when that slot is busy or
        gone (a dynamic slot that went back to its partitionable parent), on another free one."""
        out = list(slots)
        if not self._reservations:
            return out
        taken = set(occupied)
        index = {s.name: k for k, s in enumerate(out)}
        marked: dict[int, str] = {}
        pending: list[Reservation] = []
        for res in self._reservations:
            k = index.get(res.slot)
            if k is not None and k not in marked and res.slot not in taken:
                marked[k] = res.owner
            else:
                pending.append(res)
        free = (k for k, s in enumerate(out) if s.name not in taken and k not in marked)
        for res, k in zip(pending, free, strict=False):
            marked[k] = res.owner
        for k, owner in marked.items():
            out[k] = replace(out[k], reserved_for=owner)
        return out

    def take(self, slot: str, now: float) -> Reservation | None:
        """The reservation ``slot`` is kept under, if one still stands; it ends here, whether or
        not its owner has a job that fits (a negotiator hands a slot over once)."""
        for k, res in enumerate(self._reservations):
            if res.slot == slot:
                del self._reservations[k]
                return res if now <= res.expires else None
        return None

    def handed_over(self, taken: Reservation) -> None:
        """A job of the owner started on the slot ``taken`` kept: that raises the owner's running
        count by one, which must not fulfil the owner's reservations that would have ended before
        this one (their slots have not been handed over)."""
        self._reservations = [
            replace(r, until_running=r.until_running + 1)
            if r.owner == taken.owner and r.until_running <= taken.until_running else r
            for r in self._reservations
        ]

    # -- holds ----------------------------------------------------------------------------------

    def hold(self, holds: Mapping[str, int]) -> None:
        """Replace the holds: each owner named may be given that many new slots until the next call."""
        self._holds = dict(holds)

    @property
    def holds(self) -> dict[str, int]:
        return dict(self._holds)

    def may_match(self, owner: str) -> bool:
        allowed = self._holds.get(owner)
        return allowed is None or allowed > 0

    def matched(self, owner: str) -> None:
        """``owner`` was given a new slot: one less of its allowance, if it is held."""
        allowed = self._holds.get(owner)
        if allowed is not None:
            self._holds[owner] = allowed - 1

    def clear(self) -> None:
        self._reservations.clear()
        self._this_cycle.clear()
        self._holds.clear()

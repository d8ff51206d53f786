"""What a pool view keeps, and its places (:class:`ViewPlaces`): the base of
:class:`osep.core.view.PoolView`, which the ways a pool tells it changes
(:mod:`osep.core.telling`, :mod:`osep.core.counted`) build on.

Per slot the view has: how many running jobs are on it; per slot name, the vacating jobs naming it,
and the running jobs naming it but for a static slot the view has (those are found by a pass over
the jobs should the slot leave the view or change, as a pool's static slots seldom do: a static
slot's job costs no entry of its own); the static slots, and those that are free; every
partitionable slot's unclaimed room; every place's whole room (what it has were it empty); the
pool's totals per resource. Per place with a partitionable slot or dynamic slots (what the decision
carves room from): the victim candidates on it (a static slot's candidate is found by its slot's
name).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from osep.core.jobtable import JobTable, Row
from osep.core.model import JobId, JobState, Slot, Snapshot
from osep.core.resources import Room, Vec, add_room
from osep.core.tally import Tally

_RUNNING = JobState.RUNNING  # (a module's name is read several times faster than an enum's member)


class ViewPlaces:
    """A pool view's state (see :class:`osep.core.view.PoolView`), its places' bookkeeping, and how
    a job is placed on a slot or taken off it. ``stamp`` counts the changes: a snapshot taken from
    the view records it, and a view that changed since is not read for that snapshot."""

    def __init__(self) -> None:
        self.stamp = 0
        self.jobs = JobTable()
        self._entries = self.jobs.entries
        self.slots: dict[str, Slot] = {}
        self.tallies: dict[str, Tally] = {}  # owners with a running, idle or vacating job
        self.busy: Counter[str] = Counter()  # slot present -> running jobs on it
        self.leaving: Counter[str] = Counter()  # slot name -> vacating jobs naming it
        # Slot name -> the running jobs naming it, but for a static slot the view has (its jobs
        # are counted in ``busy``, and found by a pass over the jobs should it leave the view).
        self.running_on: dict[str, set[JobId]] = {}
        self.unplaced = 0  # running jobs on no slot the view has
        self.free_static: set[str] = set()  # static slots with no running or vacating job
        # The static slots running a job, for a pool that counts its running jobs (count_static);
        # ``busy`` then has none of them.
        self.running_static: Mapping[str, int] | None = None
        # What raises if the pool that counts jobs for this view changed since it last told it
        # (counted_by): such a view is read for a snapshot only while it does not.
        self.pool_check: Callable[[], None] | None = None
        self.static: set[str] = set()  # the static slots present
        # The most free static slots seen at a snapshot since the set was last made afresh: a set
        # keeps the table of its largest size, and a decision lists it at every cycle.
        self._free_peak = 0
        # Static slots with other than one core (none: the free static slots' cores are as many as
        # they are, not summed slot by slot every decision).
        self.odd_static = 0
        self.rooms: dict[str, Room] = {}  # partitionable slot -> its unclaimed room
        self.open_rooms: set[str] = set()  # partitionable slots with any room unclaimed
        # Place with a partitionable slot or dynamic slots -> victim candidates on it.
        self.on_place: dict[str, set[JobId]] = {}
        self.children: dict[str, set[str]] = {}  # slot name -> dynamic slots naming it as parent
        self.whole: dict[str, Room] = {}  # place (a slot without parent) -> its room, were it empty
        self.wholes: Counter[Room] = Counter()  # how many places have each whole room
        self._totals = [0, 0, 0, 0, 0]  # slots, cpus, memory, gpus, disk
        self._capacity = 0
        self.duplicates = 0  # jobs or slots a snapshot listed twice (the last one counts)
        # The last snapshot taken, while it has copied nothing (it is not kept alive for this).
        self._taken: weakref.ref[Snapshot] | None = None

    # -- what the decision reads ------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Capacity in slots, as :attr:`osep.core.model.Snapshot.capacity` counts it."""
        return self._capacity

    def totals(self) -> Vec:
        """Capacity in every resource, as :meth:`osep.core.model.Snapshot.totals` counts it."""
        t = self._totals
        return (float(t[0]), float(t[1]), float(t[2]), float(t[3]), float(t[4]))

    def runs_on(self, name: str) -> bool:
        """Whether a job runs on the slot ``name``."""
        running = self.running_static
        return name in self.busy or (running is not None and name in running)

    def room_on(self, place: str) -> Room:
        """What the partitionable slot ``place`` has for a new job now or as soon as its leaving
        jobs are gone: its unclaimed part and every dynamic slot of it with no job running (its job
        vacating or gone). What a job of anyone else was started on is not there."""
        room = self.rooms.get(place, (0, 0, 0, 0))
        for kid in self.children.get(place, ()):
            if not self.runs_on(kid):
                room = add_room(room, self.slots[kid].room)
        return room

    # -- jobs -------------------------------------------------------------------------------------

    def _tally(self, owner: str) -> Tally:
        tally = self.tallies.get(owner)
        if tally is None:
            tally = self.tallies[owner] = Tally()
        return tally

    def _run_on(self, job_id: JobId, row: Row, tally: Tally, name: str | None) -> None:
        """The running job ``job_id`` (``row``, counted in its owner's ``tally``) names slot
        ``name``: listed as running there, and placed on it if the view has the slot (else, or
        with no slot named, counted as unplaced)."""
        if name is None:
            self.unplaced += 1
            return
        if name not in self.static:
            on = self.running_on.get(name)
            if on is None:
                self.running_on[name] = {job_id}
            else:
                on.add(job_id)
        slot = self.slots.get(name)
        if slot is not None:
            self._placed(job_id, row, tally, slot)
        else:
            self.unplaced += 1

    def _placed(self, job_id: JobId, row: Row, tally: Tally, slot: Slot) -> None:
        """The job runs on ``slot``, which the view has."""
        name = slot.name
        busy = self.busy
        busy[name] = busy.get(name, 0) + 1
        self.free_static.discard(name)
        start = row[4]
        if start is not None and row[7]:  # a victim candidate
            since = row[5]
            since = since if since is not None and since > start else start
            tally.add_victim(job_id, start, since)
            if slot.parent is not None or slot.partitionable:
                self.on_place.setdefault(slot.place, set()).add(job_id)

    def _unplaced(self, job_id: JobId, row: Row, tally: Tally, slot: Slot) -> None:
        """The job no longer runs on ``slot`` (it did, and the view has the slot)."""
        name = slot.name
        busy = self.busy
        left = busy[name] - 1
        if left:
            busy[name] = left
        else:
            busy.pop(name)
        if row[4] is not None and row[7]:
            tally.drop_victim(job_id)
            if slot.parent is not None or slot.partitionable:
                place = slot.place
                on = self.on_place[place]
                on.discard(job_id)
                if not on:
                    del self.on_place[place]

    # -- slots ------------------------------------------------------------------------------------

    def _refree(self, name: str) -> None:
        slot = self.slots.get(name)
        if slot is None or slot.partitionable or slot.parent is not None or \
                self.running_static is not None:  # (the pool keeps the free static slots)
            return
        if name in self.busy or name in self.leaving:
            self.free_static.discard(name)
        else:
            self.free_static.add(name)

    def _slot_in(self, slot: Slot) -> None:
        name = slot.name
        self._capacity += slot.slots
        for k, amount in enumerate(slot.amount):
            self._totals[k] += int(amount)
        if not slot.partitionable and slot.parent is None:
            self.static.add(name)
            if slot.cpus != 1:
                self.odd_static += 1
        # The jobs naming it are placed on it (a static slot's are no longer listed by name).
        for job_id in self.running_on.pop(name, ()) if name in self.static else \
                self.running_on.get(name, ()):
            row = self.jobs.row(job_id)
            assert row is not None
            self.unplaced -= 1
            self._placed(job_id, row, self.tallies[row[0]], slot)
        if slot.partitionable:
            self.rooms[name] = slot.room
            if any(slot.room):
                self.open_rooms.add(name)
        self._refree(name)
        if slot.parent is None:
            self._rewhole(name)
        else:
            self.children.setdefault(slot.parent, set()).add(name)
            self._rewhole(slot.parent)

    def _slot_out(self, slot: Slot) -> None:
        name = slot.name
        self._capacity -= slot.slots
        for k, amount in enumerate(slot.amount):
            self._totals[k] -= int(amount)
        if not slot.partitionable and slot.parent is None:
            self.static.discard(name)
            if slot.cpus != 1:
                self.odd_static -= 1
            # The jobs on a static slot are not listed by name (a pass over the jobs finds them):
            # they are from now on.
            on: Iterable[JobId] = self._running_on_static(name) if name in self.busy else ()
            if on:
                self.running_on[name] = set(on)
        else:
            on = self.running_on.get(name, ())
        for job_id in on:
            row = self.jobs.row(job_id)
            assert row is not None
            self._unplaced(job_id, row, self.tallies[row[0]], slot)
            self.unplaced += 1
        if slot.partitionable:
            del self.rooms[name]
            self.open_rooms.discard(name)
        self.free_static.discard(name)
        whole = self.whole.pop(name, None)
        if whole is not None:
            self._unwhole(whole)
        if slot.parent is not None:
            kids = self.children[slot.parent]
            kids.discard(name)
            if not kids:
                del self.children[slot.parent]
            self._rewhole(slot.parent, leaving=name)

    def _running_on_static(self, name: str) -> list[JobId]:
        """The running jobs on the static slot ``name`` (a pass over the view's jobs)."""
        on = []
        for job_id, entry in self._entries.items():
            if isinstance(entry, tuple):
                if entry[1] is _RUNNING and entry[3] == name:
                    on.append(job_id)
            elif entry.state is _RUNNING and entry.slot == name:
                on.append(job_id)
        return on

    def _unwhole(self, room: Room) -> None:
        self.wholes[room] -= 1
        if not self.wholes[room]:
            self.wholes.pop(room)

    def _rewhole(self, place: str, leaving: str | None = None) -> None:
        """Work out again what ``place`` has were it empty: its own room and its dynamic slots'."""
        slot = self.slots.get(place)
        old = self.whole.pop(place, None)
        if old is not None:
            self._unwhole(old)
        if slot is None or slot.parent is not None or place == leaving:
            return
        room = slot.room
        for kid in self.children.get(place, ()):
            if kid != leaving:
                room = add_room(room, self.slots[kid].room)
        self.whole[place] = room
        self.wholes[room] += 1

    def _settle(self) -> None:
        """The view is about to change: the last snapshot taken from it, if it is still about,
        copies what it shows."""
        ref = self._taken
        if ref is not None:
            self._taken = None
            taken = ref()
            if taken is not None:
                taken.settle()

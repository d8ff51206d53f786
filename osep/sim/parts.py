"""What a simulated pool is made of as it runs: its jobs (:class:`SimJob`), static and dynamic slots
(:class:`SimSlot`), partitionable machines (:class:`SimMachine`), each owner's queue
(:class:`IdleQueue`) and the places with room free (:class:`Places`)."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Mapping

from osep.core.model import JobId, JobState
from osep.core.resources import Room, Shape, add_room, fits, less
from osep.sim.specs import JobSpec, SlotSpec

_IDLE = JobState.IDLE


# A queued job: (the time it joined the queue, its arrival number, its id), oldest first.
Entry = tuple[float, int, JobId]


class IdleQueue:
    """One owner's queued jobs, oldest first, kept by shape: the oldest that fits a room is the
    oldest of the heads of the shapes that fit (an owner has a few shapes, and many jobs)."""

    __slots__ = ("_shapes", "count")

    def __init__(self) -> None:
        self._shapes: dict[Shape, list[Entry]] = {}
        self.count = 0  # how many jobs are queued (len, read straight where it is read often)

    def __len__(self) -> int:
        return self.count

    def push(self, entry: Entry, shape: Shape) -> None:
        heap = self._shapes.get(shape)
        if heap is None:
            heap = self._shapes[shape] = []
        heapq.heappush(heap, entry)
        self.count += 1

    def shapes(self) -> Mapping[Shape, list[Entry]]:
        """The queued jobs of each shape, in a heap (read, never change)."""
        return self._shapes

    def head(self) -> Entry:
        """The oldest job (the queue must not be empty)."""
        shapes = self._shapes
        if len(shapes) == 1:  # most owners' jobs have one shape
            for heap in shapes.values():
                return heap[0]
        return min(heap[0] for heap in shapes.values())

    def pop_fitting(self, room: Room, cpus: int | None = None) -> Entry | None:
        """The oldest job that fits ``room`` (and asks for at most ``cpus`` cores, if given), taken
        off the queue; None if none does."""
        best: Entry | None = None
        where: Shape | None = None
        for shape, heap in self._shapes.items():
            if (fits(shape, room) and (cpus is None or shape[0] <= cpus)
                    and (best is None or heap[0] < best)):
                best, where = heap[0], shape
        if where is None:
            return None
        heap = self._shapes[where]
        heapq.heappop(heap)
        if not heap:
            del self._shapes[where]
        self.count -= 1
        return best


class Places:
    """Places with room free (static slots without a job, machines with a core unclaimed), as
    their positions in the pool's order, and how many have each room."""

    __slots__ = ("positions", "rooms")

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.rooms: dict[Room, int] = {}

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, position: int, room: Room) -> None:
        bisect.insort(self.positions, position)
        self.rooms[room] = self.rooms.get(room, 0) + 1

    def remove(self, position: int, room: Room) -> None:
        del self.positions[bisect.bisect_left(self.positions, position)]
        left = self.rooms[room] - 1
        if left:
            self.rooms[room] = left
        else:
            del self.rooms[room]

    def walk(self) -> Iterator[int]:
        """The positions in order; the one given may be taken out (or changed) before the next is
        asked for."""
        k = 0
        positions = self.positions
        while k < len(positions):
            position = positions[k]
            yield position
            if k < len(positions) and positions[k] == position:
                k += 1


class SimJob:
    __slots__ = (
        "finish",
        "gain",
        "run_id",
        "saved",
        "seq",
        "shape",
        "slot",
        "spec",
        "start",
        "state",
        "vacate_sent",
    )

    def __init__(self, spec: JobSpec, seq: int, shape: Shape) -> None:
        self.spec = spec
        self.shape = shape  # spec.shape, one tuple shared by the pool's jobs of that shape
        self.seq = seq
        self.state = _IDLE
        self.slot: SimSlot | None = None
        self.start = 0.0
        self.saved = 0.0
        self.finish: float | None = None
        self.run_id = 0
        self.vacate_sent: float | None = None
        self.gain = 0.0


class SimSlot:
    """A static slot (``index``: its place in the pool's order), or a dynamic slot carved from
    ``parent``."""

    __slots__ = ("index", "job", "parent", "room", "spec")

    def __init__(self, spec: SlotSpec, parent: SimMachine | None = None, index: int = -1) -> None:
        self.spec = spec
        self.room: Room = spec.room
        self.job: SimJob | None = None
        self.parent = parent
        self.index = index


class SimMachine:
    """A partitionable slot: what it has unclaimed, and the dynamic slots carved from it
    (``index``: its place in the pool's order)."""

    __slots__ = ("carved", "free", "index", "spec")

    def __init__(self, spec: SlotSpec, index: int = -1) -> None:
        self.spec = spec
        self.free: Room = spec.room
        self.carved = 0
        self.index = index

    def carve(self, shape: Shape) -> SimSlot:
        self.carved += 1
        self.free = less(self.free, shape)
        # What the dynamic slot holds: the request, in what the machine models.
        cpus, memory, gpus, disk = shape
        carved = SlotSpec(f"{self.spec.name}_{self.carved}", cpus,
                          None if self.spec.memory is None else memory, gpus,
                          None if self.spec.disk is None else disk)
        return SimSlot(carved, self)

    def give_back(self, slot: SimSlot) -> None:
        self.free = add_room(self.free, slot.room)


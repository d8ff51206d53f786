"""What a simulation is told as it runs (:class:`Watch`), kept two ways: the meters
fed at once (:class:`Metering`: memory for the jobs in flight only), or every job's record
(:class:`Recorder`: for plots and tests, memory that grows with the jobs)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from osep.core.resources import ZERO, Vec
from osep.measure.meter import Meter
from osep.measure.records import JobRecord, Run
from osep.sim.specs import JobSpec

# What a job weighs in the unit measured, and what it holds per resource (see the meter).
Weigh = Callable[[JobSpec], tuple[float, Vec]]


class Watch(Protocol):
    """What a simulated pool tells as it happens, in time order (all at the pool's ``now``)."""

    def submit(self, t: float, spec: JobSpec) -> None:
        """The job was submitted."""

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        """A run of the job began on ``slot``."""

    def signal(self, t: float, spec: JobSpec) -> None:
        """The job was told to vacate (it keeps its slot until it releases it, or finishes)."""

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        """The run ended without the job finishing: ``vacated`` (it goes back to the queue, having
        kept ``useful`` seconds of work), or cut off where the simulation stopped."""

    def finish(self, t: float, spec: JobSpec) -> None:
        """The job's run ended with the job done."""


class Unwatched:
    """A :class:`Watch` that keeps nothing."""

    def submit(self, t: float, spec: JobSpec) -> None:
        pass

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        pass

    def signal(self, t: float, spec: JobSpec) -> None:
        pass

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        pass

    def finish(self, t: float, spec: JobSpec) -> None:
        pass



def in_slots(spec: JobSpec) -> tuple[float, Vec]:
    return 1.0, ZERO


@dataclass(slots=True)
class _Stay:
    """A job's record so far: its runs, and the one it is in (slot, start, vacate signal)."""

    spec: JobSpec
    runs: list[Run] = field(default_factory=list)
    slot: str = ""
    start: float = 0.0
    signal: float | None = None
    finish: float | None = None


class Recorder:
    """Every job's record, as :class:`osep.measure.records.JobRecord` (in the order they arrived).
    A run still going where the simulation stopped ends there: its job held the slot until then."""

    def __init__(self) -> None:
        self._jobs: dict[Hashable, _Stay] = {}

    def submit(self, t: float, spec: JobSpec) -> None:
        self._jobs[spec.id] = _Stay(spec)

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        stay = self._jobs[spec.id]
        stay.slot, stay.start, stay.signal = slot, t, None

    def signal(self, t: float, spec: JobSpec) -> None:
        self._jobs[spec.id].signal = t

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        stay = self._jobs[spec.id]
        stay.runs.append(Run(stay.slot, stay.start, t, vacated, useful, stay.signal))
        stay.signal = None

    def finish(self, t: float, spec: JobSpec) -> None:
        stay = self._jobs[spec.id]
        stay.runs.append(Run(stay.slot, stay.start, t, False, t - stay.start, stay.signal))
        stay.finish = t

    def records(self) -> tuple[JobRecord, ...]:
        return tuple(JobRecord(s.spec.id, s.spec.owner, s.spec.submit, s.spec.runtime, s.finish,
                               tuple(s.runs))
                     for s in self._jobs.values())


class Metering:
    """Meters fed as the simulation runs: each job weighed by ``weigh``, and seen by each meter as
    the owner its ``rename`` gives (None: its own; an owner tree's meter of top-level groups sees
    each job as its group's)."""

    def __init__(self, meters: Sequence[tuple[Meter, Callable[[str], str] | None]],
                 weigh: Weigh = in_slots) -> None:
        self.meters = [meter for meter, _ in meters]
        self._renames = [rename for _, rename in meters]
        self._weigh = weigh
        # The one meter, seeing owners as they are (the usual case: told without a loop), and
        # whether every job weighs one slot (the meter's defaults: told without weighing).
        self._one = self.meters[0] if len(meters) == 1 and self._renames[0] is None else None
        self._in_slots = weigh is in_slots

    def submit(self, t: float, spec: JobSpec) -> None:
        if self._one is not None and self._in_slots:
            self._one.submit(t, spec.id, spec.owner)
            return
        weight, amount = self._weigh(spec)
        if self._one is not None:
            self._one.submit(t, spec.id, spec.owner, weight, amount)
            return
        for meter, rename in zip(self.meters, self._renames, strict=True):
            meter.submit(t, spec.id, spec.owner if rename is None else rename(spec.owner), weight,
                         amount)

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        if self._one is not None:
            self._one.start(t, spec.id, slot)
            return
        for meter in self.meters:
            meter.start(t, spec.id, slot)

    def signal(self, t: float, spec: JobSpec) -> None:
        for meter in self.meters:
            meter.signal(t, spec.id)

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        for meter in self.meters:
            meter.end(t, spec.id, evicted=vacated, saved=useful)

    def finish(self, t: float, spec: JobSpec) -> None:
        if self._one is not None:
            self._one.finish(t, spec.id, spec.runtime)
            return
        for meter in self.meters:
            meter.finish(t, spec.id, runtime=spec.runtime)


class Tee:
    """Several watches told the same, in the order given."""

    def __init__(self, *watches: Watch) -> None:
        self.watches = watches

    def submit(self, t: float, spec: JobSpec) -> None:
        for watch in self.watches:
            watch.submit(t, spec)

    def start(self, t: float, spec: JobSpec, slot: str) -> None:
        for watch in self.watches:
            watch.start(t, spec, slot)

    def signal(self, t: float, spec: JobSpec) -> None:
        for watch in self.watches:
            watch.signal(t, spec)

    def end(self, t: float, spec: JobSpec, vacated: bool, useful: float) -> None:
        for watch in self.watches:
            watch.end(t, spec, vacated, useful)

    def finish(self, t: float, spec: JobSpec) -> None:
        for watch in self.watches:
            watch.finish(t, spec)

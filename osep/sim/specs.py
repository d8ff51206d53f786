"""What a simulation is made of: slots, jobs and the pool's settings, and what it returns."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from osep.core.model import JobId, Shape, Slot
from osep.core.resources import Room
from osep.measure.records import JobRecord


class Order(enum.Enum):
    """How the simulated negotiator ranks idle jobs for a free slot."""

    FIFO = "fifo"
    FAIRSHARE = "fairshare"


class Checkpointing(enum.Enum):
    NONE = "none"
    ON_VACATE = "on-vacate"
    PERIODIC = "periodic"


@dataclass(frozen=True, slots=True)
class SlotSpec:
    """A static slot, or (``partitionable``) a machine whose cpus, memory, GPUs and disk are carved
    into a dynamic slot per job. Memory in MiB and disk in KiB; None where not modelled."""

    name: str
    cpus: int = 1
    memory: int | None = None
    gpus: int = 0
    disk: int | None = None
    partitionable: bool = False

    @property
    def room(self) -> Room:
        return (self.cpus, self.memory, self.gpus, self.disk)

    def as_slot(self, parent: str | None = None) -> Slot:
        """This slot as a snapshot shows it, empty (or carved from ``parent``)."""
        return Slot(self.name, self.cpus, self.memory, self.gpus, self.disk, parent=parent,
                    partitionable=self.partitionable)


@dataclass(frozen=True, slots=True)
class JobSpec:
    id: JobId
    owner: str
    submit: float
    runtime: float
    cpus: int = 1
    memory: int = 0
    gpus: int = 0
    disk: int = 0  # KiB

    @property
    def shape(self) -> Shape:
        return (self.cpus, self.memory, self.gpus, self.disk)


@dataclass(frozen=True, slots=True)
class PoolSettings:
    negotiation_interval: float = 60.0
    vacate_delay: float = 10.0
    # None: vacate_delay plus two negotiation cycles, long enough for the slot to be handed over.
    reservation_timeout: float | None = None
    order: Order = Order.FIFO
    half_life: float = 86400.0
    initial_usage: Mapping[str, float] = field(default_factory=dict)
    checkpointing: Checkpointing = Checkpointing.NONE
    checkpoint_interval: float = 0.0
    # False: the pool ignores holds, as a pool whose negotiator has no submitter ceilings would.
    holds: bool = True
    # Stop here even if jobs remain (they are reported unfinished).
    horizon: float | None = None

    @property
    def reservation_lifetime(self) -> float:
        if self.reservation_timeout is not None:
            return self.reservation_timeout
        return self.vacate_delay + 2 * self.negotiation_interval


@dataclass(frozen=True, slots=True)
class SimResult:
    capacity: int
    jobs: tuple[JobRecord, ...]
    end: float
    cycles: int
    vacates: int

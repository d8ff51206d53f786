"""What a simulation is made of: slots, jobs and the pool's settings, and what it returns."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from osep.core.model import JobId, Shape, Slot
from osep.core.resources import Room
from osep.fairshare import cambridge, share, slurm
from osep.measure.records import JobRecord


class Order(enum.Enum):
    """How the simulated negotiator ranks idle jobs for a free slot (see :mod:`osep.sim.orderings`)."""

    GREEDY = "greedy"
    FAIRSHARE = "fairshare"
    SLURM = "slurm"
    SHARE = "share"
    GRID = "grid"
    CAMBRIDGE = "cambridge"


@dataclass(frozen=True, slots=True)
class ModelParams:
    """The seeds' fair-share models' parameters, as a scenario's [fairshare] table sets them; every
    default is the source's, or (for Cambridge's units) the mapping :mod:`osep.sim.orderings` explains."""

    dampening: float = slurm.DEFAULT_DAMPENING  # Slurm's FairShareDampeningFactor
    k5: float = share.K5  # Share's edge-effect bound
    k6_tolerance: float = share.K6_TOLERANCE  # Share's group adjustment threshold
    cambridge_half_life: float = cambridge.HALF_LIFE  # U and V lose 10% a day
    unit: float = 1.0  # Cambridge: slot-seconds per resource unit
    price_limit: float | None = None  # Cambridge: a job's highest price (None: 1275/Re, 1 to 255)
    deferral: float = 10800.0  # Cambridge: the turnround of a job not accepted at once (3 hours)


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
    order: Order = Order.GREEDY
    half_life: float = 86400.0
    models: ModelParams = field(default_factory=ModelParams)
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
    jobs: tuple[JobRecord, ...]  # every job's record, when asked for (else empty)
    end: float
    cycles: int  # enforcement cycles run
    vacates: int
    unfinished: int = 0  # jobs not done where the run stopped (at its horizon)
    negotiations: int = 0  # negotiation cycles run

"""What a meter keeps per job in flight and per owner (:mod:`osep.measure.meter`)."""

from __future__ import annotations

from dataclasses import dataclass

from osep.core.resources import ZERO, Vec


@dataclass(slots=True)
class JobBooks:
    """A job in flight: its owner's books, its current run (if any), and what it holds."""

    owner: str
    stats: OwnerBooks
    submit: float
    counted: bool = True  # part of demand (not held)
    slot: str | None = None
    start: float | None = None
    signal: float | None = None  # vacate signal for the current run
    saved: float = 0.0  # work checkpoints kept from earlier runs
    weight: float = 1.0  # what it holds while running, in the unit measured
    amount: Vec = ZERO  # what it holds per resource (dominant measures only)


@dataclass(slots=True)
class OwnerBooks:
    """An owner's totals so far, the piece of SuR_i and SuI_i being integrated, and its place in
    the flat water-filling's sorted lists (:mod:`osep.measure.waterfill`)."""

    name: str
    share: float = 0.0  # a_i, for the flat water-filling
    running: float = 0.0
    demand: float = 0.0
    jobs: int = 0
    finished: int = 0
    us_sum: float = 0.0
    violation: float = 0.0
    vacated: int = 0
    lost_work: float = 0.0
    saved_work: float = 0.0
    capacity_loss: float = 0.0  # LC after this owner's jobs were vacated
    vacate_time: float = 0.0
    holding: Vec = ZERO  # per resource, for dominant measures
    wanting: Vec = ZERO
    # The piece being integrated (:mod:`osep.measure.pieces`): since when; SuR_i and SuI_i over it (for the
    # series); the shortfall rate, plus the water level if ``linear``; the level's area at ``since``.
    since: float = 0.0
    real: float = 0.0
    ideal: float = 0.0
    rate: float = 0.0
    linear: bool = False
    area: float = 0.0
    # What this owner adds to the water-filling's books: min(a_i, d_i), and its keys in the sorted
    # lists (d_i - a_i among the needs, r_i - a_i among the marks), None when not there.
    base: float = 0.0
    need: float | None = None
    mark: float | None = None
    # Where its keys were put in those lists (the key object and its index then): the index holds
    # while no other key was put in or taken out before it, which the key found there tells.
    need_key: tuple[float, str] | None = None
    need_at: int = 0
    mark_key: tuple[float, str] | None = None
    mark_at: int = 0

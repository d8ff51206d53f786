"""The fair-share models of the seeds, each as its source defines it, side by side.

One module per model: :mod:`.slurm`, :mod:`.share`, :mod:`.grid` and :mod:`.cambridge`. Each is
pure (time is passed in; nothing prints or reads a clock) and works on plain data
(:class:`osep.fairshare.hierarchy.Hierarchy`, usage per leaf). :data:`MODELS` is the one list of them:
a name, the columns of a report, and the function that computes a report's values for every node from
a tree and a table of usage. docs/fairshare.md describes each model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from osep.fairshare import cambridge, grid, share, slurm
from osep.fairshare.hierarchy import Hierarchy

Value = float | bool | tuple[float, ...] | None
Rows = dict[str, dict[str, Value]]


@dataclass(frozen=True, slots=True)
class Column:
    key: str  # the field of the model's row
    header: str
    kind: str  # how to show it: "fraction", "percent", "number", "flag", "tuple" or "price"
    about: str  # what it is, in a few words (a table's legend)
    main: bool = False  # one of the few a table shows by default (the rest: osep shares --wide)


@dataclass(frozen=True, slots=True)
class Params:
    """What a report may set beyond the tree and the usage; every default is the source's."""

    dampening: float = slurm.DEFAULT_DAMPENING  # Slurm's FairShareDampeningFactor
    k5: float = share.K5
    k6_tolerance: float = share.K6_TOLERANCE
    demand: float = cambridge.DEFAULT_DEMAND  # Cambridge's Np
    estimate: float = cambridge.DEFAULT_CPU_LIMIT  # Cambridge's Re


@dataclass(frozen=True, slots=True)
class Model:
    name: str
    title: str
    source: str  # which seed defines it
    columns: tuple[Column, ...]
    rows: Callable[[Hierarchy, Mapping[str, float], float | None, Params], Mapping[str, Any]]

    def report(self, tree: Hierarchy, usage: Mapping[str, float], total: float | None = None,
               params: Params = Params()) -> Rows:
        """Every node's values (only the nodes the model has values for), column by column."""
        computed = self.rows(tree, usage, total, params)
        return {node: {c.key: getattr(row, c.key) for c in self.columns} for node, row in computed.items()}


MODELS: tuple[Model, ...] = (
    Model(
        "slurm", "Slurm classic fair share", "seed 002: the Slurm manual, Classic Fairshare Algorithm",
        (Column("share", "S", "fraction", "normalized share", main=True),
         Column("usage", "U", "fraction", "normalized usage"),
         Column("effective", "UE", "fraction", "effective usage"),
         Column("factor", "F", "fraction", "fair-share factor 2^(-UE/S/d)", main=True)),
        lambda tree, usage, total, p: slurm.classic(tree, usage, total, dampening=p.dampening),
    ),
    Model(
        "share", "Share (Kay and Lauder)", "seed 000: Kay and Lauder, A Fair Share Scheduler",
        (Column("m_share", "m_share", "fraction", "machine share among active siblings"),
         Column("usage", "usage", "fraction", "usage, of the pool's"),
         Column("normalised", "usage/m", "number", "usage / m_share (1: its entitlement)", main=True),
         Column("due", "due", "fraction", "proportion due"),
         Column("near_future", "expects", "fraction", "proportion expected from usage"),
         Column("k5", "K5", "flag", "edge guard raised its usage"),
         Column("guarded_usage", "usage'", "fraction", "usage after the K5 guard"),
         Column("increment", "incr", "number", "priority increment per tick (lower runs first)",
                main=True),
         Column("k6", "K6", "flag", "group below its due: its users' charges cut"),
         Column("k6_factor", "K6 x", "number", "what its users' charges are multiplied by")),
        lambda tree, usage, total, p: share.report(tree, usage, total, k5=p.k5, tolerance=p.k6_tolerance),
    ),
    Model(
        "grid", "Grid-wide fair share (Elmroth and Gardfjäll)",
        "seed 001: Elmroth and Gardfjäll, decentralized Grid-wide fairshare",
        (Column("target", "target", "percent", "target share, % of its parent's"),
         Column("actual", "actual", "percent", "actual share, % of its parent's usage"),
         Column("deviation", "dev", "percent", "target - actual (above 0: owed)", main=True),
         Column("deviations", "tuple", "tuple", "the deviations from the top level down"),
         Column("priority", "priority", "number", "the deviations as one number (highest runs first)",
                main=True)),
        lambda tree, usage, total, p: grid.report(tree, usage, total),
    ),
    Model(
        "cambridge", "Cambridge (Hazel)", "seed 003: Hazel, Resource allocation and job scheduling",
        (Column("shares", "S", "number", "the project's shares"),
         Column("usage", "U", "number", "usage"),
         Column("outstanding", "W", "number", "work waiting"),
         Column("value", "V", "number", "resources used per share, usage/(20 S)", main=True),
         Column("price", "P", "price", "unit price of a job, 1 to 255", main=True),
         Column("accepted", "ok", "flag", "price within the job's limit")),
        lambda tree, usage, total, p: cambridge.report(tree, usage, demand=p.demand, estimate=p.estimate),
    ),
)


NAMES: tuple[str, ...] = tuple(m.name for m in MODELS)


def model(name: str) -> Model:
    for m in MODELS:
        if m.name == name:
            return m
    raise KeyError(f"no fair-share model {name!r}; the models are {', '.join(NAMES)}")

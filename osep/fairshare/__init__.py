"""The fair-share models of the seeds, each as its source defines it, side by side.

One module per model, each pure (time is passed in; nothing prints or reads a clock) and working on
plain data (:class:`osep.fairshare.hierarchy.Hierarchy`, usage per leaf):

=============  ======================================================  ==========================
name           model                                                   module
=============  ======================================================  ==========================
``slurm``      Slurm's classic fair share (manual page, seed 002)      :mod:`.slurm`
``share``      Kay and Lauder's Share (seed 000)                       :mod:`.share`
``grid``       Elmroth and Gardfjäll's Grid-wide fair share (seed 001)  :mod:`.grid`
``cambridge``  Hazel's Cambridge 370/165 scheduler (seed 003)          :mod:`.cambridge`
=============  ======================================================  ==========================

:data:`MODELS` is the one list of them: a name, the columns of a report, and the function that
computes a report's values for every node from a tree and a table of usage.
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
        (Column("share", "S", "fraction"), Column("usage", "U", "fraction"),
         Column("effective", "UE", "fraction"), Column("factor", "F", "fraction")),
        lambda tree, usage, total, p: slurm.classic(tree, usage, total, dampening=p.dampening),
    ),
    Model(
        "share", "Share (Kay and Lauder)", "seed 000: Kay and Lauder, A Fair Share Scheduler",
        (Column("m_share", "m_share", "fraction"), Column("usage", "usage", "fraction"),
         Column("normalised", "usage/m", "number"), Column("due", "due", "fraction"),
         Column("near_future", "expects", "fraction"), Column("k5", "K5", "flag"),
         Column("guarded_usage", "usage'", "fraction"), Column("increment", "incr", "number"),
         Column("k6", "K6", "flag"), Column("k6_factor", "K6 x", "number")),
        lambda tree, usage, total, p: share.report(tree, usage, total, k5=p.k5, tolerance=p.k6_tolerance),
    ),
    Model(
        "grid", "Grid-wide fair share (Elmroth and Gardfjäll)",
        "seed 001: Elmroth and Gardfjäll, decentralized Grid-wide fairshare",
        (Column("target", "target", "percent"), Column("actual", "actual", "percent"),
         Column("deviation", "dev", "percent"), Column("deviations", "tuple", "tuple"),
         Column("priority", "priority", "number")),
        lambda tree, usage, total, p: grid.report(tree, usage, total),
    ),
    Model(
        "cambridge", "Cambridge (Hazel)", "seed 003: Hazel, Resource allocation and job scheduling",
        (Column("shares", "S", "number"), Column("usage", "U", "number"),
         Column("outstanding", "W", "number"), Column("value", "V", "number"),
         Column("price", "P", "price"), Column("accepted", "ok", "flag")),
        lambda tree, usage, total, p: cambridge.report(tree, usage, demand=p.demand, estimate=p.estimate),
    ),
)

NAMES: tuple[str, ...] = tuple(m.name for m in MODELS)


def model(name: str) -> Model:
    for m in MODELS:
        if m.name == name:
            return m
    raise KeyError(f"no fair-share model {name!r}; the models are {', '.join(NAMES)}")

"""The one list of policies a simulation can run. Each name stands for a negotiator and an
enforcement setting; all of them run on the same pool, workload and owner shares:

- ``greedy``: HTCondor-style greedy matching in submit order (a job that does not fit is passed
  over, and later, smaller jobs start), no fair share, no preemption;
- ``fairshare``: matching ordered by the Fair-Share factor 2^(-U/S), no preemption;
- ``osep``: the Fair-Share negotiator (as in a real HTCondor pool) plus the OSEP enforcement loop;
  vacated jobs start over;
- ``osep-ckpt``: the same with checkpointing as the scenario's [checkpoint] table says;
- ``slurm``, ``share``, ``grid``, ``cambridge``: the seeds' fair-share models as the negotiator's
  order (:mod:`osep.sim.orderings`), on the policy's owner tree; no preemption.

The enforcing variants run over the negotiator the policy's ``excess`` names (Fair-Share unless the
policy file says otherwise): OSEP holds every owner to its share, and that model orders who gets
what the owners leave unused (the paper's hybrid).
"""

from __future__ import annotations

from dataclasses import dataclass

from osep.sim.specs import Order


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    description: str
    order: Order
    enforce: bool
    checkpoint: bool


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("greedy", "greedy matching in submit order; no fair share, no preemption", Order.GREEDY,
                False, False),
        Variant("fairshare", "Fair-Share priority orders matching; no preemption",
                Order.FAIRSHARE, False, False),
        Variant("osep", "OSEP enforcement over a Fair-Share negotiator; no checkpointing",
                Order.FAIRSHARE, True, False),
        Variant("osep-ckpt", "OSEP enforcement with checkpointing", Order.FAIRSHARE, True, True),
        Variant("slurm", "Slurm's classic fair share orders matching; no preemption",
                Order.SLURM, False, False),
        Variant("share", "Kay and Lauder's Share orders matching; no preemption",
                Order.SHARE, False, False),
        Variant("grid", "Elmroth and Gardfjäll's Grid-wide fair share orders matching; no preemption",
                Order.GRID, False, False),
        Variant("cambridge", "Hazel's Cambridge unit prices defer jobs, then greedy matching in submit order",
                Order.CAMBRIDGE, False, False),
    )
}
NAMES: tuple[str, ...] = tuple(VARIANTS)
# What a scenario runs when it does not say: the paper's comparison.
DEFAULT_NAMES: tuple[str, ...] = ("greedy", "fairshare", "osep", "osep-ckpt")

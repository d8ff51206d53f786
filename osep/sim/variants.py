"""The one list of policies a simulation can run. Each name stands for a negotiator's order and an
enforcement setting; all of them run on the same pool, workload and owner shares.

:data:`VARIANTS` describes each, and docs/simulate.md shows that table. ``greedy`` is HTCondor-style
greedy matching in submit order: a job that does not fit is passed over, and later, smaller jobs
start. The enforcing variants (``osep``, ``osep-ckpt``) run over the negotiator the policy's
``excess`` names (Fair-Share unless it says otherwise): OSEP holds every owner to its share, and that
model orders who gets what the owners leave unused (the paper's hybrid).
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

"""Measuring against an owner tree: the ideal each member is measured against (the tree's feasible
share, level by level) and the top-level groups' own shares, for the metrics of the groups as
owners. Simulations (:mod:`osep.sim.experiment`) and replays (:mod:`osep.replay.history`) both use
these."""

from __future__ import annotations

from collections.abc import Mapping

from osep.core.tree import ShareTree
from osep.measure.meter import Ideal


def tree_ideal(tree: ShareTree | None) -> Ideal | None:
    """An owner tree's feasible shares for a demand and a capacity (None: the meter's flat
    water-filling of the owners' shares)."""
    if tree is None:
        return None

    def fill(demand: Mapping[str, float], capacity: float) -> Mapping[str, float]:
        got = tree.entitlements(demand, capacity, feasible=True).entitled
        return {o: got.get(o, 0.0) for o in set(demand) | set(tree.shares)}

    return fill


def group_shares(tree: ShareTree, capacity: float) -> dict[str, float]:
    """Each top-level group's resolved share: measured as owners, the groups' ideal is the flat
    water-filling of these and their demand, which is the tree's first level."""
    resolved = tree.resolve_nodes(capacity)
    return {g: resolved[g] for g in tree.top}


def top_group(tree: ShareTree, owner: str) -> str:
    """The top-level group (or top-level owner) ``owner`` counts under."""
    return tree.path(owner)[0]

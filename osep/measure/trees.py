"""Measuring against an owner tree: the ideal each member is measured against (the tree's feasible
share, level by level) and the top-level groups' own shares, for the metrics of the groups as
owners. Simulations (:mod:`osep.sim.experiment`) and replays (:mod:`osep.replay.history`) both use
these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from osep.core.shares import feasible_shares
from osep.core.tree import ROOT, ShareTree
from osep.measure.meter import Ideal


@dataclass(frozen=True, slots=True)
class _Levels:
    """The tree's groups as the fill walks them, for one set of unlisted owners and one capacity."""

    members: dict[str, tuple[str, ...]]  # each group's members (the top level's under ROOT)
    shares: dict[str, dict[str, float]]  # each group's members' resolved shares
    up: dict[str, str]  # each member's group
    post: tuple[str, ...]  # the groups, every group after the groups below it (ROOT last)


class _Filler:
    """:meth:`ShareTree.entitlements` with feasible targets, as the meter asks for it: at every
    change of demand, for the same tree. The answer is the same, number for number: each group's
    entitlement is filled over its members by the same :func:`feasible_shares` call on the same
    arguments, each subtree's demand summed over its members in the same order. Kept between calls:
    what does not depend on demand (each group's members and their resolved shares, per capacity)
    and, per group, its last fill and what it was filled from, so that a group whose entitlement
    and members' demands did not change is not filled again. A group whose subtree asks for nothing
    entitles every member below it to 0 (``feasible_shares`` with no demand), so it is not walked.
    On a tree of hundreds of owners most events change one group's demand, and this is what keeps
    the meter's cost from growing with the tree (the whole LCG trace, 231 owners in 28 groups)."""

    def __init__(self, tree: ShareTree) -> None:
        self.tree = tree
        self.leaves = tuple(tree.shares)
        self._levels: dict[tuple[frozenset[str], float], _Levels] = {}
        # Per group: the entitlement, demands and shares of its last fill, and the fill.
        self._last: dict[str, tuple[float, tuple[float, ...], dict[str, float], dict[str, float]]] = {}

    def levels(self, extra: frozenset[str], capacity: float) -> _Levels:
        """Each group's members (ROOT's: the top level) and their resolved shares for ``capacity``;
        owners the tree does not list (``extra``) are placed where the accountant places them, after
        the listed members, in name order, with no share (as :meth:`ShareTree.entitlements` does)."""
        key = (extra, capacity)
        known = self._levels.get(key)
        if known is None:
            grown: dict[str, list[str]] = {ROOT: list(self.tree.top)}
            for name, node in self.tree.nodes.items():
                if node.children:
                    grown[name] = list(node.children)
            for owner in sorted(extra):
                grown[self.tree.place(owner)].append(owner)
            resolved = self.tree.resolve_nodes(capacity)
            members = {g: tuple(m) for g, m in grown.items()}
            post: list[str] = []
            stack = [(ROOT, False)]
            while stack:
                group, done = stack.pop()
                if done:
                    post.append(group)
                    continue
                stack.append((group, True))
                stack.extend((k, False) for k in members[group] if k in members)
            known = _Levels(members, {g: {k: resolved.get(k, 0.0) for k in m} for g, m in members.items()},
                            {k: g for g, m in members.items() for k in m}, tuple(post))
            if len(self._levels) >= 64:
                self._levels.clear()
            self._levels[key] = known
        return known

    def __call__(self, demand: Mapping[str, float], capacity: float) -> dict[str, float]:
        nodes = self.tree.nodes
        levels = self.levels(frozenset(o for o in demand if o not in nodes), capacity)
        members, shares, up = levels.members, levels.shares, levels.up
        # Each subtree's demand, as ShareTree.entitlements sums it (over the members in order, from
        # 0): only the groups with demand below them are summed, the others' sum being 0.
        wanted: dict[str, float] = {}
        asking = {ROOT}
        for owner in demand:
            if owner in members:
                continue  # a group's own name is no owner
            wanted[owner] = float(demand[owner])
            group = up.get(owner, ROOT)
            while group not in asking:
                asking.add(group)
                group = up.get(group, ROOT)
        for group in levels.post:
            if group in asking:
                wanted[group] = sum(wanted.get(k, 0.0) for k in members[group])
        entitled: dict[str, float] = {}
        pending = [(ROOT, float(capacity))]
        while pending:
            name, amount = pending.pop()
            kids = members[name]
            owned = shares[name]
            asked = tuple(wanted.get(k, 0.0) for k in kids)
            last = self._last.get(name)
            if last is not None and last[2] is owned and last[0] == amount and last[1] == asked:
                filled = last[3]
            else:
                filled = feasible_shares(owned, dict(zip(kids, asked, strict=True)), amount)
                self._last[name] = (amount, asked, owned, filled)
            for k in kids:
                entitled[k] = filled[k]
                if k in members and wanted.get(k, 0.0) != 0.0:
                    pending.append((k, filled[k]))
        return {o: entitled.get(o, 0.0) for o in set(demand) | set(self.leaves)}


def tree_ideal(tree: ShareTree | None) -> Ideal | None:
    """An owner tree's feasible shares for a demand and a capacity (None: the meter's flat
    water-filling of the owners' shares): :meth:`ShareTree.entitlements` with feasible targets,
    kept from one call to the next (:class:`_Filler`)."""
    if tree is None:
        return None
    return _Filler(tree)


def group_shares(tree: ShareTree, capacity: float) -> dict[str, float]:
    """Each top-level group's resolved share: measured as owners, the groups' ideal is the flat
    water-filling of these and their demand, which is the tree's first level."""
    resolved = tree.resolve_nodes(capacity)
    return {g: resolved[g] for g in tree.top}


def top_group(tree: ShareTree, owner: str) -> str:
    """The top-level group (or top-level owner) ``owner`` counts under."""
    return tree.path(owner)[0]

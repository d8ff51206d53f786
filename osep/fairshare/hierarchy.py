"""The account tree the fair-share models work on, as plain data.

The models do not care how a policy file spells a tree: they take ``parents`` (every node's parent,
``""`` for a top-level node) and ``shares`` (every node's configured number of shares, as written:
for a percentage share, the percentage's number), and ``percent``, the nodes whose number is a
percentage of their parent's share (only the Grid model, whose targets are percentages, reads it).
Usage is given per leaf; a group's usage is the sum over the leaves below it. Names are opaque
strings here (full dotted paths in osep's policy files, but nothing below splits them).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from osep.core.tree import ShareTree

ROOT = ""


@dataclass(frozen=True)
class Hierarchy:
    """An account tree: who is below whom, and each node's raw number of shares.

    Children keep the order in which ``parents`` lists them, so reports come out in the policy
    file's order.
    """

    parents: Mapping[str, str]
    shares: Mapping[str, float]
    percent: frozenset[str] = frozenset()
    _kids: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _totals: dict[str, float] = field(init=False, repr=False, compare=False)
    _order: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _leaves: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _groups: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _paths: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kids: dict[str, list[str]] = {ROOT: []}
        for node, parent in self.parents.items():
            if node == ROOT:
                raise ValueError("a node cannot have the empty name")
            if parent != ROOT and parent not in self.parents:
                raise ValueError(f"{node!r}: its parent {parent!r} is not in the tree")
            share = self.shares.get(node)
            if share is None:
                raise ValueError(f"{node!r}: no number of shares")
            if not math.isfinite(share) or share < 0:
                raise ValueError(f"{node!r}: shares must be finite and not negative, got {share!r}")
            kids.setdefault(parent, []).append(node)
        for node in self.parents:  # every node reaches the root: no cycles
            seen = {node}
            up = self.parents[node]
            while up != ROOT:
                if up in seen:
                    raise ValueError(f"{node!r}: its ancestry loops back on itself")
                seen.add(up)
                up = self.parents[up]
        object.__setattr__(self, "_kids", {k: tuple(v) for k, v in kids.items()})
        object.__setattr__(self, "_totals", {k: sum(self.shares[c] for c in v) for k, v in kids.items()})
        # The tree does not change: its walks are made once (the simulator's orderings ask at every
        # negotiation cycle).
        out: list[str] = []
        stack = list(reversed(self._kids[ROOT]))
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(self._kids.get(node, ())))
        object.__setattr__(self, "_order", tuple(out))
        object.__setattr__(self, "_leaves", tuple(n for n in out if not self._kids.get(n)))
        object.__setattr__(self, "_groups", tuple(n for n in out if self._kids.get(n)))
        paths: dict[str, tuple[str, ...]] = {}
        for node in out:  # parents first
            parent = self.parents[node]
            paths[node] = (*paths[parent], node) if parent != ROOT else (node,)
        object.__setattr__(self, "_paths", paths)

    def children(self, node: str = ROOT) -> tuple[str, ...]:
        return self._kids.get(node, ())

    def is_leaf(self, node: str) -> bool:
        return node in self.parents and not self._kids.get(node)

    def leaves(self) -> tuple[str, ...]:
        return self._leaves

    def groups(self) -> tuple[str, ...]:
        """The nodes that have children."""
        return self._groups

    def order(self) -> tuple[str, ...]:
        """Every node, each parent before its children, depth first (as ``sshare`` lists them)."""
        return self._order

    def path(self, node: str) -> tuple[str, ...]:
        """``node``'s ancestry from the top level down to ``node`` itself."""
        if node == ROOT:
            return ()
        return self._paths[node]

    def level(self, node: str) -> int:
        """1 for a top-level node, 2 for its children, and so on."""
        return len(self.path(node))

    def depth(self) -> int:
        """The number of levels: the longest path from the top down to a leaf."""
        return max((self.level(n) for n in self.parents), default=0)

    def sibling_shares(self, node: str) -> float:
        """The shares of ``node`` and all its siblings, added up."""
        return self._totals[self.parents[node]]

    def children_shares(self, node: str, among: Collection[str] | None = None) -> float:
        """The shares of ``node``'s children (only those in ``among``, if given), added up."""
        if among is None:
            return self._totals.get(node, 0.0)
        return sum(self.shares[k] for k in self.children(node) if k in among)

    def subtree_usage(self, usage: Mapping[str, float]) -> dict[str, float]:
        """Every node's usage: its own if a leaf, else the sum over the leaves below it.

        ``usage`` may only name leaves (a usage for a group, or for a name not in the tree, is a
        ``ValueError``); a leaf it does not name has used nothing.
        """
        check_usage(self, usage)
        out = dict.fromkeys(self.parents, 0.0)
        for leaf, amount in usage.items():
            node = leaf
            while node != ROOT:
                out[node] += amount
                node = self.parents[node]
        return out


def of_shares(shares: Any, resource: str, members: Iterable[str] = ()) -> Hierarchy:
    """The account tree a policy's shares describe in ``resource``: a :class:`ShareTree` as it is; a
    flat table, or a mapping of owners to amounts, as one level. Every name in ``members`` the policy
    does not list is added as a leaf of no shares where the accountant would charge it (inside the
    group it is placed in, for a tree; at the top level otherwise), in name order (``members`` may be
    a set: its order is not the tree's)."""
    members = sorted(set(members))
    if isinstance(shares, ShareTree):
        parents = shares.parents()
        raw = shares.raw()
        percent = {n for n, node in shares.nodes.items() if node.percent}
        for name in members:
            if name not in parents:
                parents[name] = shares.place(name)
                raw[name] = 0.0
    else:
        raw = dict(shares) if isinstance(shares, Mapping) else dict(shares.amounts(resource))
        parents = dict.fromkeys(raw, ROOT)
        percent = set(raw) if getattr(shares, "percent", False) else set()
        for name in members:
            if name not in parents:
                parents[name] = ROOT
                raw[name] = 0.0
    return Hierarchy(parents, raw, frozenset(percent))


def check_usage(tree: Hierarchy, usage: Mapping[str, float]) -> None:
    for name, amount in usage.items():
        if name not in tree.parents:
            raise ValueError(f"{name!r} is not in the tree")
        if not tree.is_leaf(name):
            raise ValueError(f"{name!r} is a group, not a leaf: usage is given per leaf")
        if not math.isfinite(amount) or amount < 0:
            raise ValueError(f"{name!r}: usage must be finite and not negative, got {amount!r}")


def pool_usage(usage: Mapping[str, float], total: float | None = None) -> float:
    """The whole pool's usage: ``total`` if given (the pool may have used more than the leaves named
    account for, as in the Slurm manual's example, where the users' usages add up to 0.7 of the
    machine), else the sum of ``usage``."""
    summed = sum(usage.values())
    if total is None:
        return summed
    if not math.isfinite(total) or total < summed * (1 - 1e-12):
        raise ValueError(f"the pool's usage ({total!r}) must be finite and at least the sum of the "
                         f"leaves' ({summed!r})")
    return total


def usage_fractions(tree: Hierarchy, usage: Mapping[str, float],
                    total: float | None = None) -> dict[str, float]:
    """Every node's usage as a fraction of the pool's (all 0 when nothing was used)."""
    pool = pool_usage(usage, total)
    return {n: (u / pool if pool > 0 else 0.0) for n, u in tree.subtree_usage(usage).items()}

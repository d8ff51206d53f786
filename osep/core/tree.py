"""Owner trees: shares given down a tree of groups, subgroups and users.

A node's full name is its dotted path, as HTCondor names accounting groups. A job counts for the
deepest listed node its accounting name starts with (:meth:`ShareTree.owner_of`), as HTCondor's
accountant assigns a submitter to the longest matching group; a group's own jobs count for its member
:data:`OWN`. Targets (:meth:`ShareTree.entitlements`) are filled level by level with the same max-min
water-filling as flat feasible shares (:func:`osep.core.shares.feasible_shares`), so capacity a member
leaves unused goes first to its siblings (subgroup isolation). docs/configuration.md gives the file's
tree and where each job counts; docs/policy.md gives how targets are filled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from osep.core.resources import RESOURCES
from osep.core.shares import feasible_shares

ROOT = ""  # the pool: the parent of every top-level node
OWN = "(own)"  # the member a group's own jobs count for, below the group's name


@dataclass(frozen=True, slots=True)
class TreeNode:
    name: str  # full dotted name
    parent: str  # ROOT at the top
    share: float  # an amount of the unit, or a percentage of the parent's share
    percent: bool
    children: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entitlements:
    """What a tree entitles every node and every owner to, for one snapshot."""

    shares: dict[str, float]  # every listed node's owner share, absolute
    demand: dict[str, float]  # every node's and owner's, its subtree's
    entitled: dict[str, float]  # every node's and owner's target
    paths: dict[str, tuple[str, ...]]  # every owner's nodes, top level first, the owner last


@dataclass(frozen=True)
class ShareTree:
    """A share tree in one resource (``resource``, the policy's unit)."""

    nodes: Mapping[str, TreeNode]
    resource: str
    top: tuple[str, ...]
    _owners: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    # -- the face of a flat ShareTable, for the leaves ------------------------------------------

    @property
    def shares(self) -> dict[str, float]:
        """Every leaf's configured share (as written: an amount, or a percentage of its parent)."""
        return {n: node.share for n, node in self.nodes.items() if not node.children}

    @property
    def percent(self) -> bool:
        return any(node.percent for node in self.nodes.values())

    def resources(self) -> set[str]:
        return {self.resource}

    def amounts(self, resource: str) -> dict[str, float]:
        return {n: s if resource == self.resource else 0.0 for n, s in self.shares.items()}

    def resolve(self, capacity: float, resource: str = "slots") -> dict[str, float]:
        """Every leaf's owner share, absolute, for a pool with ``capacity`` of the resource."""
        if resource != self.resource:
            return dict.fromkeys(self.shares, 0.0)
        amounts = self.resolve_nodes(capacity)
        return {n: amounts[n] for n in self.shares}

    def resolve_all(self, capacity: tuple[float, ...]) -> dict[str, dict[str, float]]:
        total = capacity[RESOURCES.index(self.resource)]
        return {n: {self.resource: a} for n, a in self.resolve(total, self.resource).items()}

    def largest(self, capacity: float) -> float:
        """The largest resolved share of any node: the paper's recommended p, which lets the most
        entitled owner reach its share in one cycle, here a whole group coming back at once."""
        return max(self.resolve_nodes(capacity).values(), default=0.0)

    # -- the tree ---------------------------------------------------------------------------------

    def children(self, name: str) -> tuple[str, ...]:
        return self.top if name == ROOT else self.nodes[name].children

    def parents(self) -> dict[str, str]:
        return {n: node.parent for n, node in self.nodes.items()}

    def raw(self) -> dict[str, float]:
        """Every node's configured number (a percentage's number for a percent share)."""
        return {n: node.share for n, node in self.nodes.items()}

    def depth(self) -> int:
        return max((len(self.ancestry(n)) for n in self.nodes), default=0)

    def ancestry(self, name: str) -> tuple[str, ...]:
        """A listed node's path from the top level down to itself."""
        out = []
        while name != ROOT:
            out.append(name)
            name = self.nodes[name].parent
        return tuple(reversed(out))

    def resolve_nodes(self, capacity: float) -> dict[str, float]:
        """Every listed node's owner share as an amount, for a pool with ``capacity``."""
        out: dict[str, float] = {}
        level: list[tuple[str, float]] = [(ROOT, capacity)]
        while level:
            parent, amount = level.pop()
            kids = self.children(parent)
            raw = {k: (amount * self.nodes[k].share / 100.0 if self.nodes[k].percent
                       else self.nodes[k].share) for k in kids}
            total = sum(raw.values())
            scale = amount / total if total > amount and total > 0 else 1.0
            for k in kids:
                out[k] = raw[k] * scale
                if self.nodes[k].children:
                    level.append((k, out[k]))
        return out

    def owner_of(self, account: str) -> str:
        """The owner a job charged to ``account`` counts for (see the module's description)."""
        known = self._owners.get(account)
        if known is not None:
            return known
        parts = account.split(".")
        owner = account
        for depth in range(len(parts), 0, -1):
            prefix = ".".join(parts[:depth])
            node = self.nodes.get(prefix)
            if node is None:
                continue
            if not node.children:
                owner = prefix
            elif depth == len(parts):
                owner = f"{prefix}.{OWN}"
            else:
                owner = f"{prefix}.{parts[depth]}"
            break
        if len(self._owners) < 1_000_000:
            self._owners[account] = owner
        return owner

    def place(self, owner: str) -> str:
        """The node an owner is a member of (ROOT at the top)."""
        node = self.nodes.get(owner)
        if node is not None:
            return node.parent
        parts = owner.split(".")
        for depth in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:depth])
            if prefix in self.nodes:
                return prefix if self.nodes[prefix].children else ROOT
        return ROOT

    def path(self, owner: str) -> tuple[str, ...]:
        """An owner's nodes from the top level down, the owner itself last."""
        if owner in self.nodes:
            return self.ancestry(owner)
        parent = self.place(owner)
        return (*self.ancestry(parent), owner) if parent != ROOT else (owner,)

    def entitlements(self, demand: Mapping[str, float], capacity: float,
                     feasible: bool) -> Entitlements:
        """Every node's and owner's target, given each owner's ``demand`` (in the unit) and the pool's
        ``capacity``: level by level water-filling (see the module's description). ``feasible``:
        fill the whole pool from the top; else the top level is held to its owner shares."""
        shares = self.resolve_nodes(capacity)
        members: dict[str, list[str]] = {ROOT: list(self.top)}
        for name, node in self.nodes.items():
            if node.children:
                members[name] = list(node.children)
        paths: dict[str, tuple[str, ...]] = {}
        for owner in sorted(set(demand) | set(self.shares)):
            paths[owner] = self.path(owner)
            if owner not in self.nodes:
                members[self.place(owner)].append(owner)
        wanted: dict[str, float] = {}

        def subtree(name: str) -> float:
            kids = members.get(name)
            total = float(demand.get(name, 0.0)) if kids is None else sum(subtree(k) for k in kids)
            wanted[name] = total
            return total

        subtree(ROOT)
        entitled: dict[str, float] = {}
        if feasible:
            pending = [(ROOT, float(capacity))]
        else:
            entitled.update({m: shares.get(m, 0.0) for m in members[ROOT]})
            pending = [(m, entitled[m]) for m in members[ROOT] if m in members]
        while pending:
            name, amount = pending.pop()
            kids = members[name]
            filled = feasible_shares({k: shares.get(k, 0.0) for k in kids},
                                     {k: wanted[k] for k in kids}, amount)
            for k in kids:
                entitled[k] = filled[k]
                if k in members:
                    pending.append((k, filled[k]))
        wanted.pop(ROOT, None)
        return Entitlements(shares, wanted, entitled, paths)

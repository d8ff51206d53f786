"""Measuring against an owner tree: the ideal each member is measured against (the tree's feasible
share, level by level) and the top-level groups' own shares, for the metrics of the groups as
owners. Simulations (:mod:`osep.experiment.runs`) and replays (:mod:`osep.replay.history`) both use
these."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from osep.core.shares import feasible_shares
from osep.core.tree import ROOT, ShareTree
from osep.measure.pieces import Ideal


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
        # What :meth:`update` keeps between calls (None until its first): the levels and capacity
        # it was for, the owners the tree does not list among those asking, each node's demand
        # (an owner's own, a group's summed) and each node's entitlement, where not 0.
        self._kept: tuple[_Levels, float] | None = None
        self._extra: set[str] = set()
        self._wanted: dict[str, float] = {}
        self._entitled: dict[str, float] = {}
        self._out: dict[str, float] = {}  # the last answer, where not 0
        self._leafset = frozenset(self.leaves)

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
        _, entitled = self._fill_all(demand, capacity, levels)
        return {o: entitled.get(o, 0.0) for o in set(demand) | set(self.leaves)}

    def _fill_all(self, demand: Mapping[str, float], capacity: float, levels: _Levels
                  ) -> tuple[dict[str, float], dict[str, float]]:
        """Each node's demand (an owner's own, a group's summed over its subtree) and entitlement,
        filled from the top: what :meth:`ShareTree.entitlements` works out."""
        members, up = levels.members, levels.up
        # Each subtree's demand, as ShareTree.entitlements sums it (over the members in order, from
        # 0): only the groups with demand below them are summed, the others' sum being 0.
        wanted: dict[str, float] = {}
        asking = {ROOT}
        for owner in demand:
            if owner in members:
                continue  # a group's own name is no owner
            wanted[owner] = float(demand[owner])
            _mark_groups(owner, up, asking)
        for group in levels.post:
            if group in asking:
                wanted[group] = sum(wanted.get(k, 0.0) for k in members[group])
        entitled: dict[str, float] = {}
        pending = [(ROOT, float(capacity))]
        while pending:
            name, amount = pending.pop()
            kids = members[name]
            filled = self._fill(name, amount, tuple(wanted.get(k, 0.0) for k in kids), kids,
                                levels.shares[name])
            for k in kids:
                entitled[k] = filled[k]
                if k in members and wanted.get(k, 0.0) != 0.0:
                    pending.append((k, filled[k]))
        return wanted, entitled

    def update(self, demand: Mapping[str, float], moved: Iterable[str], capacity: float) -> dict[str, float]:
        """What :meth:`__call__` of ``demand`` would give, as the owners whose value in it changed
        since the last call (an owner missing from an answer counts as 0), with their new values:
        the meter's question at each instant, given the owners whose demand ``moved`` since (or
        that joined or left ``demand``). Each subtree's demand is summed again only above an owner
        that moved, and a group is filled again only when its entitlement or a member's demand
        moved; the sums and fills are :meth:`__call__`'s, over the same members in the same order,
        so the values are the same, bit for bit. When the owners the tree does not list change, or
        the capacity does, all is worked out again (their places change the groups' members)."""
        moved = set(moved)
        nodes = self.tree.nodes
        extra = self._extra
        for owner in moved:
            if owner not in nodes:
                if owner in demand:
                    extra.add(owner)
                else:
                    extra.discard(owner)
        levels = self.levels(frozenset(extra), capacity)
        kept = self._kept
        if kept is None or kept[0] is not levels or kept[1] != capacity:
            return self._afresh(demand, capacity, levels)
        members, up, wanted = levels.members, levels.up, self._wanted
        # The groups above an owner whose demand moved, and their sums again (children first).
        dirty: set[str] = {ROOT}
        for owner in moved:
            if owner in members:
                continue  # a group's own name is no owner
            amount = demand.get(owner, 0.0)
            if amount:
                wanted[owner] = float(amount)
            else:
                wanted.pop(owner, None)
            _mark_groups(owner, up, dirty)
        for group in levels.post:
            if group in dirty:
                total = sum(wanted.get(k, 0.0) for k in members[group])
                if total:
                    wanted[group] = total
                else:
                    wanted.pop(group, None)
        # The fills, from the top, into the groups whose entitlement or members' demand moved.
        entitled, shares = self._entitled, levels.shares
        touched = set(moved)  # the nodes whose entitlement may have changed, and the owners that moved
        pending = [(ROOT, float(capacity))]
        while pending:
            name, amount = pending.pop()
            kids = members[name]
            filled = self._fill(name, amount, tuple(wanted.get(k, 0.0) for k in kids), kids, shares[name])
            for k in kids:
                share = filled[k]
                before = entitled.get(k, 0.0)
                if share != before:
                    touched.add(k)
                    if share:
                        entitled[k] = share
                    else:
                        del entitled[k]
                if k in members:
                    if wanted.get(k, 0.0) != 0.0:
                        if share != before or k in dirty:
                            pending.append((k, share))
                    elif k in dirty:  # nothing is asked below it now: every node below it gets 0
                        self._zero(k, members, touched)
        # The answer's values that changed: an owner's in it is its node's entitlement.
        out, leaves = self._out, self._leafset
        changed: dict[str, float] = {}
        for o in touched:
            value = entitled.get(o, 0.0) if o in demand or o in leaves else 0.0
            if value != out.get(o, 0.0):
                changed[o] = value
                if value:
                    out[o] = value
                else:
                    del out[o]
        return changed

    def _fill(self, name: str, amount: float, asked: tuple[float, ...], kids: tuple[str, ...],
              owned: dict[str, float]) -> dict[str, float]:
        """Group ``name``'s fill of ``amount`` over ``kids`` asking ``asked`` (kept from its last
        fill if that was on the same figures)."""
        last = self._last.get(name)
        if last is not None and last[2] is owned and last[0] == amount and last[1] == asked:
            return last[3]
        filled = feasible_shares(owned, dict(zip(kids, asked, strict=True)), amount)
        self._last[name] = (amount, asked, owned, filled)
        return filled

    def _zero(self, group: str, members: Mapping[str, tuple[str, ...]], touched: set[str]) -> None:
        """Every node below ``group`` is entitled to 0 now."""
        stack = [group]
        entitled = self._entitled
        while stack:
            for k in members[stack.pop()]:
                if entitled.pop(k, 0.0) != 0.0:
                    touched.add(k)
                if k in members:
                    stack.append(k)

    def _afresh(self, demand: Mapping[str, float], capacity: float, levels: _Levels) -> dict[str, float]:
        """:meth:`update` worked out from nothing: every node's demand and entitlement kept, and
        the answer's values that changed from the last."""
        wanted, entitled = self._fill_all(demand, capacity, levels)
        answer = {o: entitled.get(o, 0.0) for o in set(demand) | set(self.leaves)}
        self._wanted = {k: v for k, v in wanted.items() if v}
        self._entitled = {k: v for k, v in entitled.items() if v}
        self._kept = (levels, capacity)
        self._extra = {o for o in demand if o not in self.tree.nodes}
        before = self._out
        changed = {o: v for o, v in answer.items() if v != before.get(o, 0.0)}
        changed.update((o, 0.0) for o, v in before.items() if o not in answer and v != 0.0)
        self._out = {o: v for o, v in answer.items() if v}
        return changed


def _mark_groups(owner: str, up: Mapping[str, str], marked: set[str]) -> None:
    """Put the groups above ``owner`` in ``marked``, up to the first one already there (ROOT, the
    top, always is)."""
    group = up.get(owner, ROOT)
    while group not in marked:
        marked.add(group)
        group = up.get(group, ROOT)


def tree_ideal(tree: ShareTree | None) -> Ideal | None:
    """An owner tree's feasible shares for a demand and a capacity (None: the meter's flat
    water-filling of the owners' shares): :meth:`ShareTree.entitlements` with feasible targets,
    kept from one call to the next (:class:`_Filler`). Its :meth:`_Filler.update` answers with what
    changed since its own last answer: one such ideal serves one meter (make one per meter)."""
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

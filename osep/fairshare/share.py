"""Kay and Lauder's Share (seed 000), at the level of users and groups.

Usage decay, hierarchical ``m_share``, the priority increment, the K5 edge guard and the K6 group
adjustment, each pure; docs/fairshare.md gives the formulas and what is not modelled. Some of the
paper's formulas were images missing from its text. Those are reconstructed from its prose, and each
function that holds one is marked "reconstructed" and says how.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from math import fsum

from osep.fairshare.hierarchy import ROOT, Hierarchy, usage_fractions
from osep.fairshare.usage import decayed

K5 = 2.0  # the edge-effect bound: at most K5 times the proportion due
K6_TOLERANCE = 0.10  # how far below its due proportion a group may fall before its charges are cut
INF = float("inf")


@dataclass(frozen=True, slots=True)
class ShareRow:
    m_share: float  # the machine share over active siblings (0 when inactive)
    usage: float  # the node's usage as a fraction of the pool's
    normalised: float | None  # usage / m_share: 1 is exactly its entitlement (None if m_share is 0)
    due: float | None  # users: proportion due (None for groups)
    near_future: float | None  # users: proportion expected from usage, after the K5 guard
    k5: bool | None  # users: the edge-effect guard raised its usage (None for groups)
    guarded_usage: float | None  # users: usage after the K5 guard
    increment: float | None  # users: priority increment per tick for one active process
    k6: bool | None  # groups: under (1 - K6_TOLERANCE) of its due: its users' charges are cut
    k6_factor: float | None  # groups: the factor its users' charges are multiplied by


def k1(t1: float, half_life: float) -> float:
    """The decay constant ``K1`` for the user-level scheduler's period ``t1`` and a half-life."""
    return decayed(1.0, 0.0, t1, half_life)


def decay_usage(usage: float, charges: float, elapsed: float, half_life: float) -> float:
    """``usage * K1 + charges``, for ``elapsed`` seconds since the last update (any multiple of t1)."""
    return decayed(usage, 0.0, elapsed, half_life) + charges


def active_nodes(tree: Hierarchy, active_leaves: Collection[str]) -> set[str]:
    """The active leaves and every group with an active leaf below it."""
    out: set[str] = set()
    for leaf in active_leaves:
        out.update(tree.path(leaf))
    return out


def m_shares(tree: Hierarchy, active_leaves: Collection[str] | None = None) -> dict[str, float]:
    """Every node's ``m_share``. All leaves are active when ``active_leaves`` is None.

    Reconstructed: ``m_share(child) = m_share(parent) * shares(child) / sum(shares of the active children
    of parent)``, 1 for the whole machine, 0 for an inactive node (a user is active while it has work, a
    group while any user below it is).
    """
    active = active_nodes(tree, tree.leaves() if active_leaves is None else active_leaves)
    out: dict[str, float] = {}
    totals = {p: tree.children_shares(p, active) for p in (ROOT, *tree.groups())}
    for node in tree.order():
        parent = tree.parents[node]
        if node not in active:
            out[node] = 0.0
            continue
        above = 1.0 if parent == ROOT else out[parent]
        total = totals[parent]
        out[node] = above * (tree.shares[node] / total) if total > 0 else 0.0
    return out


def _rates(m_share: Mapping[str, float], usage: Mapping[str, float], users: Collection[str]) -> dict[str, float]:
    """Each user's expected rate of work, ``m_share^2 / usage`` (infinite with no usage)."""
    out = {}
    for u in users:
        m2 = m_share[u] ** 2
        out[u] = 0.0 if m2 == 0 else (INF if usage.get(u, 0.0) <= 0 else m2 / usage[u])
    return out


def proportions(m_share: Mapping[str, float], usage: Mapping[str, float],
                users: Collection[str]) -> tuple[dict[str, float], dict[str, float]]:
    """Each active user's proportion due and near-future proportion.

    Reconstructed: the proportion due is ``m_share / sum(m_share of active users)``. A user's processes
    get the machine at a rate proportional to ``m_share^2 / usage`` (the inverse of the priority increment
    per process, times the processes sharing it), so its near-future proportion is that rate over the
    active users' sum of it. A user with no usage expects all of it (ties split evenly).
    """
    total = fsum(m_share[u] for u in users)
    due = {u: (m_share[u] / total if total > 0 else 0.0) for u in users}
    rates = _rates(m_share, usage, users)
    unbounded = [u for u, r in rates.items() if r == INF]
    if unbounded:
        near = {u: (1.0 / len(unbounded) if rates[u] == INF else 0.0) for u in users}
    else:
        rate_total = fsum(rates.values())
        near = {u: (r / rate_total if rate_total > 0 else 0.0) for u, r in rates.items()}
    return due, near


def edge_guard(m_share: Mapping[str, float], usage: Mapping[str, float], users: Collection[str],
               k5: float = K5) -> dict[str, float]:
    """The active users' usage after the K5 guard.

    Reconstructed action: raise the usage of every user whose near-future proportion exceeds K5 times its
    due, just enough that it equals K5 times its due, the others' usage held. All such users are held at
    once (a small fixed point, its sums exactly rounded with ``math.fsum``), so that neither the order of
    users nor rounding changes the result. When users with no usage have bounds that add up to the whole
    machine or more, they are held at their due instead (K5 cannot hold for all of them). When no active
    user has usage, nothing changes.
    """
    out = {u: usage.get(u, 0.0) for u in users}
    due, _ = proportions(m_share, usage, users)
    rates = _rates(m_share, usage, users)
    bound = {u: k5 * due[u] for u in users}
    held: set[str] = set()
    bounds = bound
    while True:
        free = [u for u in users if u not in held]
        if fsum(bound[u] for u in held) >= 1.0:  # K5 cannot hold for all of them: due instead
            bounds = due
            break
        free_rate = fsum(rates[u] for u in free)
        if free_rate == INF:  # users with no usage expect the whole machine
            newly = [u for u in free if rates[u] == INF and bound[u] < 1.0]
            if not newly:
                return out
            held.update(newly)
            continue
        rate_total = free_rate / (1.0 - fsum(bound[u] for u in held))
        newly = [u for u in free if bound[u] < 1.0 and rates[u] > bound[u] * rate_total]
        if not newly:
            break
        held.update(newly)
    free_rate = fsum(rates[u] for u in users if u not in held)
    held_total = fsum(bounds[u] for u in held)
    if free_rate in (0.0, INF) or held_total >= 1.0:  # nobody left to measure against
        return out
    rate_total = free_rate / (1.0 - held_total)
    for u in held:
        out[u] = m_share[u] ** 2 / (bounds[u] * rate_total)
    return out


def priority_increment(usage: float, active_processes: int, m_share: float) -> float:
    """How much a running process's priority grows per tick: ``usage * active / m_share^2``.

    Larger is worse. A user with no share gets an infinite increment (it only runs when nobody
    else wants the machine).
    """
    square = m_share**2
    if square <= 0:  # no share (or one too small to square)
        return INF
    return usage * active_processes / square


def group_charge_factors(tree: Hierarchy, m_share: Mapping[str, float], charges: Mapping[str, float],
                         tolerance: float = K6_TOLERANCE) -> dict[str, float]:
    """The factor each group's users' charges are multiplied by, under the K6 rule.

    Reconstructed: the paper's "10%" is how far below its due a group may fall, so a group is cut when
    ``actual < (1 - tolerance) * due``, both measured within its parent (its charges over its parent's;
    its ``m_share`` over its parent's). Its factor is then ``actual / due``; factors of nested groups
    multiply (:func:`adjusted_charges`). Groups within tolerance, inactive groups and groups whose parent
    was charged nothing get 1. ``charges`` are the last period's, per leaf.
    """
    under = tree.subtree_usage(charges)
    below = {p: sum(under[k] for k in tree.children(p)) for p in (ROOT, *tree.groups())}
    out: dict[str, float] = {}
    for group in tree.groups():
        parent = tree.parents[group]
        parent_charges = below[parent]
        parent_share = 1.0 if parent == ROOT else m_share[parent]
        if m_share[group] <= 0 or parent_charges <= 0 or parent_share <= 0:
            out[group] = 1.0
            continue
        actual = under[group] / parent_charges
        due = m_share[group] / parent_share
        out[group] = actual / due if actual < (1.0 - tolerance) * due else 1.0
    return out


def adjusted_charges(tree: Hierarchy, m_share: Mapping[str, float], charges: Mapping[str, float],
                     tolerance: float = K6_TOLERANCE) -> dict[str, float]:
    """Each leaf's charges for the last period after the K6 group adjustment."""
    factors = group_charge_factors(tree, m_share, charges, tolerance)
    out = {}
    for leaf, amount in charges.items():
        scale = 1.0
        for node in tree.path(leaf)[:-1]:
            scale *= factors[node]
        out[leaf] = amount * scale
    return out


@dataclass
class ShareState:
    """The user-level scheduler's state: decayed usage per leaf, brought forward in time.

    :meth:`step` is one run of the user-level scheduler: cut the charges of under-served groups (K6),
    decay every usage over the time elapsed and add the charges, then apply the K5 guard to the active
    users' usage. Time is passed in; nothing here reads a clock.
    """

    tree: Hierarchy
    half_life: float
    usage: dict[str, float]
    at: float = 0.0
    m_share: dict[str, float] = field(default_factory=dict)  # every node's, as of the last step

    def step(self, now: float, charges: Mapping[str, float], active_leaves: Collection[str],
             k5: float = K5, tolerance: float = K6_TOLERANCE) -> dict[str, float]:
        shares = m_shares(self.tree, active_leaves)
        self.m_share = shares
        cut = adjusted_charges(self.tree, shares, charges, tolerance)
        elapsed = max(0.0, now - self.at)
        for leaf in [*self.usage, *(leaf for leaf in cut if leaf not in self.usage)]:
            self.usage[leaf] = decay_usage(self.usage.get(leaf, 0.0), cut.get(leaf, 0.0), elapsed,
                                           self.half_life)
        self.usage.update(edge_guard(shares, self.usage, list(active_leaves), k5))
        self.at = max(self.at, now)
        return dict(self.usage)


def report(tree: Hierarchy, usage: Mapping[str, float], total: float | None = None, *,
           active_leaves: Collection[str] | None = None, k5: float = K5,
           tolerance: float = K6_TOLERANCE) -> dict[str, ShareRow]:
    """Share's quantities for every node, usage taken as a fraction of the pool's.

    Every leaf is active unless ``active_leaves`` says otherwise. For K6 the usage given stands for
    the last period's charges.
    """
    fractions = usage_fractions(tree, usage, total)
    active = list(tree.leaves() if active_leaves is None else active_leaves)
    shares = m_shares(tree, active)
    leaf_usage = {u: fractions[u] for u in active}
    guarded = edge_guard(shares, leaf_usage, active, k5)
    due, near = proportions(shares, guarded, active)
    factors = group_charge_factors(tree, shares, {leaf: fractions[leaf] for leaf in tree.leaves()},
                                   tolerance)
    out = {}
    for node in tree.order():
        m = shares[node]
        user = node in due
        out[node] = ShareRow(
            m_share=m,
            usage=fractions[node],
            normalised=fractions[node] / m if m > 0 else None,
            due=due[node] if user else None,
            near_future=near[node] if user else None,
            k5=guarded[node] != leaf_usage[node] if user else None,
            guarded_usage=guarded[node] if user else None,
            increment=priority_increment(guarded[node], 1, m) if user else None,
            k6=factors[node] < 1.0 if node in factors else None,
            k6_factor=factors.get(node),
        )
    return out

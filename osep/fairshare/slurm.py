"""Slurm's classic fair share (``PriorityFlags=NO_FAIR_TREE``), as the Slurm manual's "Classic
Fairshare Algorithm" page defines it (seed 002).

Quantities, per node of the account tree (an account or a user):

- normalized share ``S``: the product, from the node up to the top level, of each node's raw shares
  over the raw shares of it and all its siblings. The leaves' ``S`` add up to 1 (as long as no level
  is all zeros).
- normalized usage ``U`` (the manual's ``UA`` in the hierarchy): the node's decayed usage (its own for
  a user, its subtree's for an account) over the decayed usage of the whole cluster.
- effective usage ``UE``: ``U`` at the top level; below it ``UA + (UE_parent - UA) * S_raw / S_raw
  of all siblings``, worked out from the top down, so that a member of a busy account carries part of
  what the others in its account used.
- factor ``F = 2^(-UE / S / d)`` with ``d`` the FairShareDampeningFactor (1 by default; the manual's
  hierarchical formula is the ``d = 1`` case). ``F`` is 0.5 for a node that used exactly its share.

``FairShare=parent`` (optional): a node so flagged takes its parent's ``S`` and ``UE`` instead of its
own (the root's are 1 and 1), and its raw shares do not count among its siblings'; its children are
worked out from the values it took. This follows the manual's one paragraph; what Slurm does in corner
cases it does not describe (a flagged node with children of its own) is not claimed.

Usage decays with a half-life (``PriorityDecayHalfLife``); :func:`osep.fairshare.usage.decayed` and the
simulator's :class:`osep.fairshare.usage.Accountant`, keyed by leaf, are that decay and that bookkeeping
(the cluster's total ``RH`` is the sum over the leaves). :func:`period_decay` is the manual's ``D``.

Not modelled: Fair Tree (Slurm's default since 19.05), the other multifactor priority terms and
their weights, TRES billing weights, usage reset periods.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from osep.fairshare.hierarchy import ROOT, Hierarchy, usage_fractions
from osep.fairshare.usage import decayed, factor

DEFAULT_DAMPENING = 1.0


@dataclass(frozen=True, slots=True)
class SlurmRow:
    share: float  # S, normalized
    usage: float  # U (UA), normalized
    effective: float  # UE
    factor: float  # F


def period_decay(period: float, half_life: float) -> float:
    """The manual's ``D``: what one ``period`` of seconds leaves of earlier usage, for a half-life."""
    return decayed(1.0, 0.0, period, half_life)


def _sibling_totals(tree: Hierarchy, use_parent: Collection[str]) -> dict[str, float]:
    """Per parent, its children's raw shares added up, leaving out those flagged FairShare=parent."""
    if not use_parent:
        return {p: tree.children_shares(p) for p in (ROOT, *tree.groups())}
    return {p: sum(tree.shares[k] for k in tree.children(p) if k not in use_parent)
            for p in (ROOT, *tree.groups())}


def normalized_shares(tree: Hierarchy, use_parent: Collection[str] = ()) -> dict[str, float]:
    """Every node's ``S``: the product of its own and its ancestors' share of their siblings'."""
    out: dict[str, float] = {}
    totals = _sibling_totals(tree, use_parent)
    for node in tree.order():
        parent = tree.parents[node]
        above = 1.0 if parent == ROOT else out[parent]
        if node in use_parent:
            out[node] = above
            continue
        total = totals[parent]
        out[node] = above * (tree.shares[node] / total) if total > 0 else 0.0
    return out


def effective_usage(tree: Hierarchy, actual: Mapping[str, float],
                    use_parent: Collection[str] = ()) -> dict[str, float]:
    """Every node's ``UE`` from every node's normalized usage ``actual``, top down."""
    out: dict[str, float] = {}
    totals = _sibling_totals(tree, use_parent)
    for node in tree.order():
        parent = tree.parents[node]
        if node in use_parent:
            out[node] = 1.0 if parent == ROOT else out[parent]
            continue
        own = actual[node]
        total = totals[parent]
        if parent == ROOT or total <= 0:
            out[node] = own
        else:
            out[node] = own + (out[parent] - own) * (tree.shares[node] / total)
    return out


def classic(tree: Hierarchy, usage: Mapping[str, float], total: float | None = None, *,
            dampening: float = DEFAULT_DAMPENING, use_parent: Collection[str] = ()) -> dict[str, SlurmRow]:
    """The manual's quantities for every node, from each leaf's (decayed) usage in any unit and
    the pool's (``RH``; by default the sum over the leaves). A node with ``S = 0`` gets ``F = 0``.
    """
    if not dampening > 0:
        raise ValueError(f"the dampening factor must be positive, got {dampening!r}")
    actual = usage_fractions(tree, usage, total)
    shares = normalized_shares(tree, use_parent)
    effective = effective_usage(tree, actual, use_parent)
    return {n: SlurmRow(shares[n], actual[n], effective[n], factor(effective[n], shares[n], dampening))
            for n in tree.order()}

"""Slurm's classic fair share (``PriorityFlags=NO_FAIR_TREE``), as the Slurm manual's "Classic
Fairshare Algorithm" page defines it (seed 002).

Per node of the account tree: the normalized share ``S``, the normalized and effective usage ``U``
and ``UE``, and the factor ``F = 2^(-UE / S / d)``, with the optional ``FairShare=parent``.
docs/fairshare.md gives the formulas and what is not modelled. Usage decay is not here:
:func:`osep.fairshare.usage.decayed` and the simulator's :class:`osep.fairshare.usage.Accountant`,
keyed by leaf, are the manual's decay and bookkeeping; :func:`period_decay` is the manual's ``D``.
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

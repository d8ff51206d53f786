"""Elmroth and Gardfjäll's decentralized Grid-wide fair share (seed 001).

Targets, actual shares and deviations per node of the policy tree, the target-deviation tuple of a
job mapped to a node, and the paper's priority: that tuple read as one base-200 number, highest first.
docs/fairshare.md gives the formulas, the usage modes and what is not modelled. The number can order
two jobs differently from their tuples when the tuples first differ by under one point (deviations
here are real numbers, and +100 is possible): :func:`priority` gives the paper's number as defined,
and :func:`deviation_tuple` gives the tuple for whoever wants the order itself.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from osep.fairshare.hierarchy import ROOT, Hierarchy, pool_usage

BASE = 200  # deviations + 100 are the digits of a base-200 number
OFFSET = 100.0


class UsageMode(enum.Enum):
    HISTORICAL = "historical"
    ACTIVE = "active"
    PREDICTIVE = "predictive"


@dataclass(frozen=True, slots=True)
class RunningJob:
    node: str  # the leaf it is charged to
    elapsed: float  # seconds (or resource-seconds) it has run so far
    requested: float  # the wall-clock time it asked for, in the same unit


@dataclass(frozen=True, slots=True)
class GridRow:
    target: float  # percent of the parent's
    actual: float  # percent of the parent's usage
    deviation: float  # target - actual
    deviations: tuple[float, ...]  # top level down to this node, padded with zeros to the depth
    priority: float


def job_usage(mode: UsageMode, finished: Mapping[str, float], running: Iterable[RunningJob]) -> dict[str, float]:
    """Usage per leaf in one of the paper's three ways, from the usage of finished jobs and the jobs
    running now."""
    out = dict(finished)
    if mode is UsageMode.HISTORICAL:
        return out
    for job in running:
        add = job.elapsed if mode is UsageMode.ACTIVE else job.requested
        out[job.node] = out.get(job.node, 0.0) + add
    return out


def targets(tree: Hierarchy) -> dict[str, float]:
    """Every node's target share, percent of its parent's."""
    out = {}
    for node in tree.order():
        if node in tree.percent:
            out[node] = float(tree.shares[node])
            continue
        total = tree.sibling_shares(node)
        out[node] = 100.0 * (tree.shares[node] / total) if total > 0 else 0.0
    return out


def actuals(tree: Hierarchy, usage: Mapping[str, float], total: float | None = None, *,
            global_usage: Mapping[str, float] | None = None, global_total: float | None = None,
            global_below: Collection[str] = ()) -> dict[str, float]:
    """Every node's actual share, percent of its parent's usage, each measured with its parent's
    usage source (global below the nodes in ``global_below``, ``""`` standing for the root)."""
    local = tree.subtree_usage(usage)
    local_root = pool_usage(usage, total)
    if global_below and global_usage is None:
        raise ValueError("global_below needs global_usage")
    glob = tree.subtree_usage(global_usage) if global_usage is not None else local
    glob_root = pool_usage(global_usage, global_total) if global_usage is not None else local_root
    out = {}
    for node in tree.order():
        parent = tree.parents[node]
        if parent in global_below:
            mine, theirs = glob[node], (glob_root if parent == ROOT else glob[parent])
        else:
            mine, theirs = local[node], (local_root if parent == ROOT else local[parent])
        out[node] = 100.0 * mine / theirs if theirs > 0 else 0.0
    return out


def deviation_tuple(tree: Hierarchy, deviation: Mapping[str, float], node: str,
                    depth: int | None = None) -> tuple[float, ...]:
    """The deviations from the top level down to ``node``, padded with zeros to ``depth`` (the
    tree's by default)."""
    levels = tree.depth() if depth is None else depth
    path = tuple(deviation[n] for n in tree.path(node))
    if len(path) > levels:
        raise ValueError(f"{node!r} is deeper than the depth given ({levels})")
    return path + (0.0,) * (levels - len(path))


def priority(deviations: tuple[float, ...]) -> float:
    """The paper's flat priority: the padded tuple as a base-200 number, each element plus 100."""
    levels = len(deviations)
    return float(sum((dev + OFFSET) * BASE ** (levels - i) for i, dev in enumerate(deviations, start=1)))


def report(tree: Hierarchy, usage: Mapping[str, float], total: float | None = None, *,
           global_usage: Mapping[str, float] | None = None, global_total: float | None = None,
           global_below: Collection[str] = ()) -> dict[str, GridRow]:
    """Every node's target, actual share, deviation, tuple and the priority of a job mapped to it."""
    target = targets(tree)
    actual = actuals(tree, usage, total, global_usage=global_usage, global_total=global_total,
                     global_below=global_below)
    deviation = {n: target[n] - actual[n] for n in tree.order()}
    depth = tree.depth()
    out = {}
    for node in tree.order():
        tup = deviation_tuple(tree, deviation, node, depth)
        out[node] = GridRow(target[node], actual[node], deviation[node], tup, priority(tup))
    return out

"""Hazel's scheme for the Cambridge IBM 370/165 (seed 003): shares, usage, outstanding work, value.

Each project has shares ``S``, usage ``U``, outstanding work ``W`` and value ``V``. A job is priced
from them and the predicted demand; it is accepted or not by its price limit, and it charges the
project when it ends. Each step is a pure function of a :class:`Project`. docs/fairshare.md gives the
formulas, how a share tree maps to projects, and what is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from osep.fairshare.hierarchy import ROOT, Hierarchy
from osep.fairshare.slurm import normalized_shares
from osep.fairshare.usage import decayed

K = 50.0  # the k in k*S
SCALE = 100_000.0  # the 100,000 in the denominator
MIN_PRICE = 1.0
MAX_PRICE = 255.0
PRICE_LIMIT_NUMERATOR = 1275.0  # default price limit: 1275 / C1
VALUE_DIVISOR = 20.0  # V += R / (20 * S)
DAILY_DECAY = 0.10  # U and V lose about 10% a day
DAY = 86_400.0
HALF_LIFE = DAY * math.log(2) / -math.log(1.0 - DAILY_DECAY)  # about 6.58 days
DEFAULT_CPU_LIMIT = 5.0  # seconds; Re is estimated as the CPU limit
DEFAULT_DEMAND = 20_000.0  # N: the report gives 20,000 to 30,000 for a term-time day


@dataclass(frozen=True, slots=True)
class Project:
    shares: float  # S
    usage: float = 0.0  # U
    outstanding: float = 0.0  # W
    value: float = 0.0  # V


@dataclass(frozen=True, slots=True)
class CambridgeRow:
    shares: float  # S
    usage: float  # U
    outstanding: float  # W
    value: float | None  # V: R / (20 * S) summed, undefined (None) for a project with no shares
    price: float  # P for a job of Re at demand Np: at least 1; inf when no price will do
    accepted: bool  # P within the price limit


def price_limit(cpu_limit: float = DEFAULT_CPU_LIMIT) -> float:
    """The default unit price limit of a job with a CPU limit of ``cpu_limit`` seconds."""
    if cpu_limit <= 0:
        return MAX_PRICE
    return min(MAX_PRICE, max(MIN_PRICE, PRICE_LIMIT_NUMERATOR / cpu_limit))


def unit_price(project: Project, demand: float, estimate: float = DEFAULT_CPU_LIMIT, k: float = K) -> float:
    """The unit price ``P`` (at least 1; infinite where ``100000*S <= Np*Re``)."""
    denominator = SCALE * project.shares - demand * estimate
    if denominator <= 0:
        return math.inf
    raw = (project.usage + project.outstanding + k * project.shares) * demand / denominator
    return max(MIN_PRICE, raw)


def accepted(price: float, limit: float = MAX_PRICE) -> bool:
    return price <= min(limit, MAX_PRICE)


def decay(project: Project, elapsed: float) -> Project:
    """``U`` and ``V`` after ``elapsed`` seconds of the machine running."""
    return replace(project, usage=decayed(project.usage, 0.0, elapsed, HALF_LIFE),
                   value=decayed(project.value, 0.0, elapsed, HALF_LIFE))


def submit(project: Project, price: float, estimate: float) -> tuple[Project, float]:
    """A job accepted at unit price ``price``: the project with its estimated charge added to ``W``,
    and that charge (to hand back to :func:`terminate`)."""
    charge = estimate * price
    return replace(project, outstanding=project.outstanding + charge), charge


def terminate(project: Project, resources: float, price: float, charged: float) -> Project:
    """A job that used ``resources`` units at unit price ``price`` and had ``charged`` added to ``W``
    at submission.

    ``W`` loses ``charged``, not ``resources * price`` as the report's summary says: taken literally,
    that would leave ``W`` drifting by ``(Re - R) * P`` with every job.
    """
    value = project.value + (resources / (VALUE_DIVISOR * project.shares) if project.shares > 0 else 0.0)
    return replace(project, usage=project.usage + resources * price,
                   outstanding=max(0.0, project.outstanding - charged), value=value)


def project_shares(tree: Hierarchy) -> dict[str, float]:
    """Each leaf's ``S``: its normalized share times the sum of the top level's numbers."""
    top = sum(tree.shares[n] for n in tree.children(ROOT))
    norm = normalized_shares(tree)
    return {leaf: norm[leaf] * top for leaf in tree.leaves()}


def report(tree: Hierarchy, usage: Mapping[str, float], *, demand: float = DEFAULT_DEMAND,
           estimate: float = DEFAULT_CPU_LIMIT, limit: float = MAX_PRICE) -> dict[str, CambridgeRow]:
    """``S``, ``U``, ``W``, ``V`` and the price of a job of ``estimate`` units at ``demand``, per leaf.

    The usage given is read as resource units all run at unit price 1, with nothing queued: ``U`` is
    the usage itself, ``W`` is 0 and ``V`` is ``usage / (20 * S)``: undefined (None) at ``S = 0``, as
    the price is (infinite: no price will do).
    """
    tree.subtree_usage(usage)  # only leaves
    out = {}
    for leaf, shares in project_shares(tree).items():
        used = usage.get(leaf, 0.0)
        value = used / (VALUE_DIVISOR * shares) if shares > 0 else None
        project = Project(shares, used)
        price = unit_price(project, demand, estimate)
        out[leaf] = CambridgeRow(shares, project.usage, project.outstanding, value, price,
                                 accepted(price, limit))
    return out

"""Shares resolved for a pool's capacity, kept between decisions: a pool's capacity rarely changes
from one cycle to the next, and resolving every owner's shares is a walk over all of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from osep.core.plan import OwnerView, Target, owner_view
from osep.core.recent import Recent
from osep.core.resources import RESOURCES, ZERO, Measure, Unit, Vec, measure
from osep.core.shares import ShareTable
from osep.core.tree import ShareTree


class _Everyone(Mapping[str, Measure]):
    """The one measure of a single-resource unit, as every owner's (no table of 10,000 entries)."""

    __slots__ = ("_measure",)

    def __init__(self, measure: Measure) -> None:
        self._measure = measure

    def __getitem__(self, owner: str) -> Measure:
        return self._measure

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class Resolved:
    """Shares resolved for a pool's capacity: every owner's per resource, the owners by name, and
    with a single-resource unit each owner's share of that resource."""

    resolved: dict[str, dict[str, float]]
    owners: list[str]
    entitled: dict[str, float]
    # With a single-resource unit, the view of each owner with no job as last made (count_view's,
    # kept here as they are the same for the same shares and capacity).
    quiet: dict[str, OwnerView] = field(default_factory=dict)
    # With a single-resource unit: its one measure, as every owner's.
    measures: Mapping[str, Measure] | None = None
    # Flat shares in a single-resource unit, none of them negative (see idle_views): every owner
    # with no job has the same figures at every decision, whatever the others hold and want.
    plain: bool = False
    # plain: each owner's feasible share while it wants nothing (min(share, 0)), and per target
    # every owner's view as it has no job, the owners by name (idle_views).
    resting: dict[str, float] = field(default_factory=dict)
    _idle: dict[Target, dict[str, OwnerView]] = field(default_factory=dict)

    def idle_views(self, target: Target) -> dict[str, OwnerView]:
        """plain: every owner's view as it has no job, by name; read it, never change it. An owner
        wanting nothing takes no part in the water-filling (a share is never negative), so its
        feasible share is min(share, 0) and its figures depend on nothing else in the pool."""
        views = self._idle.get(target)
        if views is None:
            resolved = self.resolved
            no_share: dict[str, float] = {}
            feasible = target is Target.FEASIBLE
            views = self._idle[target] = {
                o: owner_view(o, a, 0, 0, 0, 0, 0.0, self.resting[o],
                              self.resting[o] if feasible else a, 0.0, 0.0, 0, 0, ZERO,
                              resolved.get(o, no_share))
                for o, a in self.entitled.items()}
        return views


# Shares resolve the same for the same capacity (and unit).
_RESOLVED: Recent[Resolved] = Recent()


def resolved_shares(shares: ShareTable | ShareTree, capacity: Vec, unit: Unit) -> Resolved:
    """``shares`` resolved for ``capacity`` (:meth:`ShareTable.resolve_all`), with the owners by
    name and each one's share of ``unit``'s resource (0 for the dominant unit: see
    :func:`osep.core.resources.measure`). The result is shared between calls: read it, never
    change it."""
    known = _RESOLVED.get(shares, (capacity, unit))
    if known is not None:
        return known
    resolved = shares.resolve_all(capacity)
    owners = sorted(resolved)
    index = unit.index
    if index is None:
        return _RESOLVED.put(shares, (capacity, unit), Resolved(resolved, owners, {}))
    resource = RESOURCES[index]
    entitled = {o: resolved[o].get(resource, 0.0) for o in owners}
    plain = isinstance(shares, ShareTable) and all(a >= 0.0 for a in entitled.values())
    return _RESOLVED.put(shares, (capacity, unit), Resolved(
        resolved, owners, entitled, measures=_Everyone(measure(unit, {}, capacity)[0]),
        plain=plain, resting={o: min(a, 0.0) for o, a in entitled.items()} if plain else {}))

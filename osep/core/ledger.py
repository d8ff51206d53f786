"""The ledger of a decision: what every owner (and, with an owner tree, every group) holds and is
held to, kept up to date while a plan moves capacity between owners.

Claims and vacates read it to rank owners (:meth:`Ledger.owed` for beneficiaries, :meth:`Ledger.over`
for victims) and to check that no vacate takes an owner, or a group the beneficiary is not in, below
its target (:meth:`Ledger.may_lose`); they write to it what they give and take.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter, sub

from osep.core.plan import OwnerView, Reason, reason
from osep.core.resources import EPS, ZERO, Measure, Shape, Vec, held, minus, plus

# How an owner ranks, ascending first: Ledger.owed (beneficiaries) or Ledger.over (victims); in a
# flat ledger, their one figure itself (a float compares in one step, a tuple in several).
Rank = tuple[float, ...] | float


@dataclass(slots=True)
class Groups:
    """The groups of an owner tree (:mod:`osep.core.tree`), as a plan moves capacity between them:
    what each holds (its members' holdings added up) and is held to, weighed in one resource."""

    paths: dict[str, tuple[str, ...]]  # owner -> the groups it is in, top level first
    targets: dict[str, float]  # group -> its target
    holding: dict[str, Vec]  # group -> what its members hold
    measure: Measure

    def gap(self, group: str) -> float:
        return self.targets[group] - self.measure(self.holding.get(group, ZERO))


@dataclass(slots=True)
class Ledger:
    """What every owner holds and is held to, kept up to date while a plan is made. With an owner
    tree it keeps its groups too (``groups``): then victims and beneficiaries are ranked top-down,
    and no vacate takes a group below its target for an owner outside it."""

    holding: dict[str, Vec]  # running jobs plus room kept, per resource
    measures: Mapping[str, Measure]
    targets: dict[str, float]
    groups: Groups | None = field(default=None)
    # The one resource every owner is weighed in (its measure takes it as it is), or None: then
    # owners are weighed by their own measures (the dominant unit).
    index: int | None = field(default=None)

    def active(self, owner: str) -> float:
        if self.index is not None:
            return self.holding.get(owner, ZERO)[self.index]
        return self.measures[owner](self.holding.get(owner, ZERO))

    def gap(self, owner: str) -> float:
        if self.index is not None:
            return self.targets[owner] - self.holding.get(owner, ZERO)[self.index]
        return self.targets[owner] - self.measures[owner](self.holding.get(owner, ZERO))

    def gaps_of(self, owners: Sequence[str]) -> Iterator[float]:
        """:meth:`gap` of each of ``owners``, in their order (for many owners at once)."""
        index = self.index
        if index is None:
            return map(self.gap, owners)
        # targets[o] - holding.get(o, ZERO)[index], at C speed
        return map(sub, map(self.targets.__getitem__, owners),
                   map(itemgetter(index), map(self.holding.get, owners, repeat(ZERO))))

    def path(self, owner: str) -> tuple[str, ...]:
        return self.groups.paths.get(owner, ()) if self.groups is not None else ()

    def over(self, owner: str) -> tuple[float, ...]:
        """How far ``owner`` and its groups are below target, top level first (negative: above
        it). Ascending order ranks victims: the group most over its target first, within it the
        subgroup most over, down to the owner."""
        groups = self.groups
        if groups is None:
            return (self.gap(owner),)
        return (*(groups.gap(g) for g in groups.paths.get(owner, ())), self.gap(owner))

    def owed(self, owner: str) -> tuple[float, ...]:
        """The same negated: ascending order ranks beneficiaries, the group owed most first."""
        if self.groups is None:
            return (-self.gap(owner),)
        return tuple(-g for g in self.over(owner))

    def may_lose(self, owner: str, amount: Vec, beneficiary: str | None = None,
                 gained: Vec = ZERO) -> bool:
        """Whether ``owner`` stays at or above its target without ``amount``, and so do its groups,
        except the groups the ``beneficiary`` is in too: those get ``gained`` back, and only must not
        end below target by a net loss."""
        if self.groups is None:
            return self.keeps_target(owner, amount)
        return self.may_lose_all({owner: amount}, beneficiary, gained)

    def keeps_target(self, owner: str, amount: Vec) -> bool:
        """Whether ``owner`` itself stays at or above its target without ``amount``."""
        index = self.index
        if index is not None:  # minus() in the one resource weighed
            return self.holding.get(owner, ZERO)[index] - amount[index] >= self.targets[owner] - EPS
        left = minus(self.holding.get(owner, ZERO), amount)
        return self.measures[owner](left) >= self.targets[owner] - EPS

    def may_lose_all(self, losing: dict[str, Vec], beneficiary: str | None = None,
                     gained: Vec = ZERO) -> bool:
        """:meth:`may_lose` for several owners losing at once (their groups lose the sum)."""
        if not all(self.keeps_target(o, amount) for o, amount in losing.items()):
            return False
        groups = self.groups
        if groups is None:
            return True
        lost: dict[str, Vec] = {}
        for owner, amount in losing.items():
            for group in groups.paths.get(owner, ()):
                lost[group] = plus(lost.get(group, ZERO), amount)
        shared = set(groups.paths.get(beneficiary, ())) if beneficiary is not None else set()
        for group, amount in lost.items():
            now = groups.holding.get(group, ZERO)
            after = minus(now, amount)
            if group in shared:
                after = plus(after, gained)
                if groups.measure(after) >= groups.measure(now) - EPS:
                    continue  # no net loss: moving capacity within a group never hurts it
            if groups.measure(after) < groups.targets[group] - EPS:
                return False
        return True

    def give(self, owner: str, amount: Vec) -> None:
        self.holding[owner] = plus(self.holding.get(owner, ZERO), amount)
        if self.groups is not None:
            for group in self.groups.paths.get(owner, ()):
                self.groups.holding[group] = plus(self.groups.holding.get(group, ZERO), amount)

    def take(self, owner: str, amount: Vec) -> None:
        self.holding[owner] = minus(self.holding.get(owner, ZERO), amount)
        if self.groups is not None:
            for group in self.groups.paths.get(owner, ()):
                self.groups.holding[group] = minus(self.groups.holding.get(group, ZERO), amount)


class Holds(dict[Shape, Vec]):
    """:func:`osep.core.resources.held` of each shape, worked out once: what a job of the shape
    adds to or takes from the ledger (a plan weighs a job for each vacate it considers, of a few
    shapes)."""

    def __missing__(self, shape: Shape) -> Vec:
        amount = self[shape] = held(shape)
        return amount


def reason_for(rule: str, ledger: Ledger, views: Mapping[str, OwnerView], ben: str) -> Reason:
    """Why ``ben`` is given room under ``rule``: its target and what it holds before it is given."""
    return reason(rule, views[ben].target, ledger.active(ben), None, None)

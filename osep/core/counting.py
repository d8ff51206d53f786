"""Step one of a decision: count what each owner runs, waits for and is owed in a snapshot.

Per owner: running jobs, idle jobs, jobs being vacated, and the room kept for it (a free static slot,
or part of a partitionable slot's unclaimed resources). What it holds (running jobs plus kept room)
and wants (running, vacating and idle jobs) is added up per resource and weighed in the policy's unit
(:mod:`osep.core.resources`). Held jobs are not demand. Shares are resolved for the snapshot's
capacity (:mod:`osep.core.shares`), feasible shares computed from the demand, and each owner's target
is its owner share (the paper) or its feasible share.

Kept room counts for its owner only while the owner has idle jobs to put there (one job per room),
and a kept static slot only while no job runs on it; anything else is stale and left for the pool to
expire.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from osep.core.model import Job, JobState, Slot, Snapshot
from osep.core.plan import GroupView, OwnerView, Target
from osep.core.resources import (
    EPS,
    REQUESTED,
    ZERO,
    Measure,
    Room,
    Unit,
    Vec,
    held,
    less,
    measure,
    minus,
    plus,
)
from osep.core.shares import ShareTable, feasible_shares
from osep.core.tree import ShareTree


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
    measures: dict[str, Measure]
    targets: dict[str, float]
    groups: Groups | None = field(default=None)

    def active(self, owner: str) -> float:
        return self.measures[owner](self.holding.get(owner, ZERO))

    def gap(self, owner: str) -> float:
        return self.targets[owner] - self.active(owner)

    def gaps(self) -> dict[str, float]:
        return {o: self.gap(o) for o in self.targets}

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
        return tuple(-g for g in self.over(owner))

    def may_lose(self, owner: str, amount: Vec, beneficiary: str | None = None,
                 gained: Vec = ZERO) -> bool:
        """Whether ``owner`` stays at or above its target without ``amount``, and so do its groups,
        except the groups the ``beneficiary`` is in too: those get ``gained`` back, and only must not
        end below target by a net loss."""
        return self.may_lose_all({owner: amount}, beneficiary, gained)

    def keeps_target(self, owner: str, amount: Vec) -> bool:
        """Whether ``owner`` itself stays at or above its target without ``amount``."""
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


@dataclass(frozen=True, slots=True)
class Census:
    """A snapshot counted per owner: what the later steps of a decision start from."""

    views: dict[str, OwnerView]
    ledger: Ledger
    slots: dict[str, Slot]  # by name
    running: dict[str, list[Job]]  # owner -> its running jobs
    idle: dict[str, list[Job]]  # owner -> its idle jobs
    free: list[tuple[str, Room]]  # places with room nobody holds or is kept for, by name
    rooms: dict[str, Room]  # every partitionable slot's unclaimed part not kept for anyone
    capacity: Vec  # the pool's, in every resource
    unplaced: int  # running jobs on slots the snapshot does not have
    groups: tuple[GroupView, ...] = ()  # an owner tree's groups, in the tree's order

    @property
    def free_cpus(self) -> int:
        return sum(room[0] for _, room in self.free)


# What a job asks for of each requested resource, in the order of REQUESTED.
_ASKS = tuple(attrgetter(r) for r in REQUESTED)


def _total(jobs: Sequence[Job], weighed: tuple[bool, ...]) -> Vec:
    """What ``jobs`` hold once running: one slot each and what they ask of each requested resource
    where ``weighed`` says it is needed, else 0 (a million jobs take time to add up)."""
    if not jobs:
        return ZERO
    cpus, memory, gpus, disk = (float(sum(map(ask, jobs))) if w else 0.0
                                for ask, w in zip(_ASKS, weighed, strict=True))
    return (float(len(jobs)), cpus, memory, gpus, disk)


def count(snapshot: Snapshot, shares: ShareTable | ShareTree, target: Target,
          unit: Unit = Unit.SLOTS) -> Census:
    slots = {s.name: s for s in snapshot.slots}
    running: dict[str, list[Job]] = defaultdict(list)
    idle: dict[str, list[Job]] = defaultdict(list)
    vacating: dict[str, list[Job]] = defaultdict(list)
    busy: set[str] = set()  # slots with a running job
    leaving: set[str] = set()  # slots whose job is being vacated
    unplaced = 0
    for job in snapshot.jobs:
        state = job.state
        if state is JobState.RUNNING:
            running[job.owner].append(job)
            if job.slot is not None and job.slot in slots:
                busy.add(job.slot)
            else:
                unplaced += 1
        elif state is JobState.IDLE:
            idle[job.owner].append(job)
        elif state is JobState.VACATING:
            vacating[job.owner].append(job)
            if job.slot is not None:
                leaving.add(job.slot)
    # What each owner's jobs add up to, per resource (summed at C speed: a pool has a million jobs).
    holding: dict[str, Vec] = defaultdict(lambda: ZERO)
    wanting: dict[str, Vec] = defaultdict(lambda: ZERO)
    idle_cpus: dict[str, int] = defaultdict(int)
    # What the unit weighs; idle jobs' cores always (holds are counted in cores).
    weighed = tuple(unit is Unit.DOMINANT or unit.value == r for r in REQUESTED)
    for owner, jobs in running.items():
        holding[owner] = _total(jobs, weighed)
    for owner in set(running) | set(idle) | set(vacating):
        waiting = _total(idle.get(owner, ()), (True, *weighed[1:]))
        idle_cpus[owner] = int(waiting[1])
        wanting[owner] = plus(plus(holding[owner], waiting),
                              _total(vacating.get(owner, ()), weighed))

    # Room kept for owners: a static slot as a whole, or part of a partitionable slot.
    reserved: dict[str, int] = defaultdict(int)
    kept_cpus: dict[str, int] = defaultdict(int)
    kept_static: set[str] = set()
    rooms: dict[str, Room] = {s.name: s.room for s in snapshot.slots if s.partitionable}
    ran = dict(holding)  # running jobs only
    # In a fixed order, whatever order the book listed them in (the plan must not depend on it).
    for kept in sorted(snapshot.kept, key=lambda k: (k.owner, k.place, k.shape)):
        slot = slots.get(kept.place)
        if slot is None or (not slot.partitionable and (slot.name in busy or slot.name in kept_static)):
            continue
        if not slot.partitionable:
            kept_static.add(slot.name)  # not free to anyone else, counted for its owner or not
        if reserved[kept.owner] >= len(idle.get(kept.owner, ())):
            continue
        if slot.partitionable:
            rooms[slot.name] = less(rooms[slot.name], kept.shape)
        reserved[kept.owner] += 1
        kept_cpus[kept.owner] += kept.shape[0]
        holding[kept.owner] = plus(holding[kept.owner], held(kept.shape))

    free: list[tuple[str, Room]] = []
    for slot in snapshot.slots:
        if slot.partitionable:
            room = rooms[slot.name]
            if any(room):  # what a job asks for decides whether it is any use (see victims)
                free.append((slot.name, room))
        elif slot.parent is None and slot.name not in busy and slot.name not in kept_static \
                and slot.name not in leaving:
            free.append((slot.name, slot.room))
    # By place name: the collector returns slots in any order, and free room goes to owners in
    # this order.
    free.sort(key=itemgetter(0))

    capacity = snapshot.totals()
    resolved = shares.resolve_all(capacity)
    owners = sorted(set(resolved) | set(running) | set(idle) | set(vacating))
    measures: dict[str, Measure] = {}
    entitled: dict[str, float] = {}
    for o in owners:
        measures[o], entitled[o] = measure(unit, resolved.get(o, {}), capacity)
    demand = {o: measures[o](wanting[o]) for o in owners}
    index = unit.index
    groups: Groups | None = None
    tree: list[GroupView] = []
    if isinstance(shares, ShareTree) and index is not None:
        whole = shares.entitlements(demand, capacity[index], feasible=True)
        owned = whole if target is Target.FEASIBLE else \
            shares.entitlements(demand, capacity[index], feasible=False)
        fes = {o: whole.entitled[o] for o in owners}
        targets = {o: owned.entitled[o] for o in owners}
        weigh = measures[owners[0]] if owners else measure(unit, {}, capacity)[0]
        within: dict[str, Vec] = defaultdict(lambda: ZERO)
        for o in owners:
            for g in owned.paths[o][:-1]:
                within[g] = plus(within[g], holding[o])
        names = [g for g in shares.nodes if shares.nodes[g].children]
        groups = Groups({o: owned.paths[o][:-1] for o in owners},
                        {g: owned.entitled[g] for g in names}, dict(within), weigh)
        tree = [GroupView(name=g, parent=shares.nodes[g].parent, share=owned.shares[g],
                          demand=owned.demand[g], feasible=whole.entitled[g],
                          target=owned.entitled[g], active=weigh(within[g]))
                for g in names]
    elif index is not None:
        fes = feasible_shares(entitled, demand, capacity[index])
        targets = {o: fes[o] if target is Target.FEASIBLE else entitled[o] for o in owners}
    else:  # dominant: water-filling is not defined across resources (see PolicySettings)
        fes = {o: min(entitled[o], demand[o]) for o in owners}
        targets = {o: fes[o] if target is Target.FEASIBLE else entitled[o] for o in owners}
    views = {
        o: OwnerView(
            owner=o,
            share=entitled[o],
            running=len(running.get(o, ())),
            idle=len(idle.get(o, ())),
            vacating=len(vacating.get(o, ())),
            reserved=reserved[o],
            demand=demand[o],
            feasible=fes[o],
            target=targets[o],
            holding=measures[o](ran.get(o, ZERO)),
            active=measures[o](holding[o]),
            idle_cpus=idle_cpus[o],
            kept_cpus=kept_cpus[o],
            using=holding[o],
            entitled=resolved.get(o, {}),
        )
        for o in owners
    }
    ledger = Ledger({o: holding[o] for o in owners}, measures, targets, groups)
    return Census(views, ledger, slots, dict(running), dict(idle), free, rooms, capacity, unplaced,
                  tuple(tree))


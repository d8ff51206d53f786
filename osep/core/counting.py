"""Step one of a decision: count what each owner runs, waits for and holds in a pool view, and what
it is held to.

Per owner: running jobs, idle jobs, jobs being vacated, and the room kept for it (a free static slot,
or part of a partitionable slot's unclaimed resources). What it holds (running jobs plus kept room)
and wants (running, vacating and idle jobs) is added up per resource and weighed in the policy's unit
(:mod:`osep.core.resources`). Held jobs are not demand. Shares are resolved for the pool's capacity
(:mod:`osep.core.resolved`), feasible shares computed from the demand, and each owner's target is its
owner share (the paper) or its feasible share. The result, a :class:`Census`, carries the
:class:`osep.core.ledger.Ledger` the later steps update.

Kept room counts for its owner only while the owner has idle jobs to put there (one job per room),
and a kept static slot only while no job runs on it; anything else is stale and left for the pool to
expire.
"""

from __future__ import annotations

import heapq
from collections import ChainMap, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse
from operator import attrgetter

from osep.core.ledger import Groups, Ledger
from osep.core.model import Kept, Snapshot
from osep.core.plan import GroupView, OwnerView, Target, owner_view
from osep.core.resolved import Resolved, resolved_shares
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
    plus,
)
from osep.core.shares import ShareTable, feasible_shares
from osep.core.tally import Tally
from osep.core.tree import ShareTree
from osep.core.view import PoolView, view_of


@dataclass(frozen=True, slots=True)
class Census:
    """A pool counted per owner: what the later steps of a decision start from."""

    views: dict[str, OwnerView]
    ledger: Ledger
    pool: PoolView  # read, never changed
    # Places with room nobody holds or is kept for, in no order (:meth:`free_places` gives them in
    # order): static slots, and partitionable slots with some room unclaimed not kept for anyone;
    # and the cores they have free.
    free_static: list[str]
    free_open: list[str]
    free_cpus: int
    rooms: Mapping[str, Room]  # every partitionable slot's unclaimed part not kept for anyone
    capacity: Vec  # the pool's, in every resource
    groups: tuple[GroupView, ...] = ()  # an owner tree's groups, in the tree's order
    # Owners below target with idle jobs no room is kept for (who may benefit), and owners above
    # target with running jobs (whose jobs may be vacated), as counted (before any claim), by name.
    below: list[str] = field(default_factory=list)
    above: list[str] = field(default_factory=list)
    # The views of the owners with jobs, by name (the only ones a hold can be for), or every view.
    busy: Mapping[str, OwnerView] = field(default_factory=dict)

    def free_places(self) -> Iterator[tuple[str, Room]]:
        """The places with room free, and that room, by name (the collector returns slots in any
        order, and free room goes to owners in this order). Taken in order only as far as they are
        read: a decision usually hands out the first few of hundreds."""
        names = self.free_static + self.free_open
        heapq.heapify(names)
        slots, rooms = self.pool.slots, self.rooms
        while names:
            name = heapq.heappop(names)
            slot = slots[name]
            yield name, rooms[name] if slot.partitionable else slot.room


_CPUS = attrgetter("cpus")
# Per unit: which requested resources it weighs.
_WEIGHS = {u: tuple(u is Unit.DOMINANT or u.value == r for r in REQUESTED) for u in Unit}
_NOBODY = Tally()  # an owner with no job (read, never changed)
_NONE = (0, 0, 0, 0)  # what no job asks for


def count(snapshot: Snapshot, shares: ShareTable | ShareTree, target: Target,
          unit: Unit = Unit.SLOTS) -> Census:
    """Count ``snapshot`` per owner, from the view it carries or one built from its jobs."""
    return count_view(view_of(snapshot), snapshot.kept, shares, target, unit)


def count_view(pool: PoolView, kept: Sequence[Kept], shares: ShareTable | ShareTree,
               target: Target, unit: Unit = Unit.SLOTS) -> Census:
    """Count ``pool`` (and the room ``kept`` for owners) per owner; reads the view, never changes
    it."""
    slots = pool.slots
    tallies = pool.tallies
    ran, wanting = _owner_sums(tallies, unit)
    index = unit.index
    # With one resource, the demand is its sum alone.
    wanted = {o: w[index] for o, w in wanting.items()} if index is not None else {}

    # Room kept for owners: a static slot as a whole, or part of a partitionable slot.
    reserved: dict[str, int] = defaultdict(int)
    kept_cpus: dict[str, int] = defaultdict(int)
    kept_static: set[str] = set()
    kept_rooms: dict[str, Room] = {}  # partitionable slots whose unclaimed room is partly kept
    with_kept: dict[str, Vec] = {}  # owners with room kept: running jobs plus that room
    runs_on = pool.runs_on
    # In a fixed order, whatever order the book listed them in (the plan must not depend on it).
    for k in sorted(kept, key=lambda k: (k.owner, k.place, k.shape)):
        slot = slots.get(k.place)
        if slot is None or (not slot.partitionable and (runs_on(slot.name) or slot.name in kept_static)):
            continue
        if not slot.partitionable:
            kept_static.add(slot.name)  # not free to anyone else, counted for its owner or not
        of = tallies.get(k.owner)
        if reserved[k.owner] >= (of.idle if of is not None else 0):
            continue
        if slot.partitionable:
            kept_rooms[slot.name] = less(kept_rooms.get(slot.name, pool.rooms[slot.name]), k.shape)
        reserved[k.owner] += 1
        kept_cpus[k.owner] += k.shape[0]
        with_kept[k.owner] = plus(with_kept.get(k.owner, ran.get(k.owner, ZERO)), held(k.shape))
    rooms: Mapping[str, Room] = ChainMap(kept_rooms, pool.rooms) if kept_rooms else pool.rooms

    # The free places (put in order only as far as a decision reads them: Census.free_places),
    # and their cores, at C speed: a pool may have thousands free.
    free_static = list(pool.free_static - kept_static if kept_static else pool.free_static)
    free_cpus = sum(map(_CPUS, map(slots.__getitem__, free_static))) if pool.odd_static \
        else len(free_static)  # (every static slot has one core)
    free_open: list[str] = []
    for name in pool.open_rooms:
        room = rooms[name]
        if any(room):  # what a job asks for decides whether it is any use (see victims)
            free_open.append(name)
            free_cpus += room[0]

    capacity = pool.totals()
    known = resolved_shares(shares, capacity, unit)
    resolved = known.resolved
    extra = list(filterfalse(resolved.__contains__, tallies))  # owners without a share
    if index is not None and known.plain and not extra:
        # Flat shares, every owner named: only the owners with jobs are worked out; the others'
        # views are made once per shares, capacity and target (Resolved.idle_views).
        return _count_flat(pool, known, target, index, ran, wanted, with_kept, reserved, kept_cpus,
                           free_static, free_open, free_cpus, rooms, capacity)
    owners = sorted(known.owners + extra) if extra else known.owners
    measures: Mapping[str, Measure]
    if index is not None:  # one resource: one measure for everyone, as measure() gives it
        assert known.measures is not None
        measures = known.measures
        if extra:
            shared = known.entitled
            entitled = {o: shared.get(o, 0.0) for o in owners}
        else:
            entitled = dict(known.entitled)
        demand = {o: wanted.get(o, 0.0) for o in owners} if len(wanted) < len(owners) else wanted
    else:
        each: dict[str, Measure] = {}
        entitled = {}
        for o in owners:
            each[o], entitled[o] = measure(unit, resolved.get(o, {}), capacity)
        measures = each
        demand = {o: each[o](wanting.get(o, ZERO)) for o in owners}
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
            using = with_kept.get(o) or ran.get(o, ZERO)
            for g in owned.paths[o][:-1]:
                within[g] = plus(within[g], using)
        names = [g for g in shares.nodes if shares.nodes[g].children]
        groups = Groups({o: owned.paths[o][:-1] for o in owners},
                        {g: owned.entitled[g] for g in names}, dict(within), weigh)
        tree = [GroupView(name=g, parent=shares.nodes[g].parent, share=owned.shares[g],
                          demand=owned.demand[g], feasible=whole.entitled[g],
                          target=owned.entitled[g], active=weigh(within[g]))
                for g in names]
    elif index is not None:
        fes = feasible_shares(entitled, demand, capacity[index])
        targets = fes if target is Target.FEASIBLE else entitled
    else:  # dominant: water-filling is not defined across resources (see PolicySettings)
        fes = {o: min(entitled[o], demand[o]) for o in owners}
        targets = fes if target is Target.FEASIBLE else entitled
    views: dict[str, OwnerView] = {}
    nobody = _NOBODY
    no_share: dict[str, float] = {}
    holding = dict(ran)  # (an owner with none holds ZERO: the ledger reads it so)
    # Owners below target with idle jobs not provided for by kept room (the beneficiaries), and
    # owners above target with running jobs (the victims' owners).
    below: list[str] = []
    above: list[str] = []
    # An owner with no job (and so no room kept) has the same view at every decision on the same
    # shares and capacity, while its targets stay: made once (a pool's owners are mostly idle).
    quiet = known.quiet if index is not None else None
    for o in owners:
        if quiet is not None and o not in tallies:
            aim, fe, wants = targets[o], fes[o], demand[o]
            view = quiet.get(o)
            if view is None or view.target != aim or view.feasible != fe or view.demand != wants:
                view = quiet[o] = owner_view(o, entitled[o], 0, 0, 0, 0, wants, fe, aim, 0.0, 0.0,
                                             0, 0, ZERO, resolved.get(o, no_share))
            views[o] = view
            continue  # neither below target with idle jobs nor above it with running ones
        t = tallies.get(o, nobody)
        running = holding.get(o, ZERO)
        kept_here = with_kept.get(o)
        aim = targets[o]
        if index is not None:
            m = running[index]
            active = m if kept_here is None else kept_here[index]
        else:
            weigh_o = measures[o]
            m = weigh_o(running)
            active = m if kept_here is None else weigh_o(kept_here)
        if kept_here is None:
            views[o] = owner_view(o, entitled[o], t.running, t.idle, t.vacating, 0, demand[o], fes[o],
                                  aim, m, active, t.waiting[0], 0, running, resolved.get(o, no_share))
        else:
            holding[o] = kept_here
            r = reserved[o]
            views[o] = owner_view(o, entitled[o], t.running, t.idle, t.vacating, r, demand[o], fes[o],
                                  aim, m, active, t.waiting[0], kept_cpus[o], kept_here,
                                  resolved.get(o, no_share))
        _side(o, aim - active, t, reserved, below, above)
    ledger = Ledger(holding, measures, targets, groups, index)
    return Census(views, ledger, pool, free_static, free_open, free_cpus, rooms, capacity,
                  tuple(tree), below, above, views)


def _owner_sums(tallies: Mapping[str, Tally], unit: Unit) -> tuple[dict[str, Vec], dict[str, Vec]]:
    """What each owner's running jobs add up to, and its demand (what its running, vacating and
    idle jobs add up to), per resource: slots always, a requested resource only if ``unit`` weighs
    it (0 otherwise). The sums are of integers, exact in a float whatever their order."""
    c, m, g, d = _WEIGHS[unit]
    asks = c or m or g or d  # (else what the jobs ask for is not read)
    ran: dict[str, Vec] = {}
    wanting: dict[str, Vec] = {}
    for owner, jobs in tallies.items():
        n, i = jobs.running, jobs.idle
        r = jobs.ran if n and asks else _NONE
        w = jobs.waiting if i and asks else _NONE
        v = jobs.leaving if asks else _NONE
        ran[owner] = (float(n), float(r[0]) if c else 0.0, float(r[1]) if m else 0.0,
                      float(r[2]) if g else 0.0, float(r[3]) if d else 0.0) if n else ZERO
        wanting[owner] = (float(n + i + jobs.vacating), float(r[0] + w[0] + v[0]) if c else 0.0,
                          float(r[1] + w[1] + v[1]) if m else 0.0,
                          float(r[2] + w[2] + v[2]) if g else 0.0,
                          float(r[3] + w[3] + v[3]) if d else 0.0)
    return ran, wanting


def _side(owner: str, gap: float, tally: Tally, reserved: Mapping[str, int], below: list[str],
          above: list[str]) -> None:
    """Put ``owner`` (``gap`` below its target, its jobs ``tally``, its slots ``reserved``) in
    ``below`` if it is below target with idle jobs that no room kept for it provides for (a
    beneficiary), or in ``above`` if it is above target with running jobs (a victims' owner)."""
    if gap > EPS:
        if tally.idle > reserved.get(owner, 0):
            below.append(owner)
    elif gap < -EPS and tally.running:
        above.append(owner)


def _count_flat(pool: PoolView, known: Resolved, target: Target, index: int, ran: dict[str, Vec],
                wanted: dict[str, float], with_kept: dict[str, Vec], reserved: dict[str, int],
                kept_cpus: dict[str, int], free_static: list[str], free_open: list[str],
                free_cpus: int, rooms: Mapping[str, Room], capacity: Vec) -> Census:
    """count_view's last steps for flat shares in one resource, every owner with a job named in
    them (and none negative: ``known.plain``). An owner with no job wants nothing, takes no part in
    the water-filling, and has the view :meth:`Resolved.idle_views` made for it; so the
    water-filling and the views run over the owners with jobs only (a pool's owners are mostly
    idle: 19 of 28 on the LCG trace). Gives what count_view's general steps give."""
    tallies = pool.tallies
    entitled = known.entitled
    # The water-filling among the owners with jobs (those with none take nothing: see above).
    fes = feasible_shares(entitled if len(wanted) == len(entitled) else
                          {o: entitled[o] for o in wanted}, wanted, capacity[index])
    if target is Target.FEASIBLE:
        targets = dict(known.resting)
        targets.update(fes)
    else:
        targets = entitled  # read, never changed
    idle = known.idle_views(target)
    views: dict[str, OwnerView]
    busy: dict[str, OwnerView]  # the views of the owners with jobs, by name
    order: Iterable[str]
    if 2 * len(tallies) < len(idle):  # most owners have no job: theirs copied, the others sorted
        views, busy, order = dict(idle), {}, sorted(tallies)
    else:  # (a pool of 10,000 owners, all with jobs: none sorted, no view copied)
        views, order = {}, known.owners
        busy = views  # (those with no job are never held: holds may look at them too)
    resolved = known.resolved
    no_share: dict[str, float] = {}
    below: list[str] = []
    above: list[str] = []
    for o in order:
        t = tallies.get(o)
        if t is None:
            views[o] = idle[o]
            continue
        running = ran[o]
        kept_here = with_kept.get(o)
        aim = targets[o]
        m = running[index]
        if kept_here is None:
            active = m
            view = owner_view(o, entitled[o], t.running, t.idle, t.vacating, 0, wanted[o], fes[o], aim,
                              m, m, t.waiting[0], 0, running, resolved.get(o, no_share))
        else:
            active = kept_here[index]
            view = owner_view(o, entitled[o], t.running, t.idle, t.vacating, reserved[o], wanted[o],
                              fes[o], aim, m, active, t.waiting[0], kept_cpus[o], kept_here,
                              resolved.get(o, no_share))
        views[o] = busy[o] = view
        _side(o, aim - active, t, reserved, below, above)
    holding = dict(ran)
    holding.update(with_kept)
    assert known.measures is not None
    ledger = Ledger(holding, known.measures, targets, None, index)
    return Census(views, ledger, pool, free_static, free_open, free_cpus, rooms, capacity, (), below,
                  above, busy)

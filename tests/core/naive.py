"""A naive reference for the decision: the paper's Decision Algorithm as a plain loop that, for every
preemption, rescans every owner and the chosen owner's running jobs. A test oracle (and the
benchmark's yardstick), never called by osep itself.

It covers pools of static slots with flat shares (every unit, both targets, both victim orders, kept
room, claims of free slots, holds), and gives the plan :func:`osep.core.policy.decide` gives on the
same snapshot. What it shares with the policy is what is not the decision loop: how shares resolve,
how a unit weighs a holding, the water-filling, the holds and the budget.
"""

from __future__ import annotations

from osep.core.holds import holds, kept_now
from osep.core.model import Job, JobState, Snapshot
from osep.core.plan import Claim, OwnerView, Plan, Reason, Target, Vacate, VictimOrder
from osep.core.policy import PolicySettings
from osep.core.resources import (
    EPS,
    NO_ROOM,
    REQUESTED,
    ZERO,
    Measure,
    Shape,
    Unit,
    Vec,
    add_room,
    fits,
    held,
    measure,
    minus,
    plus,
)
from osep.core.shares import ShareTable, feasible_shares


def naive_decide(snapshot: Snapshot, settings: PolicySettings) -> Plan:
    shares = settings.shares
    if not isinstance(shares, ShareTable):
        raise ValueError("the naive reference takes flat shares only")
    if any(s.partitionable or s.parent is not None for s in snapshot.slots):
        raise ValueError("the naive reference takes static slots only")
    unit, now = settings.unit, snapshot.time
    slots = {s.name: s for s in snapshot.slots}
    weighed = tuple(unit is Unit.DOMINANT or unit.value == r for r in REQUESTED)

    def weigh(job: Job, mask: tuple[bool, ...]) -> Vec:
        asks = (job.cpus, job.memory, job.gpus, job.disk)
        return (1.0, *(float(a) if w else 0.0 for a, w in zip(asks, mask, strict=True)))  # type: ignore[return-value]

    # Step 1: count, one pass over the jobs.
    running: dict[str, list[Job]] = {}
    idle: dict[str, list[Job]] = {}
    vacating: dict[str, int] = {}
    holding: dict[str, Vec] = {}
    wanting: dict[str, Vec] = {}
    idle_cpus: dict[str, int] = {}
    busy: set[str] = set()
    leaving: set[str] = set()
    unplaced = 0
    for job in snapshot.jobs:
        o = job.owner
        if job.state is JobState.RUNNING:
            running.setdefault(o, []).append(job)
            holding[o] = plus(holding.get(o, ZERO), weigh(job, weighed))
            wanting[o] = plus(wanting.get(o, ZERO), weigh(job, weighed))
            if job.slot in slots:
                busy.add(job.slot)
            else:
                unplaced += 1
        elif job.state is JobState.IDLE:
            idle.setdefault(o, []).append(job)
            wanting[o] = plus(wanting.get(o, ZERO), weigh(job, (True, *weighed[1:])))
            idle_cpus[o] = idle_cpus.get(o, 0) + job.cpus
        elif job.state is JobState.VACATING:
            vacating[o] = vacating.get(o, 0) + 1
            wanting[o] = plus(wanting.get(o, ZERO), weigh(job, weighed))
            if job.slot is not None:
                leaving.add(job.slot)
    ran = dict(holding)
    reserved: dict[str, int] = {}
    kept_cpus: dict[str, int] = {}
    kept_static: set[str] = set()
    for k in sorted(snapshot.kept, key=lambda k: (k.owner, k.place, k.shape)):
        if k.place not in slots or k.place in busy or k.place in kept_static:
            continue
        kept_static.add(k.place)
        if reserved.get(k.owner, 0) >= len(idle.get(k.owner, ())):
            continue
        reserved[k.owner] = reserved.get(k.owner, 0) + 1
        kept_cpus[k.owner] = kept_cpus.get(k.owner, 0) + k.shape[0]
        holding[k.owner] = plus(holding.get(k.owner, ZERO), held(k.shape))
    free = sorted(name for name in slots if name not in busy and name not in kept_static
                  and name not in leaving)
    totals = snapshot.totals()
    resolved = shares.resolve_all(totals)
    owners = sorted(set(resolved) | set(running) | set(idle) | set(vacating))
    measures: dict[str, Measure] = {}
    entitled: dict[str, float] = {}
    for o in owners:
        measures[o], entitled[o] = measure(unit, resolved.get(o, {}), totals)
    demand = {o: measures[o](wanting.get(o, ZERO)) for o in owners}
    if unit.index is not None:
        fes = feasible_shares(entitled, demand, totals[unit.index])
    else:
        fes = {o: min(entitled[o], demand[o]) for o in owners}
    targets = {o: fes[o] if settings.target is Target.FEASIBLE else entitled[o] for o in owners}
    views = {o: OwnerView(
        owner=o, share=entitled[o], running=len(running.get(o, ())), idle=len(idle.get(o, ())),
        vacating=vacating.get(o, 0), reserved=reserved.get(o, 0), demand=demand[o], feasible=fes[o],
        target=targets[o], holding=measures[o](ran.get(o, ZERO)),
        active=measures[o](holding.get(o, ZERO)), idle_cpus=idle_cpus.get(o, 0),
        kept_cpus=kept_cpus.get(o, 0), using=holding.get(o, ZERO), entitled=resolved.get(o, {}),
    ) for o in owners}
    have = {o: holding.get(o, ZERO) for o in owners}

    def active(o: str) -> float:
        return measures[o](have[o])

    def gap(o: str) -> float:
        return targets[o] - active(o)

    def reason(rule: str, ben: str, victim: str | None = None) -> Reason:
        return Reason(rule, targets[ben], active(ben), None if victim is None else targets[victim],
                      None if victim is None else active(victim))

    # What each owner below target still wants: its idle shapes in queue order, counted.
    wants: dict[str, dict[Shape, int]] = {}
    for o, v in views.items():
        if v.gap > EPS and v.idle > v.reserved:
            first: dict[Shape, Job] = {}
            counts: dict[Shape, int] = {}
            for job in idle[o]:
                counts[job.shape] = counts.get(job.shape, 0) + 1
                if job.shape not in first or job.id < first[job.shape].id:
                    first[job.shape] = job
            wanted = {s: counts[s] for s in sorted(counts, key=lambda s: first[s].id)}
            for _ in range(min(v.reserved, v.idle)):
                smallest = min(wanted)
                wanted[smallest] -= 1
                if not wanted[smallest]:
                    del wanted[smallest]
            wants[o] = wanted

    def fitting(o: str, room: tuple[int, int | None, int, int | None]) -> Shape | None:
        found = [s for s in wants[o] if fits(s, room)]
        return max(found) if found else None

    def take_shape(o: str, shape: Shape) -> None:
        wants[o][shape] -= 1
        if not wants[o][shape]:
            del wants[o][shape]

    # Step 2a: every free slot to the owner furthest below target that has a job fitting it.
    claims: list[Claim] = []
    for place in free:
        below = sorted((-gap(o), o) for o in wants if wants[o] and gap(o) > EPS)
        for _, o in below:
            shape = fitting(o, slots[place].room)
            if shape is not None:
                take_shape(o, shape)
                claims.append(Claim(place, o, reason("free room to the owner furthest below target", o),
                                    shape))
                have[o] = plus(have[o], held(shape))
                break
    free_cpus = sum(slots[p].cpus for p in free)

    # Step 2b: one preemption at a time, every owner looked at again for each.
    def key(job: Job) -> tuple[float, float, object]:
        if settings.victim_order is VictimOrder.WALLCLOCK:
            return (job.run_time(now), 0.0, job.id)
        return (job.lost_work(now), job.run_time(now), job.id)

    budget = max(0, settings.budget_for(totals))
    gainers = {c.beneficiary for c in claims}
    taken: set[object] = set()
    passed: set[str] = set()
    notes: list[str] = []
    vacates: list[Vacate] = []
    rule = (f"vacate for the owner furthest below its {settings.target.value} target, from the owner "
            f"furthest above its own, lowest {settings.victim_order.value} first")
    while budget > 0 and len(vacates) < budget:
        below = [(-gap(o), o) for o in wants if wants[o] and gap(o) > EPS and o not in passed]
        if not below:
            break
        ben = min(below)[1]
        found: tuple[Shape, Job] | None = None
        for shape in list(wants[ben]):
            if not any(fits(shape, s.room) for s in slots.values()):
                notes.append(f"{ben}: {wants[ben][shape]} idle job(s) asking for "
                             f"{_show(shape)} fit no place in the pool: never vacated for")
                del wants[ben][shape]
                continue
            over = sorted((gap(o), o) for o in running if gap(o) < -EPS and o not in gainers)
            for _, o in over:
                best: Job | None = None
                for job in running[o]:
                    if (job.slot not in slots or job.start_time is None or not job.vacatable
                            or job.id in taken):
                        continue
                    left = minus(have[o], held(job.shape))
                    if measures[o](left) < targets[o] - EPS:
                        continue
                    if not fits(shape, add_room(NO_ROOM, slots[job.slot].room)):
                        continue
                    if best is None or key(job) < key(best):
                        best = job
                if best is not None:
                    found = (shape, best)
                    break
            if found is not None:
                break
        if found is None:
            passed.add(ben)
            continue
        shape, job = found
        take_shape(ben, shape)
        taken.add(job.id)
        assert job.slot is not None
        vacates.append(Vacate(job=job.id, owner=job.owner, slot=job.slot, beneficiary=ben,
                              start_time=job.start_time, run_time=job.run_time(now),
                              lost_work=job.lost_work(now), reason=reason(rule, ben, job.owner),
                              place=job.slot, room=shape, group=len(vacates)))
        have[job.owner] = minus(have[job.owner], held(job.shape))
        have[ben] = plus(have[ben], held(shape))
        gainers.add(ben)

    freed = sum(slots[v.slot].cpus for v in vacates)
    held_owners = holds(views, {v.owner for v in vacates}, free_cpus, freed,
                        by_cores=unit in (Unit.SLOTS, Unit.CPUS), planned=kept_now(vacates))
    if unplaced:
        notes.append(f"{unplaced} running job(s) on slots missing from the snapshot: never victims")
    return Plan(time=now, capacity=snapshot.capacity, max_vacates=budget, owners=tuple(views.values()),
                vacates=tuple(vacates), claims=tuple(claims), holds=held_owners, notes=tuple(notes),
                unit=unit, totals=totals)


def _show(shape: Shape) -> str:
    cpus, memory, gpus, disk = shape
    out = f"{cpus} cpus, {memory} MiB"
    return out + (f", {gpus} gpus" if gpus else "") + (f", {disk} KiB disk" if disk else "")

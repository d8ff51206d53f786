"""Property tests of room-making on partitionable slots: for any pool of partitionable machines with
jobs of mixed shapes and any shares, a plan never takes more victims than the room needs, never
pushes a victim owner below its target, respects p, and is deterministic."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import machines
from osep.core.counting import count
from osep.core.model import Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.resources import ZERO, Unit, add_room, fits, held, less, plus

OWNERS = ["a", "b", "c", "d"]
SHAPES = [(1, 512, 0), (1, 512, 0), (2, 1024, 0), (4, 2048, 0), (1, 1024, 1), (8, 4096, 0)]


@st.composite
def pools(draw):
    layout = {f"m{k}": (8, 8192, draw(st.sampled_from([0, 0, 1, 2]))) for k in range(draw(st.integers(1, 5)))}
    running = []
    for name, (cpus, memory, gpus) in layout.items():
        left = [cpus, memory, gpus]
        for _ in range(draw(st.integers(0, 8))):
            shape = draw(st.sampled_from(SHAPES))
            if all(shape[i] <= left[i] for i in range(3)):
                for i in range(3):
                    left[i] -= shape[i]
                running.append((draw(st.sampled_from(OWNERS)), name, shape,
                                float(draw(st.integers(0, 9000)))))
    idle = [(o, draw(st.sampled_from(SHAPES))) for o in OWNERS for _ in range(draw(st.integers(0, 4)))]
    unit = draw(st.sampled_from([Unit.CPUS, Unit.DOMINANT, Unit.SLOTS]))
    raw = {o: draw(st.integers(0, 12)) for o in draw(st.sets(st.sampled_from(OWNERS)))}
    if unit is Unit.SLOTS:
        shares = {o: float(v) for o, v in raw.items()}
    elif unit is Unit.CPUS:
        shares = {o: {"cpus": float(v)} for o, v in raw.items()}
    else:
        shares = {o: {"cpus": float(v), "gpus": float(draw(st.integers(0, 2)))} for o, v in raw.items()}
    from osep.core.shares import ShareTable

    policy = PolicySettings(
        ShareTable(shares),
        target=Target.OWNER if unit is Unit.DOMINANT else draw(st.sampled_from(list(Target))),
        victim_order=draw(st.sampled_from(list(VictimOrder))),
        max_vacates=draw(st.one_of(st.none(), st.integers(0, 8))),
        unit=unit,
    )
    return machines(layout, running, idle), policy


@settings(max_examples=300, deadline=None)
@given(pools())
def test_victim_sets(case):
    snapshot, policy = case
    plan = decide(snapshot, policy)
    assert len(plan.vacates) <= plan.max_vacates
    slots = {s.name: s for s in snapshot.slots}
    jobs = {j.id: j for j in snapshot.jobs}
    assert len({v.job for v in plan.vacates}) == len(plan.vacates)

    # Replay the plan's room-keeping: claims first, then each group in order.
    rooms = {s.name: s.room for s in snapshot.slots if s.partitionable}

    def claim(c):
        assert fits(c.shape, rooms[c.slot])
        rooms[c.slot] = less(rooms[c.slot], c.shape)

    for c in plan.claims:
        if c.after is None:
            claim(c)
    groups: dict[int, list] = {}
    for v in plan.vacates:
        groups.setdefault(v.group, []).append(v)
    for _, group in sorted(groups.items()):
        place, shape = group[0].place, group[0].room
        assert all(v.place == place and v.room == shape for v in group)
        assert all(slots[v.slot].parent == place for v in group)
        freed = [slots[v.slot].room for v in group]
        total = rooms[place]
        for f in freed:
            total = add_room(total, f)
        assert fits(shape, total)  # the room is made
        for k in range(len(freed)):  # and no victim is more than it needs
            without = rooms[place]
            for j, f in enumerate(freed):
                if j != k:
                    without = add_room(without, f)
            assert not fits(shape, without)
        rooms[place] = less(total, shape)
        for c in plan.claims:  # room this group left over, claimed without a victim
            if c.after == group[0].group:
                assert c.slot == place
                claim(c)
        # Beneficiaries are never victims in the same plan.
        assert all(v.owner != v.beneficiary for v in group)
    assert not {v.owner for v in plan.vacates} & {v.beneficiary for v in plan.vacates}
    assert not {v.owner for v in plan.vacates} & {c.beneficiary for c in plan.claims}

    # No victim owner ends below its target.
    census = count(snapshot, policy.shares, policy.target, policy.unit)
    lost: dict[str, tuple] = {}
    for v in plan.vacates:
        lost[v.owner] = plus(lost.get(v.owner, ZERO), held(jobs[v.job].shape))
    for owner, amount in lost.items():
        assert census.ledger.may_lose(owner, amount)


@settings(max_examples=100, deadline=None)
@given(pools(), st.randoms(use_true_random=False))
def test_victim_sets_are_deterministic(case, rnd: random.Random):
    snapshot, policy = case
    first = decide(snapshot, policy)
    assert decide(snapshot, policy) == first
    # Neither the order of jobs nor that of slots or kept room matters (ads come in any order).
    jobs, slots, kept = list(snapshot.jobs), list(snapshot.slots), list(snapshot.kept)
    for items in (jobs, slots, kept):
        rnd.shuffle(items)
    assert decide(Snapshot(snapshot.time, tuple(slots), tuple(jobs), tuple(kept)), policy) == first

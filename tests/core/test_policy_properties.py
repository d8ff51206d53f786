"""Invariants of the decision core on random pools (hypothesis)."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core import counting
from osep.core.model import EPS, Job, JobId, JobState, Kept, Slot, Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.resolved import resolved_shares
from osep.core.shares import ShareTable
from osep.core.view import view_of

OWNERS = ["a", "b", "c", "d", "e"]


@st.composite
def pools(draw):
    now = 100_000.0
    n_slots = draw(st.integers(0, 30))
    slots, jobs, kept = [], [], []
    for k in range(n_slots):
        cpus = draw(st.sampled_from([1, 1, 2]))
        memory = draw(st.sampled_from([None, 2048, 4096]))
        reserved = draw(st.sampled_from([None] * 4 + OWNERS))
        occupant = draw(st.sampled_from([None, "run", "run", "run", "vacating"]))
        slots.append(Slot(f"s{k}", cpus=cpus, memory=memory))
        if reserved:
            kept.append(Kept(reserved, f"s{k}", (1, 0, 0, 0)))
        if occupant:
            owner = draw(st.sampled_from(OWNERS))
            start = draw(st.floats(0, now, allow_nan=False))
            ckpt = draw(st.one_of(st.none(), st.floats(0, now, allow_nan=False)))
            state = JobState.RUNNING if occupant == "run" else JobState.VACATING
            jobs.append(Job(JobId(owner, 0, k), owner, state, slot=f"s{k}", start_time=start,
                            checkpoint_time=ckpt))
    for owner in OWNERS:
        for k in range(draw(st.integers(0, 8))):
            jobs.append(Job(JobId(owner, 1, k), owner, JobState.IDLE,
                            cpus=draw(st.sampled_from([1, 1, 2, 4])),
                            memory=draw(st.sampled_from([0, 1024, 3000]))))
        if draw(st.booleans()):
            jobs.append(Job(JobId(owner, 2, 0), owner, JobState.HELD))
    percent = draw(st.booleans())
    if percent:
        weights = draw(st.lists(st.integers(0, 40), min_size=len(OWNERS), max_size=len(OWNERS)))
        shares = {o: float(w) for o, w in zip(OWNERS, weights, strict=False) if w}
        total = sum(shares.values())
        if total > 100:
            shares = {o: 100 * s / total for o, s in shares.items()}
    else:
        shares = {o: float(draw(st.integers(0, 12))) for o in draw(st.sets(st.sampled_from(OWNERS)))}
    policy = PolicySettings(
        shares=ShareTable(shares, percent=percent),
        target=draw(st.sampled_from(list(Target))),
        victim_order=draw(st.sampled_from(list(VictimOrder))),
        max_vacates=draw(st.one_of(st.none(), st.integers(0, 10))),
    )
    return Snapshot(now, tuple(slots), tuple(jobs), tuple(kept)), policy


@settings(max_examples=300, deadline=None)
@given(pools())
def test_plan_invariants(case):
    snapshot, policy = case
    plan = decide(snapshot, policy)
    views = {v.owner: v for v in plan.owners}
    jobs = {j.id: j for j in snapshot.jobs}
    slots = {s.name: s for s in snapshot.slots}

    # Never more than p vacates.
    assert len(plan.vacates) <= plan.max_vacates
    assert plan.max_vacates == policy.vacate_budget(snapshot.capacity)

    taken = Counter(v.owner for v in plan.vacates)
    given_to = Counter(v.beneficiary for v in plan.vacates) + Counter(c.beneficiary for c in plan.claims)
    for owner, count in taken.items():
        view = views[owner]
        # Never a victim from an owner at or below target, and never pushed below it.
        assert view.gap <= -1 + EPS
        assert view.active - count >= view.target - EPS
    for owner, count in given_to.items():
        view = views[owner]
        # Never a vacate or claim without a beneficiary that is owed slots and has idle jobs for them.
        assert view.gap > EPS
        assert count <= view.idle - view.reserved
        assert count < view.gap + 1 - EPS  # a beneficiary is not overfilled by more than a fraction

    seen_jobs, seen_slots = set(), set()
    for v in plan.vacates:
        job = jobs[v.job]
        assert job.state is JobState.RUNNING and job.slot == v.slot and v.slot in slots
        assert v.owner == job.owner != v.beneficiary
        # The freed slot can run one of the beneficiary's idle jobs.
        assert any(
            j.owner == v.beneficiary and j.state is JobState.IDLE and slots[v.slot].fits(j.shape)
            for j in snapshot.jobs
        )
        assert v.job not in seen_jobs and v.slot not in seen_slots
        seen_jobs.add(v.job)
        seen_slots.add(v.slot)
    busy = {j.slot for j in snapshot.jobs if j.state in (JobState.RUNNING, JobState.VACATING)}
    for c in plan.claims:
        # Claims only take free, unreserved slots, each once.
        assert c.slot not in busy and c.slot not in {k.place for k in snapshot.kept}
        assert c.slot not in seen_slots
        seen_slots.add(c.slot)


@settings(max_examples=150, deadline=None)
@given(pools(), st.randoms(use_true_random=False))
def test_plan_is_deterministic_and_ignores_the_order_of_jobs_slots_and_kept_room(case, rnd: random.Random):
    snapshot, policy = case
    first = decide(snapshot, policy)
    assert decide(snapshot, policy) == first
    # The collector and the schedds return ads in any order: the plan must not depend on it.
    jobs, slots, kept = list(snapshot.jobs), list(snapshot.slots), list(snapshot.kept)
    for items in (jobs, slots, kept):
        rnd.shuffle(items)
    assert decide(Snapshot(snapshot.time, tuple(slots), tuple(jobs), tuple(kept)), policy) == first


@settings(max_examples=150, deadline=None)
@given(pools())
def test_feasible_shares_use_exactly_the_usable_capacity(case):
    snapshot, policy = case
    plan = decide(snapshot, policy)
    demand = sum(v.demand for v in plan.owners)
    assert abs(sum(v.feasible for v in plan.owners) - min(snapshot.capacity, demand)) < 1e-6
    for v in plan.owners:
        assert -EPS <= v.feasible <= v.demand + EPS


@settings(max_examples=200, deadline=None)
@given(pools())
def test_flat_shares_count_only_the_owners_with_jobs_and_count_the_same(case):
    """Flat shares in one resource are counted over the owners with jobs only (the others' views
    made once per shares and capacity): the same views, figures and owners below and above target
    as the general count over every owner."""
    snapshot, policy = case
    pool = view_of(snapshot)
    known = resolved_shares(policy.shares, pool.totals(), policy.unit)
    fast = counting.count_view(pool, snapshot.kept, policy.shares, policy.target, policy.unit)
    with pytest.MonkeyPatch.context() as patch:  # the same shares, counted the general way
        patch.setattr(counting, "resolved_shares", lambda *_: dataclasses.replace(known, plain=False))
        plain = counting.count_view(pool, snapshot.kept, policy.shares, policy.target, policy.unit)
    assert list(fast.views.items()) == list(plain.views.items())
    assert (fast.below, fast.above) == (plain.below, plain.above)
    for owner in plain.views:
        assert repr(fast.ledger.gap(owner)) == repr(plain.ledger.gap(owner))
    # The views a hold may be for: every owner with jobs (an owner without any is never held).
    assert all(fast.busy.get(o) == v for o, v in plain.views.items() if o in pool.tallies)

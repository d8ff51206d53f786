"""The simulated negotiator's cycle, on small pools: who gets which slot."""

from __future__ import annotations

import pytest

from osep.core.model import JobId
from osep.sim import orderings
from osep.sim.negotiator import negotiate
from osep.sim.pool import SimulatedPool
from osep.sim.specs import JobSpec, PoolSettings, SlotSpec


def pool_with(jobs: dict[str, int], slots: int = 6) -> SimulatedPool:
    pool = SimulatedPool([SlotSpec(f"s{k}") for k in range(slots)], PoolSettings())
    n = 0
    for owner, count in jobs.items():
        for _ in range(count):
            pool.arrive(JobSpec(JobId(owner, 0, n), owner, float(n), 1000.0))
            n += 1
    return pool


def placed(pool: SimulatedPool) -> dict[str, str]:
    return {name: slot.job.spec.owner for name, slot in pool.slots.items() if slot.job is not None}


@pytest.mark.parametrize(("holds", "kept", "expected"), [
    # Nobody may be given anything: the slots kept for b, far down the pool, still are.
    ({"a": 0, "b": 0}, ["s4", "s2"], {"s2": "b", "s4": "b"}),
    # a may be given two: it takes the first free slots, and b only its kept ones.
    ({"a": 2, "b": 0}, ["s5", "s3"], {"s0": "a", "s1": "a", "s3": "b", "s5": "b"}),
    # Nobody held: a (ranked first, no usage, the larger share) fills what is not kept.
    ({}, ["s4"], {"s0": "a", "s1": "a", "s2": "a", "s3": "b", "s4": "b", "s5": "b"}),
])
def test_room_kept_for_someone_is_handed_over_whoever_else_is_held(holds, kept, expected):
    pool = pool_with({"a": 3, "b": 3})
    for slot in kept:
        pool.reserve(slot, "b", (1, 0, 0, 0))
    pool.hold(holds)
    negotiate(pool, orderings.FairShare({"a": 2.0, "b": 1.0}))
    assert placed(pool) == expected
    assert not pool.book.pending()

"""What the simulated pool keeps for the negotiator: queues by shape, free slots and open machines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from osep.core.model import JobId
from osep.core.resources import fits
from osep.sim.pool import IdleQueue, SimulatedPool
from osep.sim.specs import JobSpec, PoolSettings, SlotSpec

SHAPES = st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(0, 1), st.just(0))


@given(st.lists(st.tuples(st.integers(0, 5), SHAPES), max_size=30),
       st.lists(st.tuples(st.integers(0, 4), st.sampled_from([None, 0, 2, 3]), st.integers(0, 1),
                          st.sampled_from([None, 4])), max_size=20),
       st.sampled_from([None, 1, 2]))
def test_the_oldest_job_that_fits_comes_off_the_queue(jobs, rooms, cpus):
    queue = IdleQueue()
    plain = []
    for seq, (since, shape) in enumerate(jobs):
        entry = (float(since), seq, JobId("a", 0, seq))
        queue.push(entry, shape)
        plain.append((entry, shape))
    for room in rooms:
        fitting = [(e, s) for e, s in plain if fits(s, room) and (cpus is None or s[0] <= cpus)]
        expected = min(fitting)[0] if fitting else None
        assert queue.pop_fitting(room, cpus) == expected
        if expected is not None:
            plain = [(e, s) for e, s in plain if e != expected]
        assert len(queue) == len(plain)
        if plain:
            assert queue.head() == min(plain)[0]


def test_the_pool_keeps_its_free_slots_and_open_machines_in_order():
    pool = SimulatedPool([SlotSpec("s0"), SlotSpec("m0", cpus=2, partitionable=True), SlotSpec("s1"),
                          SlotSpec("m1", cpus=1, partitionable=True)], PoolSettings())
    for k in range(4):
        pool.arrive(JobSpec(JobId("a", 0, k), "a", 0.0, 100.0))
    assert [s.spec.name for s in pool.free_slots()] == ["s0", "s1"]
    assert [m.spec.name for m in pool.open_machines()] == ["m0", "m1"]
    assert pool.waiting == 4 and len(pool.idle["a"]) == 4 and pool.can_match()
    first = pool.pop_fitting("a", pool.slots["s1"].room)
    assert first is not None
    pool.start(first, pool.slots["s1"])
    machine = pool.machines["m1"]
    second = pool.pop_fitting("a", machine.free)
    assert second is not None
    pool.start_on(second, machine)
    assert [s.spec.name for s in pool.free_slots()] == ["s0"]
    assert [m.spec.name for m in pool.open_machines()] == ["m0"]
    pool.now = 100.0
    pool.finish(second.spec.id, second.run_id)
    pool.finish(first.spec.id, first.run_id)
    assert [s.spec.name for s in pool.free_slots()] == ["s0", "s1"]
    assert [m.spec.name for m in pool.open_machines()] == ["m0", "m1"]
    assert first.spec.id not in pool.jobs and pool.completed == 2 and pool.waiting == 2
    pool.hold({"a": 0})
    assert not pool.can_match()  # room is free, but the only owner waiting is held to nothing

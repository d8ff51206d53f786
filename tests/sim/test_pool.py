"""What the simulated pool keeps for the negotiator: queues by shape, free slots and open machines."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.model import JobId, JobState
from osep.core.resources import fits
from osep.core.view import PoolView
from osep.errors import PoolError
from osep.sim.pool import IdleQueue, SimulatedPool
from osep.sim.specs import Checkpointing, JobSpec, PoolSettings, SlotSpec

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


def _read(view: PoolView) -> dict[str, Any]:
    """What a decision reads of a view, in a form that compares."""
    tallies = {o: (t.running, t.idle, t.vacating, t.ran, t.waiting, t.leaving, dict(t.shapes),
                   {s: t.first(s) for s in t.shapes}, list(t.victims(True)),
                   list(t.victims(False)))
               for o, t in view.tallies.items()}
    # (The simulated pool counts its idle jobs for the view instead of telling them one by one:
    # the tallies say what they are, and the view lists the others.)
    jobs = {i: j for i, j in view.jobs.items() if j.state is not JobState.IDLE}
    return {"jobs": jobs, "slots": view.slots, "tallies": tallies,
            "busy": dict(view.busy), "leaving": dict(view.leaving), "free": view.free_static,
            "rooms": view.rooms, "on_place": view.on_place, "wholes": dict(view.wholes),
            "static": view.static}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["arrive", "arrive", "arrive later", "enqueue", "start",
                                           "start", "vacate", "release", "finish", "snapshot"]),
                          st.integers(0, 3), st.sampled_from([0.0, 0.0, 7.0, 40.0])), max_size=80),
       st.booleans())
def test_the_view_a_snapshot_reads_is_the_view_of_the_pool_then(ops, periodic):
    """The pool tells its view what changed only when a snapshot is taken: the view then is the one
    built from the pool's jobs (jobs that came and went in between never shown)."""
    mode = Checkpointing.PERIODIC if periodic else Checkpointing.NONE
    pool = SimulatedPool([SlotSpec("s0"), SlotSpec("s1", cpus=2),
                          SlotSpec("m0", cpus=3, memory=4, partitionable=True)],
                         PoolSettings(checkpointing=mode, checkpoint_interval=30.0))
    arrived = 0
    for op, k, step in ops:
        pool.now += step
        jobs = list(pool.jobs.values())
        if op in ("arrive", "arrive later"):  # later: idle, but queued only when enqueued
            owner = "ab"[k % 2]
            pool.arrive(JobSpec(JobId(owner, 0, 100 - arrived), owner, pool.now, 500.0,
                                cpus=1 + k % 2, memory=k % 3), queued=op == "arrive")
            arrived += 1
        elif op == "enqueue":
            held = [j for j in jobs if j.state is JobState.IDLE and j.spec.id in pool.unqueued.get(j.spec.owner, {})]
            if held:
                pool.enqueue(held[k % len(held)].spec.id)
        elif op == "start":  # the first job, of either owner, that fits somewhere starts there
            owners = ["ab"[k % 2], "ab"[(k + 1) % 2]]
            found = next(((o, s) for o in owners for s in pool.free_slots()
                          if (j := pool.idle.get(o)) and any(fits(x, s.room) for x in j._shapes)),
                         None)
            if found is not None and k < 2:
                job = pool.pop_fitting(found[0], found[1].room)
                assert job is not None
                pool.start(job, found[1])
            else:
                for machine in pool.open_machines():
                    job = next((j for o in owners if (j := pool.pop_fitting(o, machine.free))),
                               None)
                    if job is not None:
                        pool.start_on(job, machine)
                        break
        elif op in ("vacate", "finish", "release"):
            wanted = (JobState.VACATING,) if op == "release" else \
                (JobState.RUNNING,) if op == "vacate" else (JobState.RUNNING, JobState.VACATING)
            mine = [j for j in jobs if j.state in wanted]
            if mine:
                job = mine[k % len(mine)]
                if op == "vacate":
                    pool.vacate(job.spec.id)
                elif op == "release":
                    pool.release(job.spec.id, job.run_id)
                else:
                    pool.finish(job.spec.id, job.run_id)
        else:
            snapshot = pool.snapshot()
            shown = [pool.job(i) for i in pool.jobs]
            built = PoolView.of(snapshot.view.slots.values(), [j for j in shown if j is not None])
            assert _read(snapshot.view) == _read(built)
            # Idle jobs are counted, not told one by one.
            assert all(j.state is not JobState.IDLE for j in snapshot.view.jobs.values())


def test_the_view_asks_which_idle_job_is_first_only_of_the_pool_it_was_told_about():
    pool = SimulatedPool([SlotSpec("s0")], PoolSettings())
    for n, cpus in enumerate([1, 2, 1]):
        pool.arrive(JobSpec(JobId("a", 0, 9 - n), "a", 0.0, 500.0, cpus=cpus))
    view = pool.snapshot().view
    assert view is not None
    tally = view.tallies["a"]
    assert {s: tally.first(s) for s in tally.shapes} == {(1, 0, 0, 0): JobId("a", 0, 7),
                                                        (2, 0, 0, 0): JobId("a", 0, 8)}
    pool.arrive(JobSpec(JobId("a", 0, 1), "a", 0.0, 500.0))
    with pytest.raises(PoolError, match="idle jobs changed since"):
        tally.first((1, 0, 0, 0))
    assert pool.snapshot().view.tallies["a"].first((1, 0, 0, 0)) == JobId("a", 0, 1)


@pytest.mark.parametrize("mode", list(Checkpointing))
def test_the_row_kept_for_a_job_that_starts_is_the_row_made_of_it_then(mode):
    """A run's start writes the job's row out (made once per run, not at each snapshot): it is
    the row :meth:`SimulatedPool._row` makes of the job then, on a static slot and a dynamic one."""
    pool = SimulatedPool([SlotSpec("s0"), SlotSpec("m0", cpus=2, memory=4, partitionable=True)],
                         PoolSettings(checkpointing=mode, checkpoint_interval=30.0))
    for n in range(2):
        pool.arrive(JobSpec(JobId("a", 0, n), "a", 0.0, 500.0, memory=2))
    pool.now = 5.0
    first = pool.pop_fitting("a", pool.slots["s0"].room)
    assert first is not None
    pool.start(first, pool.slots["s0"])
    second = pool.pop_fitting("a", pool.machines["m0"].free)
    assert second is not None
    pool.start_on(second, pool.machines["m0"])
    for job in (first, second):
        assert pool._changed[job.spec.id] == pool._row(job)
    pool.now = 70.0
    pool.vacate(first.spec.id)
    assert pool._changed[first.spec.id] == pool._row(first)

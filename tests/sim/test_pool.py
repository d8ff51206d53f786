"""What the simulated pool keeps for the negotiator: queues by shape, free slots and open machines."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.model import JobId, JobState, Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.resources import fits
from osep.core.shares import ShareTable
from osep.core.tally import Tally
from osep.core.view import PoolView
from osep.errors import PoolError
from osep.sim.parts import IdleQueue
from osep.sim.pool import SimulatedPool
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


def _order(view: PoolView, tally: Tally, wallclock: bool) -> list[tuple[float, frozenset[JobId]]]:
    """A tally's victim order as a decision reads it: the candidates with equal starts (none has
    a checkpoint here but with periodic ones, where every candidate is told) are put in exact
    order by the reader, so only which come together, in what order, counts."""
    groups: list[tuple[float, set[JobId]]] = []
    for job_id in tally.victims(wallclock):
        start = tally.runs[job_id][0] if tally.runs is not None else view.jobs[job_id].start_time
        assert start is not None
        if groups and groups[-1][0] == start:
            groups[-1][1].add(job_id)
        else:
            groups.append((start, {job_id}))
    return [(start, frozenset(ids)) for start, ids in groups]


def _read(view: PoolView, counted: bool = False) -> dict[str, Any]:
    """What a decision reads of a view, in a form that compares (``counted``: as a view whose
    pool counts its running jobs on static slots reads it)."""
    tallies = {o: (t.running, t.idle, t.vacating, t.ran, t.waiting, t.leaving, dict(t.shapes),
                   {s: t.first(s) for s in t.shapes}, _order(view, t, True),
                   _order(view, t, False))
               for o, t in view.tallies.items()}
    # (The simulated pool counts its idle jobs for the view instead of telling them one by one:
    # the tallies say what they are, and the view lists the others; with static slots only and
    # no periodic checkpoints, its running jobs too.)
    jobs = {i: j for i, j in view.jobs.items() if j.state is not JobState.IDLE
            and not (counted and j.state is JobState.RUNNING and j.slot in view.static)}
    busy = {**view.busy, **(view.running_static or {})}
    return {"jobs": jobs, "slots": view.slots, "tallies": tallies,
            "busy": busy, "leaving": dict(view.leaving), "free": view.free_static,
            "rooms": view.rooms, "on_place": view.on_place, "wholes": dict(view.wholes),
            "static": view.static}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["arrive", "arrive", "arrive", "arrive later", "enqueue",
                                           "start", "start", "start", "vacate", "release",
                                           "finish", "snapshot", "reserve"]),
                          st.integers(0, 3), st.sampled_from([0.0, 0.0, 7.0, 40.0])),
                min_size=10, max_size=80),
       st.sampled_from(list(Checkpointing)), st.booleans(), st.sampled_from([0, 1, 2, None]),
       st.booleans())
def test_the_view_a_snapshot_reads_is_the_view_of_the_pool_then(ops, mode, static, uniform, late):
    """The pool tells its view what changed only when a snapshot is taken: the view then is the one
    built from the pool's jobs (jobs that came and went in between never shown). With static slots
    only and no periodic checkpoints, the pool counts its running jobs for the view (their
    counts per shape kept from the first time it meets a second shape: after the ``uniform``-th
    job, or never). ``late``: the pool keeps no view until its first snapshot, and builds it
    then from its jobs as they are."""
    slots = [SlotSpec("s0"), SlotSpec("s1", cpus=2)]
    slots += [SlotSpec("s2", cpus=2, memory=3), SlotSpec("s3"), SlotSpec("s4", cpus=2)] if static \
        else [SlotSpec("m0", cpus=3, memory=4, partitionable=True)]
    pool = SimulatedPool(slots, PoolSettings(checkpointing=mode, checkpoint_interval=30.0),
                         keep_view=not late)
    counted = static and mode is not Checkpointing.PERIODIC
    arrived = 0
    for op, k, step in ops:
        pool.now += step
        jobs = list(pool.jobs.values())
        if op in ("arrive", "arrive later"):  # later: idle, but queued only when enqueued
            owner = "ab"[k % 2]
            mixed = uniform is not None and arrived >= uniform
            pool.arrive(JobSpec(JobId(owner, 0, 100 - arrived), owner, pool.now, 500.0,
                                cpus=1 + k % 2 if mixed else 1, memory=k % 3 if mixed else 0),
                        queued=op == "arrive")
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
            if found is not None and (k < 2 or not pool.machines):
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
        elif op == "reserve":  # room kept for an owner, on a slot free or busy
            name = [s.name for s in slots][k % len(slots)]
            pool.reserve(name, "ab"[k % 2], (1, 0, 0, 0))
        else:
            snapshot = pool.snapshot()
            shown = [pool.job(i) for i in pool.jobs]
            built = PoolView.of(snapshot.view.slots.values(), [j for j in shown if j is not None])
            assert _read(snapshot.view) == _read(built, counted)
            # The room kept is placed as it would be on the slots the jobs occupy.
            assert pool.book.mark(built) == (snapshot.kept, ())
            # Idle jobs are counted, not told one by one; so are running ones, where counted.
            assert all(j.state is not JobState.IDLE for j in snapshot.view.jobs.values())
            assert (snapshot.view.running_static is not None) == counted
            if counted:
                assert all(j.state is not JobState.RUNNING for j in snapshot.view.jobs.values())
            # The decision on it is the decision on the pool's jobs, whichever target and order.
            listed = Snapshot(snapshot.time, tuple(snapshot.view.slots.values()),
                              tuple(j for j in shown if j is not None), snapshot.kept)
            for target, order in ((Target.OWNER, VictimOrder.WALLCLOCK),
                                  (Target.FEASIBLE, VictimOrder.LOST_WORK)):
                policy = PolicySettings(ShareTable({"a": 3, "b": 1}), target=target,
                                        victim_order=order)
                assert decide(snapshot, policy) == decide(listed, policy)


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
    with pytest.raises(PoolError, match="jobs changed since"):
        tally.first((1, 0, 0, 0))
    assert pool.snapshot().view.tallies["a"].first((1, 0, 0, 0)) == JobId("a", 0, 1)


def test_the_view_reads_the_victims_the_pool_counts_only_of_the_pool_it_was_told_about():
    """A pool of static slots counts its running jobs: the view reads their order (latest start
    first) from the pool's record, and only while the pool is as it was when it told the view."""
    pool = SimulatedPool([SlotSpec(f"s{n}") for n in range(3)], PoolSettings())
    for n in range(3):
        pool.arrive(JobSpec(JobId("a", 0, n), "a", 0.0, 500.0))
    for n, place in enumerate(pool._static):
        pool.now = 10.0 * n
        job = pool.pop_fitting("a", place.room)
        assert job is not None
        pool.start(job, place)
    view = pool.snapshot().view
    assert view is not None and view.running_static is not None
    tally = view.tallies["a"]
    assert tally.running == 3 and not view.jobs and not view.free_static
    assert list(tally.victims(True)) == [JobId("a", 0, 2), JobId("a", 0, 1), JobId("a", 0, 0)]
    assert list(tally.victims(False)) == list(tally.victims(True))
    assert dict(view.running_static) == {"s0": 1, "s1": 1, "s2": 1}
    pool.now = 30.0
    pool.finish(JobId("a", 0, 1), 1)
    with pytest.raises(PoolError, match="jobs changed since"):
        list(tally.victims(True))
    view = pool.snapshot().view
    assert view is not None
    assert list(view.tallies["a"].victims(True)) == [JobId("a", 0, 2), JobId("a", 0, 0)]
    assert view.free_static == {"s1"} and dict(view.running_static) == {"s0": 1, "s2": 1}


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


@pytest.mark.parametrize("static", [True, False])
def test_a_snapshot_of_a_pool_that_moved_on_is_not_decided_on(static):
    """A simulated pool counts jobs for its view (idle ones; running ones too on static slots), so a
    snapshot's jobs are not all the view counts: deciding on a snapshot after the pool changed is an
    error, not a plan from a view of another moment."""
    slots = [SlotSpec("s0"), SlotSpec("s1")]
    if not static:
        slots.append(SlotSpec("m0", cpus=2, partitionable=True))
    pool = SimulatedPool(slots, PoolSettings())
    for n in range(2):
        pool.arrive(JobSpec(JobId("a", 0, n), "a", 0.0, 500.0))
        place = pool._static[n]
        job = pool.pop_fitting("a", place.room)
        assert job is not None
        pool.start(job, place)
    pool.arrive(JobSpec(JobId("b", 0, 9), "b", 0.0, 500.0))
    policy = PolicySettings(ShareTable({"a": 1, "b": 1}))
    kept = pool.snapshot()
    pool.now = 50.0
    pool.finish(JobId("a", 0, 0), 1)
    with pytest.raises(PoolError, match="changed since"):
        decide(kept, policy)
    fresh = pool.snapshot()
    assert [c.beneficiary for c in decide(fresh, policy).claims] == ["b"]
    assert decide(pool.snapshot(), policy) == decide(fresh, policy)  # nothing changed in between
    pool.arrive(JobSpec(JobId("b", 0, 10), "b", 50.0, 500.0))
    pool.snapshot()  # the view told the arrival: the snapshot before is of another moment
    with pytest.raises(PoolError, match="changed since"):
        decide(fresh, policy)

"""The kept pool view (osep/core/view.py): kept through any sequence of changes it equals the view
built from the final pool, a decision on it gives exactly the plan of a decision on the plain
snapshot, and on static pools with flat shares both give the naive reference's plan."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_decide

from builders import snap
from osep.core.counting import count_view
from osep.core.jobtable import Row, row_of
from osep.core.model import Job, JobId, JobState, Kept, Slot, Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.resources import Unit
from osep.core.shares import ShareTable
from osep.core.tree import ShareTree, TreeNode
from osep.core.view import PoolView, view_of

NOW = 10_000.0
FLAT = ["a", "b", "c", "d"]
TREED = ["g.a", "g.b", "h.c", "d"]
STATIC = [f"s{k}" for k in range(6)]
MACHINES = ["m0", "m1", "m2"]
DYNAMIC = [f"{m}_{k}" for m in MACHINES for k in range(3)]
SHAPES = [(1, 0, 0, 0), (1, 0, 0, 0), (1, 512, 0, 0), (2, 1024, 0, 0), (1, 256, 1, 0), (4, 0, 0, 0)]
# Starts and checkpoints from a few values (ties, and starts after now), or anything.
TIMES = st.one_of(st.sampled_from([0.0, 100.0, 5000.0, NOW, NOW + 50.0]),
                  st.floats(0.0, 2 * NOW, allow_nan=False))


def job_of(draw: Any, owners: list[str], static: bool) -> Job:
    owner = draw(st.sampled_from(owners))
    job_id = JobId(owner, draw(st.integers(0, 1)), draw(st.integers(0, 5)))
    state = draw(st.sampled_from([JobState.IDLE, JobState.IDLE, JobState.RUNNING, JobState.RUNNING,
                                  JobState.VACATING, JobState.HELD]))
    shape = (1, 0, 0, 0) if static else draw(st.sampled_from(SHAPES))
    slots = [*STATIC, "gone"] if static else [*STATIC, *DYNAMIC, "gone"]
    running = state in (JobState.RUNNING, JobState.VACATING)
    return Job(job_id, owner, state, submit_time=0.0,
               slot=draw(st.sampled_from(slots)) if running else None,
               start_time=draw(st.one_of(st.none(), TIMES, TIMES, TIMES)) if running else None,
               checkpoint_time=draw(st.one_of(st.none(), TIMES)) if running else None,
               cpus=shape[0], memory=shape[1], gpus=shape[2], disk=shape[3],
               vacatable=draw(st.sampled_from([True, True, True, False])))


def slot_of(draw: Any, static: bool) -> Slot:
    kind = "static" if static else draw(st.sampled_from(["static", "machine", "dynamic"]))
    if kind == "static":
        return Slot(draw(st.sampled_from(STATIC)), cpus=draw(st.sampled_from([1, 1, 2])),
                    memory=draw(st.sampled_from([None, 1024, 4096])))
    if kind == "machine":
        return Slot(draw(st.sampled_from(MACHINES)), cpus=draw(st.integers(0, 4)),
                    memory=draw(st.sampled_from([None, 0, 2048])), gpus=draw(st.integers(0, 1)),
                    partitionable=True)
    name = draw(st.sampled_from(DYNAMIC))
    shape = draw(st.sampled_from(SHAPES))
    return Slot(name, cpus=shape[0], memory=shape[1], gpus=shape[2], parent=name.split("_")[0])


def told_rows(draw: Any, view: PoolView, owners: list[str], static: bool
              ) -> list[tuple[JobId, Row | None]]:
    """A few changes as a pool tells them at once: a job as it is now (new or not), a job gone, a
    job the view has told again as it is, or one of its idle jobs started."""
    rows: list[tuple[JobId, Row | None]] = []
    slots = [*STATIC, "gone"] if static else [*STATIC, *DYNAMIC, "gone"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["job", "gone", "again", "start", "start"]))
        known = sorted(view.jobs)
        if kind == "job" or not known:
            job = job_of(draw, owners, static)
            rows.append((job.id, row_of(job)))
            continue
        job_id = draw(st.sampled_from(known))
        row = view.jobs.row(job_id)
        assert row is not None
        if kind == "gone":
            rows.append((job_id, None))
        elif kind == "again":
            rows.append((job_id, row))
        else:  # started, checkpoint unknown or not (only an idle job's start is written out)
            owner, _, submit, _, _, _, shape, vacatable = row
            rows.append((job_id, (owner, JobState.RUNNING, submit, draw(st.sampled_from(slots)),
                                  draw(st.one_of(st.none(), TIMES)), draw(st.one_of(st.none(), TIMES)),
                                  shape, vacatable)))
    return rows


@st.composite
def kept_pools(draw: Any) -> tuple[PoolView, PolicySettings, tuple[Kept, ...]]:
    """A view kept through a random sequence of changes, a policy and room kept for owners."""
    static = draw(st.booleans())
    tree = draw(st.booleans())
    owners = TREED if tree else FLAT
    view = PoolView()
    for _ in range(draw(st.integers(0, 60))):
        op = draw(st.sampled_from(["job", "job", "job", "job", "drop job", "slot", "slot",
                                   "drop slot", "read", "look", "tell", "tell", "tell"]))
        if op == "read" and view.tallies:  # the orders read midway are brought up to date later
            tally = view.tallies[draw(st.sampled_from(sorted(view.tallies)))]
            list(tally.victims(draw(st.booleans())))
        elif op == "look" and view.jobs:  # a job read (made a Job), then maybe changed
            view.jobs[draw(st.sampled_from(sorted(view.jobs)))]
        elif op == "job":  # one job's change, told alone
            job = job_of(draw, owners, static)
            view.tell([(job.id, row_of(job))])
        elif op == "drop job" and view.jobs:
            view.tell([(draw(st.sampled_from(sorted(view.jobs))), None)])
        elif op == "tell":  # several changes told at once, as rows (None: gone)
            view.tell(told_rows(draw, view, owners, static))
        elif op == "slot":
            view.put_slot(slot_of(draw, static))
        elif op == "drop slot" and view.slots:
            view.drop_slot(draw(st.sampled_from(sorted(view.slots))))
    unit = draw(st.sampled_from([Unit.SLOTS, Unit.CPUS] if tree else list(Unit)))
    target = Target.OWNER if unit is Unit.DOMINANT else draw(st.sampled_from(list(Target)))
    amounts = {o: float(draw(st.integers(0, 6))) for o in owners[:3]}
    shares: ShareTable | ShareTree
    if tree:
        nodes = {
            "g": TreeNode("g", "", float(draw(st.integers(0, 10))), False, ("g.a", "g.b")),
            "g.a": TreeNode("g.a", "g", amounts["g.a"], False),
            "g.b": TreeNode("g.b", "g", amounts["g.b"], False),
            "h": TreeNode("h", "", float(draw(st.integers(0, 10))), False, ("h.c",)),
            "h.c": TreeNode("h.c", "h", amounts["h.c"], False),
        }
        shares = ShareTree(nodes, unit.value, ("g", "h"))
    elif unit is Unit.SLOTS:
        shares = ShareTable(amounts)
    else:
        shares = ShareTable({o: {"cpus": a, "gpus": 1.0} for o, a in amounts.items()})
    policy = PolicySettings(shares, target=target,
                            victim_order=draw(st.sampled_from(list(VictimOrder))),
                            max_vacates=draw(st.one_of(st.none(), st.integers(0, 8))), unit=unit)
    places = STATIC if static else [*STATIC, *MACHINES]
    kept = tuple(Kept(draw(st.sampled_from(owners)), draw(st.sampled_from(places)),
                      draw(st.sampled_from(SHAPES[:3])))
                 for _ in range(draw(st.integers(0, 3))))
    return view, policy, kept


def contents(view: PoolView) -> dict[str, Any]:
    """Everything a decision reads of a view, in a form that compares."""
    tallies = {
        o: (t.running, t.idle, t.vacating, t.ran, t.waiting, t.leaving, dict(t.shapes),
            {s: t.first(s) for s in t.shapes}, list(t.victims(True)), list(t.victims(False)))
        for o, t in view.tallies.items()
    }
    return {
        "jobs": view.jobs, "slots": view.slots, "tallies": tallies, "busy": dict(view.busy),
        "leaving": dict(view.leaving), "unplaced": view.unplaced, "free": view.free_static,
        "rooms": view.rooms, "open": view.open_rooms, "on_place": view.on_place,
        "whole": view.whole, "wholes": dict(view.wholes), "totals": view.totals(),
        "capacity": view.capacity, "odd static": view.odd_static, "static": view.static,
        "running on": view.running_on,
    }


@settings(max_examples=250, deadline=None)
@given(kept_pools())
def test_a_kept_view_is_the_view_of_the_pool_it_ends_with(case: Any) -> None:
    view, policy, kept = case
    kept_snapshot = view.snapshot(NOW, kept)
    plain = Snapshot(NOW, kept_snapshot.slots, kept_snapshot.jobs, kept)
    built = view_of(plain)
    assert built is not view
    assert contents(built) == contents(view)
    assert view_of(kept_snapshot) is view
    assert kept_snapshot == plain  # the view is not part of what a snapshot is

    stamp = view.stamp
    plan = decide(kept_snapshot, policy)
    assert view.stamp == stamp and contents(view) == contents(built)  # read, never changed
    assert plan == decide(plain, policy)


@settings(max_examples=300, deadline=None)
@given(kept_pools())
def test_the_naive_loop_gives_the_same_plan_on_static_pools_with_flat_shares(case: Any) -> None:
    view, policy, kept = case
    if view.rooms or any(s.parent is not None for s in view.slots.values()) \
            or not isinstance(policy.shares, ShareTable):
        return
    snapshot = Snapshot(NOW, tuple(view.slots.values()), tuple(view.jobs.values()), kept)
    assert naive_decide(snapshot, policy) == decide(snapshot, policy)


def test_a_snapshot_of_a_view_that_changed_since_is_decided_on_its_own_jobs() -> None:
    base = snap(running={"a": [0.0, 1.0, 2.0]}, idle={"b": 3})
    view = PoolView.of(base.slots, base.jobs)
    taken = view.snapshot(base.time)
    policy = PolicySettings(ShareTable({"a": 1.0, "b": 2.0}))
    before = decide(taken, policy)
    view.tell([(base.jobs[0].id, None)])  # the pool moved on: the snapshot still shows the job
    assert view_of(taken) is not view
    assert decide(taken, policy) == before == decide(base, policy)


def test_a_snapshot_shows_the_pool_as_it_was_when_taken_whenever_it_is_read() -> None:
    base = snap(running={"a": [0.0, 1.0]}, idle={"b": 2})
    view = PoolView.of(base.slots, base.jobs)
    first = view.snapshot(base.time)
    second = view.snapshot(base.time)  # taken before the first was read
    view.tell([(base.jobs[0].id, None)])
    view.put_slot(Slot("extra"))
    third = view.snapshot(base.time + 1)
    view.tell([(base.jobs[0].id, row_of(base.jobs[0]))])
    for taken in (first, second):
        assert taken.jobs == base.jobs and taken.slots == base.slots
        assert taken == Snapshot(base.time, base.slots, base.jobs)
        assert hash(taken) == hash(Snapshot(base.time, base.slots, base.jobs))
    assert third.jobs == base.jobs[1:] and third.slots == (*base.slots, Slot("extra"))
    assert view.snapshot(0.0).jobs == (*base.jobs[1:], base.jobs[0])


def test_jobs_and_slots_listed_twice_are_counted_once_and_noted() -> None:
    base = snap(running={"a": [0.0]}, idle={"b": 1})
    twice = Snapshot(base.time, base.slots * 2, base.jobs + base.jobs[:1])
    plan = decide(twice, PolicySettings(ShareTable({"a": 0.0, "b": 1.0})))
    assert plan.capacity == 1
    assert any("listed twice" in note for note in plan.notes)


def orders(view: PoolView) -> dict[str, tuple[list[JobId], list[JobId]]]:
    return {o: (list(t.victims(True)), list(t.victims(False))) for o, t in view.tallies.items()}


@pytest.mark.parametrize("seed", range(6))
def test_victim_orders_read_between_many_starts_and_finishes_are_those_of_a_built_view(seed: int
                                                                                      ) -> None:
    """Runs start (mostly later than the last) and end, on a few slots, many times over; the orders
    read now and then (and some never read for long) match a view built from the pool then."""
    rnd = random.Random(seed)
    slots = [Slot(f"s{k}") for k in range(40)]
    view = PoolView()
    for slot in slots:
        view.put_slot(slot)
    clock = 0.0
    on: dict[str, JobId] = {}
    for step in range(3000):
        clock += rnd.choice([0.0, 0.0, 1.0, 7.5])
        name = rnd.choice(slots).name
        if name in on:
            view.tell([(on.pop(name), None)])
        else:
            owner = rnd.choice("ab") if seed % 2 else "a"
            job_id = JobId(owner, step, rnd.randrange(3))
            start = clock if rnd.random() < 0.9 else rnd.uniform(0.0, clock)
            checkpoint = rnd.choice([None, None, start + 3.0, start - 1.0])
            job = Job(job_id, owner, JobState.RUNNING, slot=name, start_time=start,
                      checkpoint_time=checkpoint)
            view.tell([(job_id, row_of(job))])
            on[name] = job_id
        if rnd.random() < (0.3 if seed < 3 else 0.002):
            built = PoolView.of(view.slots.values(), view.jobs.values())
            assert orders(view) == orders(built)
    built = PoolView.of(view.slots.values(), view.jobs.values())
    assert orders(view) == orders(built)


def test_a_job_told_as_a_row_is_made_a_job_once_when_read_and_afresh_once_changed() -> None:
    view = PoolView()
    view.put_slot(Slot("s0"))
    job_id = JobId("a", 1, 0)
    view.tell([(job_id, ("a", JobState.IDLE, 5.0, None, None, None, (1, 0, 0, 0), True))])
    idle = view.jobs[job_id]
    assert idle == Job(job_id, "a", JobState.IDLE, 5.0) and view.jobs[job_id] is idle
    view.tell([(job_id, ("a", JobState.RUNNING, 5.0, "s0", 7.0, None, (1, 0, 0, 0), True))])
    running = view.jobs[job_id]
    assert running == Job(job_id, "a", JobState.RUNNING, 5.0, "s0", 7.0)
    assert view.jobs[job_id] is running and view.snapshot(10.0).jobs == (running,)
    assert list(view.tallies["a"].victims(True)) == [job_id] and view.free_static == set()
    view.tell([(job_id, None)])
    assert job_id not in view.jobs and not view.tallies and view.free_static == {"s0"}


def test_rows_told_at_once_change_only_what_changed_and_keep_a_job_read() -> None:
    view = PoolView()
    view.put_slot(Slot("s0"))
    job_id = JobId("a", 1, 0)
    idle_row: Row = ("a", JobState.IDLE, 5.0, None, None, None, (1, 0, 0, 0), True)
    view.tell([(job_id, idle_row)])
    idle = view.jobs[job_id]
    stamp = view.stamp
    view.tell([(job_id, idle_row)])  # told again as it is: nothing changes, the Job read stays
    assert view.jobs[job_id] is idle and view.stamp == stamp
    view.tell([(job_id, ("a", JobState.RUNNING, 5.0, "s0", 7.0, None, (1, 0, 0, 0), True))])
    assert view.jobs[job_id] == Job(job_id, "a", JobState.RUNNING, 5.0, "s0", 7.0)
    assert view.tallies["a"].ran == [1, 0, 0, 0] and view.tallies["a"].waiting == [0, 0, 0, 0]
    assert list(view.tallies["a"].victims(True)) == [job_id] and view.free_static == set()
    view.tell([(job_id, None), (JobId("a", 2, 0), None)])  # gone, and one it never had
    assert job_id not in view.jobs and not view.tallies and view.free_static == {"s0"}
    assert view.stamp > stamp


@pytest.mark.parametrize("told", ["row", "job"])
def test_a_static_slot_leaving_with_jobs_on_it_and_coming_back_places_them_again(told: str) -> None:
    """A static slot's running jobs are not listed by name: the view finds them when the slot
    leaves (or changes), and places them again when it is back, as a static slot or not; whether
    the view has them as rows told or as the jobs it was built from."""
    slots = [Slot("s0"), Slot("s1")]
    jobs = [Job(JobId("a", 1, n), "a", JobState.RUNNING, 0.0, "s0", 5.0 + n) for n in range(2)]
    jobs.append(Job(JobId("b", 1, 0), "b", JobState.RUNNING, 0.0, "s1", 4.0))
    if told == "row":
        view = PoolView()
        for slot in slots:
            view.put_slot(slot)
        view.tell([(job.id, row_of(job)) for job in jobs])
    else:
        view = PoolView.of(slots, jobs)

    def same() -> None:
        assert contents(view) == contents(PoolView.of(view.slots.values(), view.jobs.values()))

    same()
    view.drop_slot("s0")  # its two jobs are unplaced, s1's job stays
    assert (view.unplaced, dict(view.busy), list(view.tallies["a"].victims(True))) == (2, {"s1": 1}, [])
    same()
    view.put_slot(Slot("s0", cpus=2))  # back, changed
    assert (view.unplaced, view.busy["s0"], view.free_static) == (0, 2, set())
    same()
    view.put_slot(Slot("s0", cpus=2, partitionable=True))  # no longer static
    same()
    view.put_slot(Slot("s0"))  # static again
    view.tell([(jobs[0].id, None)])
    view.tell([(jobs[1].id, None)])
    assert (view.unplaced, dict(view.busy), view.free_static) == (0, {"s1": 1}, {"s0"})
    same()


def test_new_idle_jobs_told_as_rows_are_the_idle_jobs_of_a_view_built_from_them() -> None:
    arrived = PoolView()
    jobs = []
    for n, shape in enumerate([(1, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 0), (1, 0, 0, 0)]):
        job_id = JobId("a", 1, 10 - n)
        jobs.append(Job(job_id, "a", JobState.IDLE, float(n), cpus=shape[0]))
        arrived.tell([(job_id, ("a", JobState.IDLE, float(n), None, None, None, shape, True))])
    told = PoolView.of((), jobs)
    # one it has: changed, not added
    arrived.tell([(JobId("a", 1, 10), ("a", JobState.IDLE, 0.0, None, None, None, (1, 0, 0, 0), True))])
    tally, other = told.tallies["a"], arrived.tallies["a"]
    assert (other.idle, other.waiting, other.shapes) == (tally.idle, tally.waiting, tally.shapes) == (
        4, [5, 0, 0, 0], {(1, 0, 0, 0): 3, (2, 0, 0, 0): 1})
    assert other.first((1, 0, 0, 0)) == tally.first((1, 0, 0, 0)) == JobId("a", 1, 7)
    assert other.first((2, 0, 0, 0)) == JobId("a", 1, 8)
    assert dict(arrived.jobs) == dict(told.jobs)


def test_idle_jobs_counted_per_shape_give_a_decision_what_telling_them_one_by_one_gives() -> None:
    """A pool may count its idle jobs per owner and shape (PoolView.count_idle) instead of telling
    each: the decision reads the same counts, sums and first jobs, and makes the same plan."""
    rng = random.Random(11)
    slots = [Slot(name, cpus=4, memory=4096, gpus=1) for name in STATIC]  # every shape fits
    jobs: list[Job] = []
    for _ in range(40):
        owner = rng.choice(FLAT)
        shape = rng.choice(SHAPES)
        jobs.append(Job(JobId(owner, 1, rng.randrange(1000)), owner, JobState.IDLE, 0.0,
                        cpus=shape[0], memory=shape[1], gpus=shape[2], disk=shape[3]))
    for n, name in enumerate(STATIC):  # every static slot busy, "a" and "b" over their share
        owner = "ab"[n % 2]
        jobs.append(Job(JobId(owner, 2, n), owner, JobState.RUNNING, 0.0, name, 100.0 * n))
    jobs = list({j.id: j for j in jobs}.values())
    one_by_one, counted = PoolView(), PoolView()
    for view in (one_by_one, counted):
        for slot in slots:
            view.put_slot(slot)
    one_by_one.tell([(j.id, row_of(j)) for j in jobs])
    counted.tell([(j.id, row_of(j)) for j in jobs if j.state is not JobState.IDLE])
    idle = [j for j in jobs if j.state is JobState.IDLE]

    def first_of(owner: str) -> Any:
        def first(shape: Any) -> JobId:
            return min(j.id for j in idle if j.owner == owner and j.shape == shape)
        return first

    for owner in FLAT:
        counts: dict[Any, int] = {}
        for j in idle:
            if j.owner == owner:
                counts[j.shape] = counts.get(j.shape, 0) + 1
        counted.count_idle(owner, counts, first_of(owner))
    assert set(counted.tallies) == set(one_by_one.tallies)
    for owner, tally in one_by_one.tallies.items():
        other = counted.tallies[owner]
        assert (other.idle, other.waiting, other.shapes) == (tally.idle, tally.waiting, tally.shapes)
        assert {s: other.first(s) for s in other.shapes} == {s: tally.first(s) for s in tally.shapes}
    assert not any(j.state is JobState.IDLE for j in counted.jobs.values())
    settings = PolicySettings(ShareTable(dict.fromkeys(FLAT, 1.0)), max_vacates=5)
    plan, same = decide(one_by_one.snapshot(NOW), settings), decide(counted.snapshot(NOW), settings)
    assert plan.vacates and (plan.vacates, plan.claims, plan.holds, plan.owners) == (
        same.vacates, same.claims, same.holds, same.owners)
    # An owner whose counts fall to nothing, with nothing running, is no longer counted at all.
    counted.count_idle("c", {}, first_of("c"))
    assert "c" not in counted.tallies
    stamp = counted.stamp
    counted.count_idle("c", {}, first_of("c"))  # nothing to say: no change
    assert counted.stamp == stamp and "c" not in counted.tallies
    # An owner whose idle jobs were told one by one cannot have them counted as well.
    with pytest.raises(AssertionError):
        one_by_one.count_idle("a", {(1, 0, 0, 0): 1}, first_of("a"))


def test_the_free_static_slots_cores_are_counted_as_they_are_with_slots_of_other_than_one_core(
) -> None:
    view = PoolView()
    for name, cpus in [("s0", 1), ("s1", 4), ("s2", 0), ("s3", 1)]:
        view.put_slot(Slot(name, cpus=cpus))
    view.put_slot(Slot("m", cpus=8, partitionable=True))
    shares = ShareTable({"a": 1.0})
    assert view.odd_static == 2
    assert count_view(view, (), shares, Target.FEASIBLE).free_cpus == 6 + 8
    view.drop_slot("s1")
    view.drop_slot("s2")
    assert view.odd_static == 0 and PoolView.of(view.slots.values(), ()).odd_static == 0
    assert count_view(view, (), shares, Target.FEASIBLE).free_cpus == 2 + 8

"""Making room on partitionable slots, and shares in resources: table tests of the decision."""

from __future__ import annotations

from collections import Counter

import pytest

from builders import machines, shape
from osep.core.model import Job, JobId, JobState, Kept, Slot, Snapshot
from osep.core.plan import Target
from osep.core.policy import PolicySettings, decide
from osep.core.resources import Unit
from osep.core.shares import ShareTable

CORE = (1, 128, 0)
GPU_JOB = (1, 1024, 1)
NOW = 10_000.0


def cores(shares, p=None, target=Target.OWNER, unit=Unit.CPUS):
    table = {o: ({"cpus": s} if not isinstance(s, dict) else s) for o, s in shares.items()}
    return PolicySettings(ShareTable(table), target=target, max_vacates=p, unit=unit)


def four_machines_full_of_a(starts=None):
    """4 partitionable slots of 5 cores, every core running a one-core job of a (which owns none);
    b owns 10 cores and wants one 4-core job."""
    layout = {f"m{k}": (5, 5 * 1024, 0) for k in range(4)}
    running = []
    for k in range(4):
        for n in range(5):
            start = starts[k][n] if starts else NOW - 100 * (k + 1) - n
            running.append(("a", f"m{k}", CORE, start))
    return machines(layout, running, idle=[("b", (4, 1024, 0))])


def test_a_four_core_job_gets_room_from_the_fewest_jobs_on_one_machine():
    snapshot = four_machines_full_of_a()
    plan = decide(snapshot, cores({"b": 10}))
    assert len(plan.vacates) == 4
    places = {v.place for v in plan.vacates}
    assert len(places) == 1 and {v.group for v in plan.vacates} == {0}
    # Every machine needs four; m0's four youngest jobs have run least in all.
    assert places == {"m0"}
    slots = {s.name: s for s in snapshot.slots}
    assert all(slots[v.slot].parent == "m0" for v in plan.vacates)
    assert all(v.room == shape((4, 1024, 0)) and v.beneficiary == "b" for v in plan.vacates)
    jobs = {j.id: j for j in snapshot.jobs}
    vacated = sorted(jobs[v.job].start_time or 0 for v in plan.vacates)
    on_m0 = sorted(j.start_time or 0 for j in snapshot.jobs if j.slot and j.slot.startswith("m0_"))
    assert vacated == on_m0[1:]  # the four youngest there; the oldest keeps running


def test_the_free_part_of_a_room_being_made_is_nobody_s_allowance():
    """One machine of 8 cores: s (no share) runs 3 one-core jobs and has more queued, 5 cores are
    free, and b (2 cores below target) wants one 8-core job. The plan vacates s's 3 jobs for the
    room; the 5 free cores are part of that room, so s is held with no allowance: had it been given
    them (b's gap is only 2), b's room would never be whole and the vacates would come again at
    every cycle (the NASA iPSC trace at --compress 2 stuck this way)."""
    running = [("s", "m0", CORE, NOW - 100 - k) for k in range(3)]
    snapshot = machines({"m0": (8, 8 * 1024, 0)}, running,
                        idle=[("b", (8, 1024, 0)), *[("s", CORE) for _ in range(10)]])
    plan = decide(snapshot, cores({"b": 2, "c": 6}, p=4))
    assert len(plan.vacates) == 3 and {v.beneficiary for v in plan.vacates} == {"b"}
    assert plan.holds == {"s": 0}
    # With no room made (p too low for three vacates), s may have the free cores beyond b's gap.
    assert decide(snapshot, cores({"b": 2, "c": 6}, p=2)).holds == {"s": 3}


def test_where_the_youngest_jobs_are_decides_the_machine():
    starts = [[NOW - 500] * 5, [NOW - 500] * 5, [NOW - 10] * 5, [NOW - 500] * 5]
    plan = decide(four_machines_full_of_a(starts), cores({"b": 10}))
    assert {v.place for v in plan.vacates} == {"m2"} and len(plan.vacates) == 4


def test_one_big_victim_is_preferred_to_several_small_ones():
    snapshot = machines(
        {"m0": (5, 5120, 0), "m1": (5, 5120, 0)},
        [("a", "m0", (4, 1024, 0), NOW - 5000), ("a", "m0", CORE, NOW - 1),
         *[("a", "m1", CORE, NOW - 2) for _ in range(5)]],
        idle=[("b", (4, 1024, 0))],
    )
    plan = decide(snapshot, cores({"b": 5}))
    assert len(plan.vacates) == 1 and plan.vacates[0].place == "m0"
    assert plan.vacates[0].slot == "m0_0"


def test_free_cores_on_the_machine_count_towards_the_room():
    snapshot = machines(
        {"m0": (5, 5120, 0), "m1": (5, 5120, 0)},
        [*[("a", "m0", CORE, NOW - 10 * n) for n in range(3)],
         *[("a", "m1", CORE, NOW - 1) for _ in range(5)]],
        idle=[("b", (4, 1024, 0))],
    )
    plan = decide(snapshot, cores({"b": 5}))
    # m0 has 2 cores free: two of its jobs make room, against four on m1.
    assert len(plan.vacates) == 2 and {v.place for v in plan.vacates} == {"m0"}


def test_victims_the_room_does_not_need_are_dropped():
    # c is furthest over, so its job is tried first; the room needs only a's two 2-core jobs.
    snapshot = machines(
        {"m0": (5, 5120, 0)},
        [("c", "m0", CORE, NOW - 1), ("a", "m0", (2, 256, 0), NOW - 50),
         ("a", "m0", (2, 256, 0), NOW - 60)],
        idle=[("b", (4, 512, 0))],
    )
    plan = decide(snapshot, cores({"b": 4, "a": 0, "c": 0}))
    assert sorted(v.slot for v in plan.vacates) == ["m0_1", "m0_2"]


def test_no_victim_owner_is_pushed_below_its_target():
    # a owns 3 cores and runs 5: it can give up 2, but b's job needs 4.
    snapshot = machines({"m0": (5, 5120, 0)}, [("a", "m0", CORE, NOW - 1) for _ in range(5)],
                        idle=[("b", (4, 512, 0))])
    assert decide(snapshot, cores({"a": 3, "b": 2})).vacates == ()
    # Owning 1, it can give up all four.
    plan = decide(snapshot, cores({"a": 1, "b": 4}))
    assert len(plan.vacates) == 4


def test_p_counts_vacated_jobs_and_a_set_larger_than_what_is_left_is_not_taken():
    snapshot = four_machines_full_of_a()
    assert decide(snapshot, cores({"b": 10}, p=3)).vacates == ()
    assert len(decide(snapshot, cores({"b": 10}, p=4)).vacates) == 4


def test_a_job_that_fits_no_machine_is_never_vacated_for_and_the_plan_says_so():
    snapshot = machines({"m0": (10, 10240, 0)}, [("a", "m0", CORE, NOW - 1) for _ in range(10)],
                        idle=[("b", (16, 1024, 0))])
    plan = decide(snapshot, cores({"b": 10}))
    assert plan.vacates == ()
    assert any("16 cpus" in n and "fit no place" in n for n in plan.notes)


def test_free_room_on_a_partitionable_slot_is_claimed_job_by_job():
    snapshot = machines({"m0": (10, 10240, 0)}, [("a", "m0", CORE, NOW - 1) for _ in range(4)],
                        idle=[("b", (4, 1024, 0)), ("b", (4, 1024, 0)), ("b", (4, 1024, 0))])
    plan = decide(snapshot, cores({"b": 10}))
    assert [(c.slot, c.shape) for c in plan.claims] == [("m0", shape((4, 1024, 0)))]
    assert plan.vacates[0].room == shape((4, 1024, 0))  # 6 free: one claim, then 2 free + 2 vacated


def test_room_kept_for_an_owner_counts_as_its_own_and_is_not_made_twice():
    first = four_machines_full_of_a()
    plan = decide(first, cores({"b": 10}))
    assert len(plan.vacates) == 4
    # Next cycle: the four jobs are leaving and the room on m0 is kept for b.
    leaving = {v.job for v in plan.vacates}
    jobs = tuple(j if j.id not in leaving else Job(j.id, j.owner, JobState.VACATING, slot=j.slot,
                                                   start_time=j.start_time, cpus=1, memory=128)
                 for j in first.jobs)
    second = Snapshot(NOW + 60, first.slots, jobs, (Kept("b", "m0", shape((4, 1024, 0))),))
    again = decide(second, cores({"b": 10}))
    assert again.vacates == () and again.claims == ()
    assert next(v for v in again.owners if v.owner == "b").active == 4


def test_a_gpu_share_is_reclaimed_under_the_dominant_unit():
    # a and b each own 10 cores and 2 GPUs; a runs a job on each of the 4 GPUs.
    layout = {"m0": (10, 10240, 2), "m1": (10, 10240, 2)}
    running = [("a", f"m{k // 2}", GPU_JOB, NOW - 100 * (k + 1)) for k in range(4)]
    snapshot = machines(layout, running, idle=[("b", GPU_JOB), ("b", GPU_JOB)])
    shares = {"a": {"cpus": 10, "gpus": 2}, "b": {"cpus": 10, "gpus": 2}}
    plan = decide(snapshot, cores(shares, unit=Unit.DOMINANT))
    views = {v.owner: v for v in plan.owners}
    assert views["a"].active == 2.0 and views["b"].active == 0.0  # a holds twice its GPU share
    assert len(plan.vacates) == 2 and all(v.room == shape(GPU_JOB) for v in plan.vacates)
    # By cores alone a is far below its share, and nothing would be vacated.
    assert decide(snapshot, cores({"a": 10, "b": 10})).vacates == ()


def test_a_resource_a_share_names_as_zero_counts_for_the_owner():
    # a owns 5 cores and runs 4 one-core jobs and a GPU job; only b owns the GPU.
    layout = {"m0": (10, 10240, 1)}
    running = [("a", "m0", GPU_JOB, NOW - 1), *[("a", "m0", CORE, NOW - 1) for _ in range(4)]]
    snapshot = machines(layout, running, idle=[("b", GPU_JOB)])

    def a_holds(shares):
        plan = decide(snapshot, cores(shares, unit=Unit.DOMINANT))
        return next(v.active for v in plan.owners if v.owner == "a"), plan

    # Not naming GPUs, a is held to its cores alone: 5 of 5, exactly its share.
    active, plan = a_holds({"a": {"cpus": 5}, "b": {"cpus": 5, "gpus": 1}})
    assert active == 1.0 and plan.vacates == ()
    # Naming them with 0, any GPU it uses is over share; but vacating its GPU job would leave it
    # 4 cores of its 5, below target, so that is still not done.
    active, plan = a_holds({"a": {"cpus": 5, "gpus": 0}, "b": {"cpus": 5, "gpus": 1}})
    assert active == float("inf") and plan.vacates == ()
    # With a fifth core of its own running, the GPU job goes to b.
    fuller = machines(layout, [*running, ("a", "m0", CORE, NOW - 1)], idle=[("b", GPU_JOB)])
    plan = decide(fuller, cores({"a": {"cpus": 5, "gpus": 0}, "b": {"cpus": 5, "gpus": 1}},
                                unit=Unit.DOMINANT))
    assert [v.slot for v in plan.vacates] == ["m0_0"]


GIB = 1024 * 1024  # KiB


def test_room_is_made_in_disk_too():
    # One machine of 8 cores and 100 GiB of disk: a runs 4 one-core jobs writing 20 GiB each and
    # 2 that write nothing; 4 cores are free but only 20 GiB. b's job needs 2 cores and 50 GiB.
    layout = {"m0": (8, 8192, 0, 100 * GIB)}
    running = [*(("a", "m0", (1, 128, 0, 20 * GIB), NOW - 10 * (k + 1)) for k in range(4)),
               *(("a", "m0", (1, 128, 0), NOW - 1) for _ in range(2))]
    snapshot = machines(layout, running, idle=[("b", (2, 512, 0, 50 * GIB))])
    plan = decide(snapshot, cores({"b": 4}))
    # Cores alone would need nothing vacated; the disk needs two of the 20 GiB jobs (the two
    # youngest of them), and no job that holds no disk is touched.
    assert sorted(v.slot for v in plan.vacates) == ["m0_0", "m0_1"]
    assert all(v.room == (2, 512, 0, 50 * GIB) for v in plan.vacates)
    # A machine that does not say what disk it has fits any request, as before.
    blind = machines({"m0": (8, 8192, 0)}, running, idle=[("b", (2, 512, 0, 50 * GIB))])
    plan = decide(blind, cores({"b": 4}))
    assert plan.vacates == () and [c.slot for c in plan.claims] == ["m0"]


def test_shares_in_disk():
    # Under unit = "disk", a holds 80 GiB with a share of 40; b owns 60 GiB and waits for 30.
    layout = {"m0": (8, 8192, 0, 100 * GIB)}
    running = [("a", "m0", (1, 128, 0, 20 * GIB), NOW - 10 * (k + 1)) for k in range(4)]
    snapshot = machines(layout, running, idle=[("b", (1, 128, 0, 30 * GIB))])
    settings = cores({"a": {"disk": 40 * GIB}, "b": {"disk": 60 * GIB}}, unit=Unit.DISK)
    plan = decide(snapshot, settings)
    views = {v.owner: v for v in plan.owners}
    assert views["a"].active == 80 * GIB and views["b"].share == 60 * GIB
    # 20 GiB are free: one of a's jobs makes room for b's 30 GiB (a stays at its 60 >= 40).
    assert [v.slot for v in plan.vacates] == ["m0_0"] and plan.unit is Unit.DISK
    # Under dominant, with cores named beside disk, a is over by its disk (twice its share).
    dominant = {"a": {"cpus": 4, "disk": 40 * GIB}, "b": {"cpus": 4, "disk": 60 * GIB}}
    plan = decide(snapshot, cores(dominant, unit=Unit.DOMINANT))
    assert [v.slot for v in plan.vacates] == ["m0_0"]


@pytest.mark.parametrize("unit, victim", [(Unit.SLOTS, "b"), (Unit.CPUS, "a")])
def test_the_unit_decides_who_is_over_share(unit, victim):
    # a runs two 4-core jobs, b six one-core jobs; everyone owns 2 (slots, or cores); c waits.
    slots = tuple(Slot(f"s{k}", cpus=4 if k < 2 else 1) for k in range(8))
    jobs = (*(Job(JobId("a", 0, k), "a", JobState.RUNNING, slot=f"s{k}", start_time=0.0, cpus=4)
              for k in range(2)),
            *(Job(JobId("b", 0, k), "b", JobState.RUNNING, slot=f"s{k + 2}", start_time=0.0)
              for k in range(6)),
            Job(JobId("c", 1, 0), "c", JobState.IDLE))
    shares = {"a": 2, "b": 2, "c": 2}
    table = ShareTable(shares) if unit is Unit.SLOTS else ShareTable({o: {"cpus": v} for o, v in shares.items()})
    plan = decide(Snapshot(NOW, slots, jobs), PolicySettings(table, unit=unit))
    # In slots a holds its share (2 jobs) and b three times its own; in cores a holds four times.
    assert [v.owner for v in plan.vacates] == [victim]


def perfect_negotiator(snapshot: Snapshot, plan) -> Snapshot:
    """What the next snapshot looks like if every vacate completes at once and every room made or
    claimed goes to its beneficiary (a one-core idle job of it starts there)."""
    slots = {s.name: s for s in snapshot.slots}
    jobs = {j.id: j for j in snapshot.jobs}
    for v in plan.vacates:
        job = jobs[v.job]
        slot = slots.pop(job.slot)
        parent = slots[slot.parent]
        slots[parent.name] = Slot(parent.name, parent.cpus + slot.cpus, parent.memory + slot.memory,
                                  parent.gpus, partitionable=True)
        jobs[v.job] = Job(job.id, job.owner, JobState.IDLE, cpus=job.cpus, memory=job.memory)
    rooms = [(v.place, v.beneficiary) for v in plan.vacates if v.job == min(
        w.job for w in plan.vacates if w.group == v.group)] + [(c.slot, c.beneficiary) for c in plan.claims]
    serial = Counter()
    for place, owner in rooms:
        idle = min((j for j in jobs.values() if j.owner == owner and j.state is JobState.IDLE),
                   key=lambda j: j.id, default=None)
        if idle is None:
            continue
        parent = slots[place]
        serial[place] += 1
        name = f"{place}_new{snapshot.time:.0f}_{serial[place]}"
        slots[name] = Slot(name, idle.cpus, idle.memory, 0, parent=place)
        slots[place] = Slot(place, parent.cpus - idle.cpus, parent.memory - idle.memory, parent.gpus,
                            partitionable=True)
        jobs[idle.id] = Job(idle.id, owner, JobState.RUNNING, slot=name, start_time=snapshot.time,
                            cpus=idle.cpus, memory=idle.memory)
    return Snapshot(snapshot.time + 300, tuple(slots.values()), tuple(jobs.values()))


@pytest.mark.parametrize("target", list(Target))
def test_fractional_shares_settle_without_ping_pong(target):
    # 3 machines of 7 cores; shares of 10.5, 6.25 and 4.25 cores; everyone wants more than that.
    layout = {f"m{k}": (7, 7 * 1024, 0) for k in range(3)}
    running = [("a", f"m{k % 3}", CORE, NOW - 1000 - k) for k in range(21)]
    idle = [(o, CORE) for o in ("a", "b", "c") for _ in range(15)]
    snapshot = machines(layout, running, idle)
    policy = cores({"a": 10.5, "b": 6.25, "c": 4.25}, target=target)
    victims_of: dict[str, set[int]] = {"a": set(), "b": set(), "c": set()}
    gained: dict[str, set[int]] = {"a": set(), "b": set(), "c": set()}
    history = []
    for cycle in range(12):
        plan = decide(snapshot, policy)
        history.append(len(plan.vacates))
        for v in plan.vacates:
            victims_of[v.owner].add(cycle)
            gained[v.beneficiary].add(cycle)
        snapshot = perfect_negotiator(snapshot, plan)
    assert sum(history) > 0 and history[-6:] == [0] * 6
    for owner, lost in victims_of.items():  # nobody who lost jobs was later given them back
        assert not lost or not gained[owner] or max(gained[owner]) < min(lost)
    held = Counter(j.owner for j in snapshot.jobs if j.state is JobState.RUNNING)
    assert held["b"] >= 6 and held["c"] >= 4 and held["a"] >= 10


def test_a_dominant_share_in_a_resource_the_pool_lacks_is_not_weighed():
    # Memory is not modelled on these slots: a share in it must not make anyone infinitely over.
    slots = tuple(Slot(f"s{k}") for k in range(4))
    jobs = (*(Job(JobId("b", 0, k), "b", JobState.RUNNING, slot=f"s{k}", start_time=0.0, memory=100)
              for k in range(4)),
            *(Job(JobId("a", 1, k), "a", JobState.IDLE, memory=100) for k in range(4)))
    shares = {"a": {"cpus": 2, "memory": 2000}, "b": {"cpus": 2, "memory": 2000}}
    plan = decide(Snapshot(NOW, slots, jobs), cores(shares, p=10, unit=Unit.DOMINANT))
    views = {v.owner: v for v in plan.owners}
    assert views["b"].active == 2.0 and views["a"].active == 0.0
    assert len(plan.vacates) == 2  # b down to its 2 cores, a up to its 2


def test_a_job_that_asks_for_no_cores_takes_free_room_without_a_vacate():
    snapshot = machines({"m0": (2, 2048, 0)}, [("a", "m0", (1, 512, 0), 0.0)] * 2,
                        idle=[("b", (0, 512, 0))])
    plan = decide(snapshot, cores({"a": 1, "b": 1}, p=2))
    assert plan.vacates == () and [(c.slot, c.beneficiary) for c in plan.claims] == [("m0", "b")]

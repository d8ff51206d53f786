"""Table-driven tests of the decision core: each row is a pool sketched by hand and the plan expected."""

from __future__ import annotations

import pytest

from builders import jid, name, snap
from osep.core.model import Job, JobState, Kept, Slot, Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.shares import ShareTable


def settings(shares, **kw) -> PolicySettings:
    return PolicySettings(shares=ShareTable(shares), **kw)


CASES = [
    pytest.param(
        # The paper's example: u1 fills 10 nodes, u2 arrives with 10 jobs, shares 5/5. One cycle
        # with p = largest share vacates u1's 5 most recently started jobs, all for u2.
        snap(running={"u1": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}, idle={"u2": 10}),
        settings({"u1": 5, "u2": 5}),
        [("u1.9", "u2"), ("u1.8", "u2"), ("u1.7", "u2"), ("u1.6", "u2"), ("u1.5", "u2")],
        0,
        id="paper-10-node-example",
    ),
    pytest.param(snap(), settings({}), [], 0, id="empty-pool"),
    pytest.param(
        snap(running={"a": [0] * 4}, idle={"b": 3}), settings({}), [], 0, id="no-owners-configured"
    ),
    pytest.param(
        # Nobody owns anything: under the paper's owner target nobody is owed a slot.
        snap(running={"a": [0] * 10}, idle={"b": 10}),
        settings({"a": 0, "b": 0}),
        [],
        0,
        id="zero-shares-owner-target",
    ),
    pytest.param(
        # ... while the feasible target splits the pool between the two demands. (p is given: its
        # default, the largest share, is 0 here.)
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}, idle={"b": 10}),
        settings({"a": 0, "b": 0}, target=Target.FEASIBLE, max_vacates=10),
        [("a.9", "b"), ("a.8", "b"), ("a.7", "b"), ("a.6", "b"), ("a.5", "b")],
        0,
        id="zero-shares-feasible-target",
    ),
    pytest.param(
        # b wants less than its share and has nothing queued: a may keep the excess.
        snap(running={"a": [0] * 8, "b": [0] * 2}),
        settings({"a": 5, "b": 5}),
        [],
        0,
        id="demand-below-share-nothing-idle",
    ),
    pytest.param(
        # b is owed 3 more but queues only one job: one vacate, not three.
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7], "b": [0, 0]}, idle={"b": 1}),
        settings({"a": 5, "b": 5}),
        [("a.7", "b")],
        0,
        id="demand-below-share-one-idle",
    ),
    pytest.param(
        # Equal start times: ties go by job id, owners by name; the plan is the same every time.
        snap(running={"a": [5, 5, 5], "c": [5, 5, 5]}, idle={"b": 2}),
        settings({"a": 1, "b": 4, "c": 1}),
        [("a.0", "b"), ("c.0", "b")],
        0,
        id="ties-deterministic",
    ),
    pytest.param(
        # b's jobs need 4 cpus; a's slots have 1: vacating would free nothing b could use.
        snap(running={"a": [0] * 10}, idle={"b": 5}, idle_cpus=4),
        settings({"a": 5, "b": 5}),
        [],
        0,
        id="idle-jobs-cannot-use-freed-slot",
    ),
    pytest.param(
        snap(running={"a": [0] * 10}, idle={"b": 5}),
        settings({"a": 5, "b": 5}, max_vacates=0),
        [],
        0,
        id="p-zero",
    ),
    pytest.param(
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}, idle={"b": 5}),
        settings({"a": 5, "b": 5}, max_vacates=3),
        [("a.9", "b"), ("a.8", "b"), ("a.7", "b")],
        0,
        id="p-caps-the-cycle",
    ),
    pytest.param(
        # Most over target first: a (-3), then a and c alternate by gap, ties by name.
        snap(running={"a": [0] * 8, "c": [0] * 2}, idle={"b": 5}),
        settings({"a": 5, "b": 5}),
        [("a.0", "b"), ("a.1", "b"), ("c.0", "b"), ("a.2", "b"), ("c.1", "b")],
        0,
        id="non-owner-and-over-owner",
    ),
    pytest.param(
        # Two free slots go to b first, without touching anyone; then 3 vacates close the gap.
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7]}, idle={"b": 5}, free=2),
        settings({"a": 5, "b": 5}),
        [("a.7", "b"), ("a.6", "b"), ("a.5", "b")],
        2,
        id="free-slots-claimed-first",
    ),
    pytest.param(
        # a holds 6 of target 5 and 4 slots are free: claims cover most, and only one vacate is
        # allowed because a second would push a below its target.
        snap(running={"a": [0, 1, 2, 3, 4, 5]}, idle={"b": 10}, free=4),
        settings({"a": 5, "b": 5}),
        [("a.5", "b")],
        4,
        id="victim-never-below-target",
    ),
    pytest.param(
        # Owner target: b is held to 4, so 2 claims + 2 vacates. Feasible target: the spare 2 of c's
        # share are split between a and b (5 each), so b gets one vacate more.
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7]}, idle={"b": 8}, free=2),
        settings({"a": 4, "b": 4, "c": 2}),
        [("a.7", "b"), ("a.6", "b")],
        2,
        id="owner-target",
    ),
    pytest.param(
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7]}, idle={"b": 8}, free=2),
        settings({"a": 4, "b": 4, "c": 2}, target=Target.FEASIBLE),
        [("a.7", "b"), ("a.6", "b"), ("a.5", "b")],
        2,
        id="feasible-target",
    ),
    pytest.param(
        # Two beneficiaries: the one furthest below target is served first; once b is down to c's
        # gap (3 = 3) the tie goes to b by name, then c is furthest below.
        snap(running={"a": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}, idle={"b": 5, "c": 5}),
        settings({"a": 2, "b": 5, "c": 3}, max_vacates=4),
        [("a.9", "b"), ("a.8", "b"), ("a.7", "b"), ("a.6", "c")],
        0,
        id="largest-deficit-first",
    ),
]


@pytest.mark.parametrize("snapshot, policy, vacates, claims", CASES)
def test_decide(snapshot, policy, vacates, claims):
    plan = decide(snapshot, policy)
    assert [(name(v.job), v.beneficiary) for v in plan.vacates] == vacates
    assert len(plan.claims) == claims
    assert len(plan.vacates) <= plan.max_vacates


def test_default_p_is_largest_share():
    plan = decide(snap(running={"a": [0] * 20}, idle={"b": 20}), settings({"a": 8, "b": 12}))
    assert plan.max_vacates == 12
    assert len(plan.vacates) == 12


def test_reservations_in_flight_prevent_double_vacates():
    """Jobs already being vacated for b, with their slots reserved for b, count as b's: the next
    cycle must not vacate again for the same deficit."""
    slots = tuple(Slot(f"s{k}") for k in range(10))
    kept = tuple(Kept("b", f"s{k}", (1, 0, 0, 0)) for k in range(5))
    jobs = tuple(
        Job(jid(f"a.{k}"), "a", JobState.VACATING if k < 5 else JobState.RUNNING, slot=f"s{k}",
            start_time=float(k))
        for k in range(10)
    ) + tuple(Job(jid(f"b.{k}"), "b", JobState.IDLE) for k in range(10))
    plan = decide(Snapshot(1000.0, slots, jobs, kept), settings({"a": 5, "b": 5}))
    assert plan.vacates == ()
    b = next(v for v in plan.owners if v.owner == "b")
    assert (b.reserved, b.active, b.gap) == (5, 5, 0)
    a = next(v for v in plan.owners if v.owner == "a")
    assert (a.running, a.vacating, a.demand) == (5, 5, 10)


def test_stale_reservation_for_owner_without_idle_jobs_does_not_count():
    slots = (Slot("s0"), Slot("s1"))
    jobs = (Job(jid("a.0"), "a", JobState.RUNNING, slot="s1", start_time=0.0),)
    plan = decide(Snapshot(100.0, slots, jobs, (Kept("b", "s0", (1, 0, 0, 0)),)),
                  settings({"a": 1, "b": 1}))
    b = next(v for v in plan.owners if v.owner == "b")
    assert b.reserved == 0


def test_lost_work_order_prefers_the_recent_checkpoint():
    slots = tuple(Slot(f"s{k}") for k in range(3))
    jobs = (
        # Started long ago but checkpointed a minute ago: little to lose.
        Job(jid("a.0"), "a", JobState.RUNNING, slot="s0", start_time=0.0, checkpoint_time=940.0),
        # Started recently, never checkpointed: the paper's wall clock rule would take this one.
        Job(jid("a.1"), "a", JobState.RUNNING, slot="s1", start_time=800.0),
        Job(jid("a.2"), "a", JobState.RUNNING, slot="s2", start_time=500.0),
        Job(jid("b.0"), "b", JobState.IDLE),
    )
    snapshot = Snapshot(1000.0, slots, jobs)
    by_wall = decide(snapshot, settings({"a": 1, "b": 2}, max_vacates=1))
    by_loss = decide(
        snapshot, settings({"a": 1, "b": 2}, max_vacates=1, victim_order=VictimOrder.LOST_WORK)
    )
    assert [name(v.job) for v in by_wall.vacates] == ["a.1"]
    assert [name(v.job) for v in by_loss.vacates] == ["a.0"]
    assert by_loss.vacates[0].lost_work == 60.0
    assert by_loss.vacates[0].run_time == 1000.0


def test_running_job_on_unknown_slot_is_never_a_victim():
    slots = (Slot("s0"),)
    jobs = (
        Job(jid("a.0"), "a", JobState.RUNNING, slot="elsewhere", start_time=0.0),
        Job(jid("a.1"), "a", JobState.RUNNING, slot="s0", start_time=0.0),
        Job(jid("b.0"), "b", JobState.IDLE),
    )
    plan = decide(Snapshot(10.0, slots, jobs), settings({"b": 1}))
    assert [name(v.job) for v in plan.vacates] == ["a.1"]
    assert any("missing from the snapshot" in n for n in plan.notes)


def test_every_vacate_says_why():
    plan = decide(snap(running={"u1": [0, 1]}, idle={"u2": 1}, now=100.0), settings({"u1": 1, "u2": 1}))
    (vacate,) = plan.vacates
    assert vacate.reason.beneficiary_target == 1 and vacate.reason.beneficiary_active == 0
    assert vacate.reason.victim_target == 1 and vacate.reason.victim_active == 2
    assert vacate.run_time == 99.0 and vacate.start_time == 1.0
    assert "lowest wallclock" in vacate.reason.text()


def test_held_jobs_are_not_demand():
    jobs = (
        Job(jid("a.0"), "a", JobState.RUNNING, slot="s0", start_time=0.0),
        Job(jid("b.0"), "b", JobState.HELD),
    )
    plan = decide(Snapshot(10.0, (Slot("s0"),), jobs), settings({"a": 0, "b": 1}))
    assert plan.vacates == ()
    assert next(v for v in plan.owners if v.owner == "b").demand == 0


def test_percent_shares_resolve_against_the_snapshot():
    plan = decide(snap(running={"a": [0] * 20}, idle={"b": 20}),
                  PolicySettings(ShareTable({"a": 60, "b": 40}, percent=True)))
    assert {v.owner: v.share for v in plan.owners} == {"a": 12.0, "b": 8.0}
    assert len(plan.vacates) == 8


@pytest.mark.parametrize(
    "snapshot, shares, holds",
    [
        # b waits below target: a (losing jobs to the vacates) and non-owner c (idle jobs) are held.
        # No slot is free, so neither may grow.
        (snap(running={"a": [0] * 8, "c": [0, 0]}, idle={"b": 2, "c": 3}), {"a": 5, "b": 5},
         {"a": 0, "c": 0}),
        # Nobody below target waits: nothing is held, idle capacity is open to all.
        (snap(running={"a": [0] * 8}, idle={"a": 5}, free=2), {"a": 5, "b": 5}, {}),
        # b is below target but has nothing queued: nobody is held.
        (snap(running={"a": [0] * 8, "b": [0]}, idle={"a": 1}), {"a": 5, "b": 5}, {}),
        # b waits with 1 job and 4 slots are free: the 3 that b cannot use stay open to a.
        (snap(running={"a": [0] * 5}, idle={"a": 3, "b": 1}, free=4), {"a": 5, "b": 5}, {"a": 3}),
        # ...split evenly between the held owners, none given more than it has queued.
        (snap(running={"a": [0] * 5, "c": [0]}, idle={"a": 9, "b": 1, "c": 1}, free=6),
         {"a": 5, "b": 5}, {"a": 4, "c": 1}),
        # b's reserved slots are not running yet: b still counts as waiting, a stays held.
        (Snapshot(0.0, tuple(Slot(f"s{k}") for k in range(4)),
                  (Job(jid("a.0"), "a", JobState.RUNNING, slot="s2", start_time=0.0),
                   Job(jid("a.1"), "a", JobState.RUNNING, slot="s3", start_time=0.0),
                   Job(jid("a.2"), "a", JobState.IDLE),
                   Job(jid("b.0"), "b", JobState.IDLE), Job(jid("b.1"), "b", JobState.IDLE)),
                  (Kept("b", "s0", (1, 0, 0, 0)), Kept("b", "s1", (1, 0, 0, 0)))),
         {"a": 2, "b": 2}, {"a": 0}),
    ],
)
def test_holds(snapshot, shares, holds):
    assert decide(snapshot, settings(shares)).holds == holds

"""The actuator's safety rules and the enforcement loop, against a fake pool that records calls."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from builders import jid, name, snap
from osep.act.actuator import FORGET_AT, ActionResult, Actuator, Limits, logs
from osep.act.cycle import Enforcer
from osep.act.records import Outcome, Recorder
from osep.core.model import JobId, JobState, Snapshot
from osep.core.plan import Claim, OwnerView, Vacate
from osep.core.policy import PolicySettings, decide
from osep.core.pool import Look
from osep.core.shares import ShareTable
from osep.errors import PoolError, UnknownOutcome


class FakePool:
    """A Pool that serves a fixed snapshot and records what it was asked to do."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.current = snapshot
        self.jobs = {j.id: j for j in snapshot.jobs}
        self.calls: list[tuple[str, ...]] = []
        self.fail_on: set[str] = set()
        self.lost: set[str] = set()  # vacates that go through but whose answer never comes
        self.held: list[str] = []
        self.leaving: list[list[str]] = []  # at each hold, the jobs it was told are leaving
        self.looks: list[list[str]] = []  # every look at jobs, by the jobs it was for
        self.unanswered: dict[str, str] = {}  # job -> why a look could not see it

    def snapshot(self) -> Snapshot:
        return self.current

    def look(self, job_ids: Iterable[JobId]) -> Look:
        ids = list(job_ids)
        self.looks.append([name(i) for i in ids])
        failed = {i: self.unanswered[name(i)] for i in ids if name(i) in self.unanswered}
        return Look({i: self.jobs[i] for i in ids if i in self.jobs and i not in failed}, failed)

    def vacate(self, job_id: JobId) -> None:
        if name(job_id) in self.fail_on:
            raise PoolError(f"schedd refused {job_id}")
        self.calls.append(("vacate", name(job_id)))
        if name(job_id) in self.lost:
            raise UnknownOutcome(f"vacating {job_id}: timed out; it may have been carried out")

    def reserve(self, slot: str, owner: str, shape: tuple[int, int, int]) -> None:
        self.calls.append(("reserve", slot, owner))

    def hold(self, owners, leaving=()) -> None:
        if "hold" in self.fail_on:
            raise PoolError("locating the negotiator: Unable to locate local daemon.")
        if list(owners) or self.held:
            self.calls.append(("hold", *owners))
        self.held = list(owners)
        self.leaving.append(sorted(name(j) for j in leaving))


POLICY = PolicySettings(ShareTable({"a": 2, "b": 2}))


def setup(**limits):
    pool = FakePool(snap(now=1000.0, running={"a": [10, 20, 30, 40]}, idle={"b": 2}, free=0))
    return pool, Actuator(pool, Limits(**limits)), decide(pool.current, POLICY)


def test_vacates_and_reserves_the_slot_for_the_beneficiary():
    pool, actuator, plan = setup()
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.DONE, Outcome.DONE]
    # a is held first, at what it runs once its two jobs have left: no negotiation falls between
    # a vacate and the hold that keeps its room from going back to a.
    assert pool.calls == [("hold", "a"), ("vacate", "a.3"), ("vacate", "a.2"),
                          ("reserve", "s3", "b"), ("reserve", "s2", "b")]
    assert pool.leaving == [["a.2", "a.3"]]


def test_no_vacate_goes_without_the_hold_that_keeps_its_room():
    pool, actuator, plan = setup()
    pool.fail_on.add("hold")
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.FAILED]
    assert all("holds that keep its room could not be set" in r.detail and
               "Unable to locate local daemon" in r.detail for r in results)
    assert pool.calls == []  # nothing vacated, no room kept


def test_a_vacate_refused_after_the_hold_sets_the_hold_again():
    pool, actuator, plan = setup()
    pool.fail_on.add("a.2")
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.DONE, Outcome.FAILED]
    # Held first as if both left; then again at what a runs with a.2 still running.
    assert pool.leaving == [["a.2", "a.3"], []]
    assert pool.calls == [("hold", "a"), ("vacate", "a.3"), ("reserve", "s3", "b"), ("hold", "a")]
    assert actuator.holds_set == {"a": 0} and actuator.steps_failed == {}


def test_a_vacate_whose_answer_is_lost_keeps_its_room_and_counts_as_sent():
    """It may have gone through: the room it was for is kept for the beneficiary, and it counts for
    the cycle's cap and the job's hourly cap (the pool shows the job as vacating meanwhile)."""
    pool, actuator, plan = setup(max_vacates_per_job_per_hour=1)
    pool.lost = {"a.3"}
    results = actuator.apply(plan)
    assert [(r.outcome, r.possibly_done) for r in results] == [(Outcome.FAILED, True), (Outcome.DONE, False)]
    assert "no answer, taken as possibly done" in results[0].detail
    assert ("reserve", "s3", "b") in pool.calls and ("reserve", "s2", "b") in pool.calls
    again = actuator.apply(plan)  # the same plan again (the pool would show a.3 vacating)
    assert [r.outcome for r in again] == [Outcome.RATE_LIMITED] * 2
    # A refusal is a plain failure: nothing kept.
    pool, actuator, plan = setup()
    pool.fail_on = {"a.3"}
    results = actuator.apply(plan)
    assert [(r.outcome, r.possibly_done) for r in results] == [(Outcome.FAILED, False), (Outcome.DONE, False)]
    assert ("reserve", "s3", "b") not in pool.calls


def test_the_results_are_real_frozen_action_results():
    pool, actuator, plan = setup()
    pool.fail_on = {"a.2"}
    results = actuator.apply(plan)
    assert all(type(r) is ActionResult for r in results)
    assert results[0] == ActionResult(plan.vacates[0], Outcome.DONE)
    assert hash(results[1]) == hash(ActionResult(plan.vacates[1], Outcome.FAILED,
                                                 f"schedd refused {plan.vacates[1].job}"))
    with pytest.raises(FrozenInstanceError):
        results[0].detail = "changed"  # type: ignore[misc]
    claims = Actuator(pool).apply(replace(plan, vacates=(), claims=(Claim("s0", "b", plan.vacates[0].reason),)))
    assert claims == [ActionResult(claims[0].action, Outcome.DONE)] and type(claims[0]) is ActionResult


def test_the_history_of_vacates_can_be_the_pools_own():
    pool = FakePool(snap(now=1000.0, running={"a": [10, 20, 30, 40]}, idle={"b": 2}, free=0))
    recent = {jid("a.3"): deque([900.0])}  # as a state file handed it over
    actuator = Actuator(pool, Limits(max_vacates_per_job_per_hour=1), recent)
    results = actuator.apply(decide(pool.current, POLICY))
    assert [r.outcome for r in results] == [Outcome.RATE_LIMITED, Outcome.DONE]
    assert list(recent[jid("a.2")]) == [1000.0]  # what it sends is written where it was given


def test_vacates_older_than_an_hour_are_forgotten_once_many_jobs_have_some():
    pool = FakePool(snap(now=10_000.0, running={"a": [10, 20, 30, 40]}, idle={"b": 2}, free=0))
    recent = {jid("a.3"): deque([100.0, 9_000.0])}
    actuator = Actuator(pool, Limits(max_vacates_per_job_per_hour=1), recent)
    # A long run's memory: thousands of jobs vacated once, long ago (and a.3 within the hour).
    recent.update({JobId("old", 0, k): deque([100.0]) for k in range(FORGET_AT)})
    results = actuator.apply(decide(pool.current, POLICY))
    assert [r.outcome for r in results] == [Outcome.RATE_LIMITED, Outcome.DONE]  # a.3 as before
    # Only what counts for a cap is left, in the dict it was given.
    assert recent == {jid("a.3"): deque([9_000.0]), jid("a.2"): deque([10_000.0])}


class Unkept(FakePool):
    """A pool that cannot keep a room for its beneficiary."""

    def reserve(self, slot: str, owner: str, shape: tuple[int, int, int]) -> None:
        raise PoolError(f"keeping {slot}: schedd down")


@pytest.mark.parametrize("make, limits, held, failed", [
    (FakePool, {}, {"a": 0}, {}),
    (FakePool, {"dry_run": True}, {}, {}),  # a dry run sets no hold
    (Unkept, {}, {"a": 0}, {"reserve": 2}),  # each of the two rooms made
])
def test_the_actuator_says_which_holds_it_set_and_which_steps_failed(make, limits, held, failed):
    """What the results do not say (the daemon's metrics count it): the holds an apply set, and the
    holds and rooms that failed; a later apply starts its count afresh."""
    pool = make(snap(now=1000.0, running={"a": [10, 20, 30, 40]}, idle={"b": 2}, free=0))
    actuator = Actuator(pool, Limits(**limits))
    plan = decide(pool.current, POLICY)
    actuator.apply(plan)
    assert (actuator.holds_set, actuator.steps_failed) == (held, failed)
    pool.fail_on.add("hold")  # the holds could not be set: none is said to be, and none vacated
    actuator.apply(plan)
    assert (actuator.holds_set, actuator.steps_failed) == ({}, {} if limits else {"hold": 1})


def test_dry_run_touches_nothing():
    pool, actuator, plan = setup(dry_run=True)
    assert plan.holds == {"a": 0}
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.DRY_RUN] * 2
    assert pool.calls == []  # no vacate, no reservation, no hold
    assert actuator.holds_set == {}


def test_dry_run_logs_each_hold_it_would_set_as_a_real_run_logs_its_holds(verbose_logs):
    """One event per held owner, with the fields of a real run's hold and ``dry_run`` true, as
    every action a dry run logs; a real run's holds are one event, without ``dry_run``."""
    pool = FakePool(snap(now=1000.0, running={"a": [10, 20, 30], "c": [10, 20, 30]},
                         idle={"a": 1, "b": 2, "c": 1}, free=0))
    policy = PolicySettings(ShareTable({"a": 1, "b": 1, "c": 1}))
    plan = decide(pool.current, policy)
    assert plan.holds == {"a": 0, "c": 0}
    with capture_logs() as events:
        Actuator(pool, Limits(dry_run=True)).apply(plan)
    holds = [e for e in events if e["event"] == "action" and e["kind"] == "hold"]
    assert holds == [
        {"event": "action", "kind": "hold", "owners": [o], "allowance": {o: 0}, "outcome": "dry-run",
         "dry_run": True, "log_level": "info"} for o in ("a", "c")]
    vacates = [e for e in events if e["event"] == "action" and e["kind"] == "vacate"]
    assert vacates and all(e["outcome"] == "dry-run" and e["dry_run"] is True for e in vacates)
    assert pool.calls == []
    with capture_logs() as events:
        Actuator(pool).apply(plan)
    holds = [e for e in events if e["event"] == "action" and e["kind"] == "hold"]
    assert [(e["owners"], e["outcome"], "dry_run" in e) for e in holds] == [(["a", "c"], "done", False)]
    assert not any("dry_run" in e for e in events)


def test_recheck_skips_a_job_that_finished_or_restarted():
    pool, actuator, plan = setup()
    del pool.jobs[jid("a.3")]
    pool.jobs[jid("a.2")] = replace(pool.jobs[jid("a.2")], start_time=999.0)
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.CHANGED, Outcome.CHANGED]
    assert "gone" in results[0].detail and "restarted" in results[1].detail
    assert [c for c in pool.calls if c[0] != "hold"] == []  # b still waits, so a is still held


def test_the_victims_are_rechecked_in_one_look():
    pool, actuator, plan = setup()
    actuator.apply(plan)
    assert pool.looks == [["a.3", "a.2"]]
    # A dry run re-checks them too (what it logs is what a real run would do); a plan with no
    # victims looks at nothing.
    pool, actuator, plan = setup(dry_run=True)
    actuator.apply(plan)
    assert pool.looks == [["a.3", "a.2"]]
    pool = FakePool(snap(now=1000.0, running={"a": [0]}, idle={"b": 1}, free=1))
    Actuator(pool).apply(decide(pool.current, POLICY))
    assert pool.looks == []


def test_recheck_skips_a_job_moved_to_another_slot_or_now_another_owners(verbose_logs):
    pool, actuator, plan = setup()
    pool.jobs[jid("a.3")] = replace(pool.jobs[jid("a.3")], slot="s9")
    pool.jobs[jid("a.2")] = replace(pool.jobs[jid("a.2")], owner="c")
    with capture_logs() as events:
        results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.CHANGED, Outcome.CHANGED]
    assert results[0].detail == "job moved to s9 since the snapshot"
    assert results[1].detail == "job is now c's"
    assert [c for c in pool.calls if c[0] != "hold"] == []
    logged = [(e["job"], e["outcome"], e["detail"]) for e in events
              if e["event"] == "action" and e["kind"] == "vacate"]
    assert logged == [("a#0.3", "skipped-changed", "job moved to s9 since the snapshot"),
                      ("a#0.2", "skipped-changed", "job is now c's")]


def test_recheck_skips_a_job_no_longer_running():
    pool, actuator, plan = setup()
    pool.jobs[jid("a.3")] = replace(pool.jobs[jid("a.3")], state=JobState.IDLE)
    assert actuator.apply(plan)[0].outcome is Outcome.CHANGED


def test_cycle_cap_is_enforced_even_if_the_plan_is_larger():
    pool, actuator, plan = setup(max_vacates_per_cycle=1)
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.DONE, Outcome.RATE_LIMITED]
    assert [c for c in pool.calls if c[0] == "vacate"] == [("vacate", "a.3")]


def test_per_job_hourly_cap_uses_the_plan_time():
    _pool, actuator, plan = setup(max_vacates_per_job_per_hour=1)
    assert actuator.apply(plan)[0].outcome is Outcome.DONE
    # Same job planned again 10 minutes later: refused. 61 minutes later: allowed.
    later = replace(plan, time=plan.time + 600)
    assert actuator.apply(later)[0].outcome is Outcome.RATE_LIMITED
    much_later = replace(plan, time=plan.time + 3660)
    assert actuator.apply(much_later)[0].outcome is Outcome.DONE


def test_a_failed_vacate_does_not_stop_the_rest():
    pool, actuator, plan = setup()
    pool.fail_on.add("a.3")
    results = actuator.apply(plan)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.DONE]
    assert "refused" in results[0].detail


def test_claims_reserve_free_slots():
    pool = FakePool(snap(now=1000.0, running={"a": [0, 0]}, idle={"b": 2}, free=2))
    results = Actuator(pool).apply(decide(pool.current, POLICY))
    assert [r.outcome for r in results] == [Outcome.DONE, Outcome.DONE]
    assert pool.calls == [("reserve", "s2", "b"), ("reserve", "s3", "b")]


def test_holds_follow_the_plan_and_are_lifted_when_nobody_waits():
    pool = FakePool(snap(now=1000.0, running={"a": [0, 0, 0]}, idle={"a": 2, "b": 1}))
    actuator = Actuator(pool)
    actuator.apply(decide(pool.current, POLICY))
    assert ("hold", "a") in pool.calls
    pool.calls.clear()
    pool.current = snap(now=1100.0, running={"a": [0, 0], "b": [50]}, idle={"a": 3})
    actuator.apply(decide(pool.current, POLICY))
    assert pool.calls == [("hold",)]  # nobody below target waits: every hold lifted
    assert pool.held == []


def test_enforcer_logs_one_event_per_decision_and_action_with_context(verbose_logs):
    pool, actuator, _ = setup()
    enforcer = Enforcer(POLICY, actuator)
    with capture_logs() as events:
        report = enforcer.run_cycle(pool)
        enforcer.run_cycle(pool)
    assert report.cycle == 1 and report.vacated == 2 and report.skipped == 0
    first = [e for e in events if e.get("cycle") == 1]
    decisions = [e for e in first if e["event"] == "decision"]
    actions = [e for e in first if e["event"] == "action" and e["kind"] == "vacate"]
    holds = [e for e in first if e["event"] == "action" and e["kind"] == "hold"]
    assert holds[0]["owners"] == ["a"] and holds[0]["outcome"] == "done"
    assert [(d["job"], d["owner"], d["beneficiary"]) for d in decisions] == [
        ("a#0.3", "a", "b"), ("a#0.2", "a", "b")]
    assert all("lowest wallclock" in d["reason"] for d in decisions)
    assert decisions[0]["run_time"] == 960.0
    assert [(a["job"], a["outcome"]) for a in actions] == [("a#0.3", "done"), ("a#0.2", "done")]
    (summary,) = [e for e in first if e["event"] == "cycle"]
    assert summary["vacated"] == 2 and summary["time"] == 1000.0
    assert any(e.get("cycle") == 2 and e["event"] == "cycle" for e in events)


def test_a_cycle_makes_no_decision_or_action_event_its_logger_would_drop():
    pool, actuator, _ = setup()
    warnings = structlog.make_filtering_bound_logger(logging.WARNING)
    structlog.configure(wrapper_class=warnings)
    made: list[str] = []

    class Counted(Recorder):  # what the cycle asks the decision log for
        def bind(self, **context: Any) -> Counted:
            return Counted(self.log.bind(**context))

        def owner(self, view: OwnerView) -> None:
            made.append("owner")

        def decision(self, action: Vacate | Claim) -> None:
            made.append("decision")

        def action(self, action: Vacate | Claim, outcome: Outcome, detail: str) -> None:
            made.append("action")

    enforcer = Enforcer(POLICY, actuator)
    enforcer.record = Counted(structlog.get_logger("osep"))
    report = enforcer.run_cycle(pool)
    assert report.vacated == 2 and made == []
    # A logger that cannot say what it keeps is given everything.
    assert logs(Recorder(object()), logging.DEBUG)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    enforcer.run_cycle(FakePool(snap(now=1000.0, running={"a": [10, 20]}, idle={"b": 2}, free=0)))
    assert "decision" in made and "action" in made and "owner" in made


def room_by_two_vacates():
    """b's 4-core job needs both of a's 2-core jobs on m0: one group of two vacates."""
    from builders import machines
    from osep.core.resources import Unit

    snapshot = machines({"m0": (4, 4096, 0)},
                        [("a", "m0", (2, 1024, 0), 0.0), ("a", "m0", (2, 1024, 0), 900.0)],
                        idle=[("b", (4, 1024, 0))], now=1000.0)
    plan = decide(snapshot, PolicySettings(ShareTable({"b": {"cpus": 4}}), unit=Unit.CPUS))
    assert len(plan.vacates) == 2 and {v.group for v in plan.vacates} == {0}
    return FakePool(snapshot), plan


def test_the_vacates_of_one_room_all_go_and_the_room_is_kept_once():
    pool, plan = room_by_two_vacates()
    Actuator(pool).apply(plan)
    assert pool.calls == [("hold", "a"), ("vacate", "a.1"), ("vacate", "a.0"), ("reserve", "m0", "b")]


def test_a_room_whose_vacates_cannot_all_go_is_not_made_at_all():
    # The younger job is too young to vacate: the older one is not vacated alone for nothing.
    pool, plan = room_by_two_vacates()
    results = Actuator(pool, Limits(min_run_time=500)).apply(plan)
    assert pool.calls == [("hold", "a")]
    assert [r.outcome for r in results] == [Outcome.RATE_LIMITED, Outcome.RATE_LIMITED]
    assert "a#0.1" in results[1].detail and "same room" in results[1].detail
    # A cycle cap of one cannot make a room that takes two.
    pool, plan = room_by_two_vacates()
    results = Actuator(pool, Limits(max_vacates_per_cycle=1)).apply(plan)
    assert pool.calls == [("hold", "a")] and {r.outcome for r in results} == {Outcome.RATE_LIMITED}
    # A job of the room that is gone stops the rest too.
    pool, plan = room_by_two_vacates()
    del pool.jobs[plan.vacates[1].job]
    results = Actuator(pool).apply(plan)
    assert pool.calls == [("hold", "a")]
    assert [r.outcome for r in results] == [Outcome.CHANGED, Outcome.CHANGED]


class Faulty(FakePool):
    """A pool whose handling of some jobs breaks with an error that is not the pool's own (a fault
    in osep or in the bindings)."""

    def __init__(self, snapshot: Snapshot, broken_look: bool = False, broken_send: str = "",
                 broken_hold: bool = False) -> None:
        super().__init__(snapshot)
        self.broken_look, self.broken_send, self.broken_hold = broken_look, broken_send, broken_hold

    def look(self, job_ids: Iterable[JobId]) -> Look:
        if self.broken_look:
            raise OverflowError("int too big to convert")
        return super().look(job_ids)

    def vacate(self, job_id: JobId) -> None:
        if name(job_id) == self.broken_send:
            self.calls.append(("vacate", name(job_id)))
            raise SystemError("returned a result with an exception set")
        super().vacate(job_id)

    def hold(self, owners, leaving=()) -> None:
        if self.broken_hold:
            raise TypeError("unexpected value")
        super().hold(owners, leaving)


def test_a_fault_in_one_job_is_that_jobs_and_the_rest_go_on():
    snapshot = snap(now=1000.0, running={"a": [10, 20, 30, 40]}, idle={"b": 2}, free=0)
    plan = decide(snapshot, POLICY)
    assert [name(v.job) for v in plan.vacates] == ["a.3", "a.2"]
    # One job the look could not see (its schedd did not answer, its ad cannot be read).
    pool = Faulty(snapshot)
    pool.unanswered = {"a.3": "querying schedd a: timed out"}
    results = Actuator(pool).apply(plan)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.DONE]
    assert results[0].detail == "re-check failed: querying schedd a: timed out"
    assert ("vacate", "a.2") in pool.calls  # the other job still went
    assert pool.leaving == [["a.2"]]  # held as if only that one left
    # A fault in the holds is the holds': no vacate goes without them, and the cycle goes on.
    pool = Faulty(snapshot, broken_hold=True)
    results = Actuator(pool).apply(plan)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.FAILED]
    assert "internal error: TypeError: unexpected value" in results[0].detail
    assert [c for c in pool.calls if c[0] == "vacate"] == []
    # A vacate that broke on the way out may have gone: it counts, and its room is kept.
    pool = Faulty(snapshot, broken_send="a.3")
    results = Actuator(pool).apply(plan)
    assert results[0].outcome is Outcome.FAILED and results[0].possibly_done
    assert "SystemError" in results[0].detail
    assert [c for c in pool.calls if c[0] == "reserve"] == [("reserve", "s3", "b"), ("reserve", "s2", "b")]


def test_a_look_that_fails_fails_every_recheck_and_the_rest_goes_on(verbose_logs):
    """Whatever the look raises: no victim is vacated unchecked, one counted line says so, and the
    claims and holds of the plan still go."""
    snapshot = snap(now=1000.0, running={"a": [10, 20, 30, 40]}, idle={"b": 3}, free=1)
    plan = decide(snapshot, POLICY)
    assert len(plan.vacates) == 1 and len(plan.claims) == 1
    pool = Faulty(snapshot, broken_look=True)
    with capture_logs() as events:
        results = Actuator(pool).apply(plan)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.DONE]
    assert results[0].detail == "re-check failed: internal error: OverflowError: int too big to convert"
    assert [c[0] for c in pool.calls] == ["hold", "reserve"]
    (line,) = [e for e in events if e["event"] == "recheck_failed"]
    assert line["jobs"] == 1 and "OverflowError" in line["problem"]

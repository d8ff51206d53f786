"""The live pool's re-check of a plan's victims: one query per schedd (per chunk of jobs), its
constraint built from job numbers only, and what it finds (gone, failed, as the snapshot saw it)."""

from __future__ import annotations

import classad2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakecondor import SCHEDD, FakeCondor, classad
from osep.act.actuator import Actuator, Limits
from osep.act.records import Outcome
from osep.config.livepool import LiveSettings
from osep.core.model import JobId, JobState
from osep.core.policy import PolicySettings, decide
from osep.core.shares import ShareTable
from osep.htcondor.live import LivePool
from osep.htcondor.recheck import RECHECK_CHUNK, job_constraints
from osep.replay.damage import MAX_JOB_NUMBER

SECOND = "schedd2@cm"


def selected(constraints: list[tuple[str, int]], pairs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The (cluster, proc) of the jobs ``pairs`` that some constraint selects; each constraint
    selects as many as it says it names."""
    exprs = [classad2.ExprTree(c) for c, _ in constraints]
    for (_, count), expr in zip(constraints, exprs, strict=True):
        assert sum(expr.eval(classad(ClusterId=c, ProcId=p)) is True for c, p in pairs) == count
    return {(c, p) for c, p in pairs
            if any(e.eval(classad(ClusterId=c, ProcId=p)) is True for e in exprs)}


class Evil(int):
    """An int that would write itself as syntax."""

    def __format__(self, spec: str) -> str:
        return "1 || true"

    def __str__(self) -> str:
        return "1 || true"

    __repr__ = __str__


@pytest.mark.parametrize("pairs, expected", [
    ([], []),
    ([(7, 3)], [("(ClusterId == 7 && ProcId == 3)", 1)]),
    ([(7, 3), (7, 3), (2, 0)],
     [("(ClusterId == 2 && ProcId == 0) || (ClusterId == 7 && ProcId == 3)", 2)]),
    ([(MAX_JOB_NUMBER, MAX_JOB_NUMBER)],
     [(f"(ClusterId == {MAX_JOB_NUMBER} && ProcId == {MAX_JOB_NUMBER})", 1)]),
    # Numbers no queue can hold name no job: left out, never written.
    ([(2**63, 0), (1, 2**31), (-1, 0), (1, -5), (10**400, 1), (True, 0), (1, False)], []),
    ([(Evil(4), 1)], [("(ClusterId == 4 && ProcId == 1)", 1)]),
])
def test_the_constraint_is_made_of_job_numbers_only(pairs, expected):
    assert job_constraints(pairs) == expected


def test_many_jobs_make_several_queries_of_at_most_a_chunk_each():
    pairs = {(c, p) for c in range(1, 11) for p in range(105)}  # 1,050 jobs
    constraints = job_constraints(pairs)
    assert len(constraints) == -(-len(pairs) // RECHECK_CHUNK) == 11
    assert [n for _, n in constraints] == [RECHECK_CHUNK] * 10 + [50]
    assert all(c.count("ClusterId") == n for c, n in constraints)
    assert max(len(c) for c, _ in constraints) < 8192
    assert selected(constraints, pairs | {(11, 0), (1, 105)}) == pairs
    assert len(job_constraints(pairs, chunk=0)) == len(pairs)  # a chunk of nothing is a chunk of one


NUMBERS = st.one_of(st.integers(0, MAX_JOB_NUMBER), st.integers(), st.booleans())


@given(st.lists(st.tuples(NUMBERS, NUMBERS), max_size=30), st.integers(1, 8))
def test_the_constraints_select_exactly_the_jobs_that_can_exist(pairs, chunk):
    constraints = job_constraints(pairs, chunk)
    valid = {(c, p) for c, p in pairs if not isinstance(c, bool) and not isinstance(p, bool)
             and 0 <= c <= MAX_JOB_NUMBER and 0 <= p <= MAX_JOB_NUMBER}
    assert len(constraints) == -(-len(valid) // chunk)
    others = {(c + 1, p) for c, p in valid if c < MAX_JOB_NUMBER} | {(0, 0), (1, 1)}
    assert selected(constraints, valid | others) == valid


def two_schedds(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeCondor, LivePool]:
    fake = FakeCondor()
    fake.run("alice", 3)
    fake.idle("bob", 2)
    fake.slots.append(classad(Name="slot9@node", Cpus=1, Memory=1024, SlotType="Static", State="Claimed",
                              SlotWeight=1))
    fake.queues[SECOND] = [classad(ClusterId=1, ProcId=0, Owner="carol", User="carol@site", JobStatus=2,
                                   JobUniverse=5, QDate=1, RequestCpus=1, RequestMemory=1,
                                   RemoteHost="slot9@node", JobCurrentStartDate=1_000)]
    fake.install(monkeypatch)
    pool = LivePool(LiveSettings(pool="cm.fake", retries=1, retry_wait=0.0), clock=lambda: 10_000.0)
    return fake, pool


def test_one_query_per_schedd_finds_the_jobs_as_the_snapshot_has_them(monkeypatch):
    fake, pool = two_schedds(monkeypatch)
    snapshot = pool.snapshot()
    running = [j for j in snapshot.jobs if j.state is JobState.RUNNING]
    gone = JobId(SCHEDD, 100, 99)
    fake.queries.clear()
    look = pool.look([j.id for j in running] + [gone])
    assert dict(look.jobs) == {j.id: j for j in running} and not look.failed
    assert sorted(s for s, _ in fake.queries) == sorted([SCHEDD, SECOND])


def test_a_schedd_that_fails_is_its_own_jobs_failure(monkeypatch):
    fake, pool = two_schedds(monkeypatch)
    running = [j.id for j in pool.snapshot().jobs if j.state is JobState.RUNNING]
    fake.down.add(SECOND)
    unknown = JobId("schedd@nowhere", 1, 0)
    look = pool.look([*running, unknown])
    assert set(look.jobs) == {j for j in running if j.schedd == SCHEDD}
    assert set(look.failed) == {JobId(SECOND, 1, 0), unknown}
    assert "schedd2@cm is down" in look.failed[JobId(SECOND, 1, 0)]
    assert "not in the last snapshot" in look.failed[unknown]


def test_an_ad_that_cannot_be_read_is_that_jobs_failure_and_a_job_vacated_is_vacating(monkeypatch):
    fake, pool = two_schedds(monkeypatch)
    running = [j.id for j in pool.snapshot().jobs if j.state is JobState.RUNNING and j.id.schedd == SCHEDD]
    del fake.jobs[0]["Owner"]
    pool.vacate(running[1])
    look = pool.look(running)
    assert list(look.failed) == [running[0]] and "cannot be read" in look.failed[running[0]]
    assert look.jobs[running[1]].state is JobState.VACATING


def test_the_actuator_rechecks_a_plans_victims_in_one_query(monkeypatch):
    fake, pool = two_schedds(monkeypatch)
    fake.idle("dave", 3)
    snapshot = pool.snapshot()
    plan = decide(snapshot, PolicySettings(ShareTable({"alice": 1, "carol": 1, "bob": 1, "dave": 1}),
                                          max_vacates=10))
    victims = {v.job for v in plan.vacates}
    assert len(victims) >= 2 and {j.schedd for j in victims} == {SCHEDD}
    fake.queries.clear()
    results = Actuator(pool, Limits(dry_run=True)).apply(plan)
    assert [r.outcome for r in results if r.action in plan.vacates] == [Outcome.DRY_RUN] * len(victims)
    assert len(fake.queries) == 1

"""The ClassAd-to-model tables of osep/condor.py, on ads built by hand (no pool needed)."""

from __future__ import annotations

import classad2
import pytest
from structlog.testing import capture_logs

from osep.condor import LivePool, LiveSettings, _Seen, _split_id
from osep.errors import PoolError
from osep.model import JobState


def ad(**attrs) -> classad2.ClassAd:
    out = classad2.ClassAd()
    for key, value in attrs.items():
        out[key] = value
    return out


RUNNING = dict(ClusterId=7, ProcId=3, Owner="alice", User="alice@site", JobStatus=2,
               QDate=100, JobCurrentStartDate=1000, RemoteHost="slot4@node1", RequestCpus=2,
               RequestMemory=2048, LastCkptTime=1500)


@pytest.fixture
def pool():
    return LivePool(LiveSettings(pool="127.0.0.1:1"))


def test_running_job(pool):
    seen = _Seen()
    job = pool._to_job("schedd1", ad(**RUNNING), seen)
    assert job.id == "schedd1#7.3" and job.owner == "alice" and job.state is JobState.RUNNING
    assert (job.slot, job.start_time, job.checkpoint_time) == ("slot4@node1", 1000.0, 1500.0)
    assert (job.cpus, job.memory) == (2, 2048)
    assert job.run_time(2000.0) == 1000 and job.lost_work(2000.0) == 500
    assert seen.busy == {"alice@site": 2.0} and seen.running == {"alice": 1}


def test_accounting_group_is_the_owner_and_names_the_submitter(pool):
    seen = _Seen()
    job = pool._to_job("s", ad(**RUNNING, AcctGroup="group_physics",
                               AccountingGroup="group_physics.alice"), seen)
    assert job.owner == "group_physics"
    assert seen.submitters == {"group_physics": {"group_physics.alice@site"}}


@pytest.mark.parametrize("status, state", [(1, JobState.IDLE), (5, JobState.HELD), (6, JobState.RUNNING)])
def test_status_table(pool, status, state):
    attrs = dict(RUNNING, JobStatus=status)
    assert pool._to_job("s", ad(**attrs), _Seen()).state is state


def test_a_job_being_vacated_is_vacating_until_it_restarts(pool):
    pool._vacating["s#7.3"] = (1000.0, 1990.0)
    assert pool._to_job("s", ad(**RUNNING), _Seen()).state is JobState.VACATING
    restarted = dict(RUNNING, JobCurrentStartDate=1995)
    assert pool._to_job("s", ad(**restarted), _Seen()).state is JobState.RUNNING


@pytest.mark.parametrize("missing", ["Owner", "User", "JobCurrentStartDate", "RemoteHost", "JobStatus"])
def test_a_bad_job_ad_is_logged_and_skipped(pool, missing, verbose_logs):
    attrs = {k: v for k, v in RUNNING.items() if k != missing}
    with capture_logs() as logs:
        assert pool._to_job("s", ad(**attrs), _Seen()) is None
    assert logs[0]["event"] == "bad_job_ad" and logs[0]["job"] == "7.3"


def test_slots_static_partitionable_and_unavailable(pool):
    slots = pool._to_slots([
        ad(Name="slot1@a", Cpus=1, Memory=1000, SlotType="Static", State="Claimed"),
        ad(Name="slot1@b", Cpus=3, Memory=3000, SlotType="Partitionable", State="Unclaimed"),
        ad(Name="slot1_1@b", Cpus=1, Memory=1000, SlotType="Dynamic", State="Claimed"),
        ad(Name="slot2@a", Cpus=1, Memory=1000, SlotType="Static", State="Owner"),
        ad(Name="broken", Memory=1000),
    ])
    assert [(s.name, s.cpus, s.memory) for s in slots] == [
        ("slot1@a", 1, 1000), ("slot1@b#0", 1, 1000), ("slot1@b#1", 1, 1000), ("slot1@b#2", 1, 1000),
        ("slot1_1@b", 1, 1000)]


def test_incomplete_view_is_refused(pool):
    claimed = [ad(Name=f"slot{k}@a", State="Claimed") for k in range(10)]
    with pytest.raises(PoolError, match="incomplete view"):
        pool._check_complete(claimed, [], 0)
    pool._check_complete(claimed[:2], [], 1)  # a lag of a couple of claims is tolerated


def test_job_ids():
    assert _split_id("schedd@host#12.4") == ("schedd@host", 12, 4)
    with pytest.raises(PoolError):
        _split_id("12.4")


def test_ceilings_of_an_earlier_run_are_taken_over_then_updated_or_lifted(tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    state.write_text('{"ceilings": {"alice@site": 10, "carol@site": 4}, '
                     '"original": {"alice@site": -1, "carol@site": 7}}')
    sent = []
    monkeypatch.setattr(LivePool, "_negotiator", lambda self: object())
    monkeypatch.setattr(LivePool, "_set_ceiling", lambda self, neg, sub, value: sent.append((sub, value)))
    pool = LivePool(LiveSettings(state_file=state))
    assert sent == [] and pool.ceilings == {"alice@site": 10, "carol@site": 4}
    # This run holds alice again (now at 9 cores) and not carol: carol gets her own ceiling back.
    pool._seen.submitters = {"alice": {"alice@site"}}
    pool._seen.busy = {"alice@site": 9.0}
    pool.hold({"alice": 0})
    assert sorted(sent) == [("alice@site", 9), ("carol@site", 7)]
    # An allowance raises the ceiling by that much.
    pool.hold({"alice": 2})
    assert sent[-1] == ("alice@site", 11)
    pool.release()
    assert sent[-1] == ("alice@site", -1) and pool.ceilings == {}
    assert '"ceilings": {}' in state.read_text()


def test_a_quick_release_makes_one_attempt_only(monkeypatch):
    sent = []
    monkeypatch.setattr(LivePool, "_negotiator", lambda self: object())
    monkeypatch.setattr(LivePool, "_set_ceiling", lambda self, neg, sub, value: sent.append((sub, value)))
    pool = LivePool(LiveSettings(retries=5))
    pool._ceilings, pool._original = {"alice@site": 3}, {"alice@site": -1}
    pool.release(quick=True)
    assert pool.settings.retries == 1 and sent == [("alice@site", -1)]

"""The HTCondor adapter without a pool: the ClassAd tables of osep/htcondor/ads.py on ads built by
hand, the live pool's own view of a job it is vacating, and the ceilings against a fake negotiator."""

from __future__ import annotations

import classad2
import pytest
import structlog
from structlog.testing import capture_logs

from osep.core.model import JobId, JobState
from osep.errors import PoolError
from osep.htcondor.ads import Accounts, BadAd, check_complete, to_job, to_slots
from osep.htcondor.ceilings import Ceilings
from osep.htcondor.live import LivePool
from osep.htcondor.settings import LiveSettings


def ad(**attrs) -> classad2.ClassAd:
    out = classad2.ClassAd()
    for key, value in attrs.items():
        out[key] = value
    return out


RUNNING = {"ClusterId": 7, "ProcId": 3, "Owner": "alice", "User": "alice@site", "JobStatus": 2,
               "QDate": 100, "JobCurrentStartDate": 1000, "RemoteHost": "slot4@node1", "RequestCpus": 2,
               "RequestMemory": 2048, "LastCkptTime": 1500}


def test_running_job():
    entry = to_job("schedd1", ad(**RUNNING))
    job = entry.job
    assert job.id == JobId("schedd1", 7, 3) and str(job.id) == "schedd1#7.3"
    assert job.owner == "alice" and job.state is JobState.RUNNING
    assert (job.slot, job.start_time, job.checkpoint_time) == ("slot4@node1", 1000.0, 1500.0)
    assert (job.cpus, job.memory) == (2, 2048)
    assert job.run_time(2000.0) == 1000 and job.lost_work(2000.0) == 500
    accounts = Accounts()
    accounts.add(entry)
    assert accounts.busy == {"alice@site": 2.0} and accounts.running == {"alice": 1}


def test_accounting_group_is_the_owner_and_names_the_submitter():
    entry = to_job("s", ad(**RUNNING, AcctGroup="group_physics",
                           AccountingGroup="group_physics.alice"))
    assert entry.job.owner == "group_physics"
    assert entry.submitter == "group_physics.alice@site"


@pytest.mark.parametrize("status, state", [(1, JobState.IDLE), (5, JobState.HELD), (6, JobState.RUNNING)])
def test_status_table(status, state):
    attrs = dict(RUNNING, JobStatus=status)
    assert to_job("s", ad(**attrs)).job.state is state


def test_a_job_being_vacated_is_vacating_until_it_restarts():
    pool = LivePool(LiveSettings(pool="127.0.0.1:1"))
    pool._vacating[JobId("s", 7, 3)] = (1000.0, 1990.0)
    entry = pool._translate("s", ad(**RUNNING))
    assert entry is not None and entry.job.state is JobState.VACATING
    restarted = pool._translate("s", ad(**dict(RUNNING, JobCurrentStartDate=1995)))
    assert restarted is not None and restarted.job.state is JobState.RUNNING


@pytest.mark.parametrize("missing", ["Owner", "User", "JobCurrentStartDate", "RemoteHost", "JobStatus"])
def test_a_bad_job_ad_is_logged_and_skipped(missing, verbose_logs):
    attrs = {k: v for k, v in RUNNING.items() if k != missing}
    with pytest.raises(BadAd):
        to_job("s", ad(**attrs))
    pool = LivePool(LiveSettings(pool="127.0.0.1:1"), logger=structlog.get_logger("osep"))
    with capture_logs() as logs:
        assert pool._translate("s", ad(**attrs)) is None
    assert logs[0]["event"] == "bad_job_ad" and logs[0]["job"] == "7.3"


def test_slots_static_partitionable_and_unavailable():
    items = list(to_slots([
        ad(Name="slot1@a", Cpus=1, Memory=1000, SlotType="Static", State="Claimed"),
        ad(Name="slot1@b", Cpus=3, Memory=3000, SlotType="Partitionable", State="Unclaimed"),
        ad(Name="slot1_1@b", Cpus=1, Memory=1000, SlotType="Dynamic", State="Claimed"),
        ad(Name="slot2@a", Cpus=1, Memory=1000, SlotType="Static", State="Owner"),
        ad(Name="broken", Memory=1000),
    ]))
    assert isinstance(items[-1], BadAd) and "broken" in str(items[-1])
    assert [(s.name, s.cpus, s.memory) for s in items[:-1]] == [
        ("slot1@a", 1, 1000), ("slot1@b#0", 1, 1000), ("slot1@b#1", 1, 1000), ("slot1@b#2", 1, 1000),
        ("slot1_1@b", 1, 1000)]


def test_incomplete_view_is_refused():
    claimed = [ad(Name=f"slot{k}@a", State="Claimed") for k in range(10)]
    with pytest.raises(PoolError, match="incomplete view"):
        check_complete(claimed, [], 0)
    check_complete(claimed[:2], [], 1)  # a lag of a couple of claims is tolerated


def test_job_ids():
    assert JobId.parse("schedd@host#12.4") == JobId("schedd@host", 12, 4)
    assert JobId.parse("cm:9618/schedd@host#12.4") == JobId("schedd@host", 12, 4, "cm:9618")
    assert JobId.parse("12.4") == JobId("", 12, 4) and str(JobId("", 12, 4)) == "12.4"
    for text in ("12", "#12.4", "s#x.4", "s#12"):
        with pytest.raises(ValueError):
            JobId.parse(text)


def test_a_job_is_only_acted_on_at_a_schedd_the_last_snapshot_saw():
    pool = LivePool(LiveSettings(pool="127.0.0.1:1"))
    with pytest.raises(PoolError, match="not in the last snapshot"):
        pool.vacate(JobId('evil" || true || "', 5, 0))


class FakeNegotiator:
    def __init__(self, current: dict[str, int] | None = None, name: str = "negotiator@cm") -> None:
        self.name = name
        self.current = dict(current or {})
        self.sent: list[tuple[str, int]] = []

    def ceilings(self) -> dict[str, int]:
        return dict(self.current)

    def set_ceiling(self, submitter: str, value: int) -> None:
        self.sent.append((submitter, value))
        self.current[submitter] = value


def accounts(**busy: float) -> Accounts:
    out = Accounts()
    for submitter, cores in busy.items():
        owner = submitter.split("_")[0]
        name = f"{owner}@site"
        out.submitters.setdefault(owner, set()).add(name)
        out.busy[name] = cores
    return out


def test_ceilings_of_an_earlier_run_are_taken_over_then_updated_or_lifted(tmp_path):
    state = tmp_path / "state.json"
    # A state file of the earlier format (before ceilings were kept per negotiator).
    state.write_text('{"ceilings": {"alice@site": 10, "carol@site": 4}, '
                     '"original": {"alice@site": -1, "carol@site": 7}}')
    ceilings = Ceilings(state, structlog.get_logger("osep"))
    negotiator = FakeNegotiator()
    assert negotiator.sent == [] and ceilings.set == {"alice@site": 10, "carol@site": 4}
    # This run holds alice again (now at 9 cores) and not carol: carol gets her own ceiling back.
    ceilings.sync(negotiator, {"alice": 0}, accounts(alice=9.0))
    assert sorted(negotiator.sent) == [("alice@site", 9), ("carol@site", 7)]
    # An allowance raises the ceiling by that much.
    ceilings.sync(negotiator, {"alice": 2}, accounts(alice=9.0))
    assert negotiator.sent[-1] == ("alice@site", 11)
    assert '"negotiator@cm": {"ceilings": {"alice@site": 11}' in state.read_text()
    ceilings.sync(negotiator, {}, accounts(alice=9.0))
    assert negotiator.sent[-1] == ("alice@site", -1) and ceilings.set == {}
    assert state.read_text() == '{"negotiators": {}}'


def test_ceilings_are_kept_per_negotiator(tmp_path):
    state = tmp_path / "state.json"
    ceilings = Ceilings(state, structlog.get_logger("osep"))
    one, two = FakeNegotiator(name="one"), FakeNegotiator({"alice@site": 3}, name="two")
    ceilings.sync(one, {"alice": 0}, accounts(alice=5.0))
    ceilings.sync(two, {"alice": 0}, accounts(alice=5.0))
    assert one.sent == [("alice@site", 5)] and two.sent == [("alice@site", 3)]  # never raised
    again = Ceilings(state, structlog.get_logger("osep"))
    again.sync(two, {}, accounts())
    assert two.sent[-1] == ("alice@site", 3) and one.sent == [("alice@site", 5)]
    assert again.pending("one") and not again.pending("two")


def test_a_quick_release_makes_one_attempt_only(monkeypatch):
    sent = []
    pool = LivePool(LiveSettings(retries=5))
    pool.ceilings._set = {"negotiator@cm": {"alice@site": 3}}
    pool.ceilings._original = {"negotiator@cm": {"alice@site": -1}}
    monkeypatch.setattr(LivePool, "_sync_ceilings",
                        lambda self: sent.append((self.settings.retries, self.book.holds)))
    pool.release(quick=True)
    assert sent == [(1, {})]

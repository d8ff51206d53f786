"""The HTCondor adapter without a pool: the ClassAd tables of osep/htcondor/job_ads.py and
slot_ads.py on ads built by hand, and the live pool's own view of a job it is vacating (the ceilings:
test_ceilings.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import classad2
import pytest

from fakecondor import FakeCondor
from osep.config.livepool import LiveSettings
from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.core.policy import PolicySettings, decide
from osep.core.shares import ShareTable
from osep.errors import PoolError
from osep.htcondor import reading
from osep.htcondor.ads import BadAd
from osep.htcondor.job_ads import JOB_CONSTRAINT, Accounts, AdTally, owner_of, to_job
from osep.htcondor.live import LivePool
from osep.htcondor.slot_ads import check_complete, to_slots
from osep.htcondor.vacates import Vacates
from osep.timing import Clocks, Phases


def ad(**attrs) -> classad2.ClassAd:
    out = classad2.ClassAd()
    for key, value in attrs.items():
        out[key] = value
    return out


RUNNING = {"ClusterId": 7, "ProcId": 3, "Owner": "alice", "User": "alice@site", "JobStatus": 2,
               "QDate": 100, "JobCurrentStartDate": 1000, "RemoteHost": "slot4@node1", "RequestCpus": 2,
               "RequestMemory": 2048, "RequestDisk": 4096, "LastCkptTime": 1500}


ADS = Path(__file__).parents[1] / "data" / "ads"  # written by HTCondor 23.9 (see its README)
# The project's shared data, beside a checkout (CI has it): the same ads, and any added since.
SHARED_ADS = Path(__file__).resolve().parents[3] / "shared" / "data" / "ads"
AD_FILES = sorted({*ADS.glob("*.ads"), *SHARED_ADS.glob("*.ads")})


def fixture(name: str) -> list[classad2.ClassAd]:
    return list(classad2.parseAds((ADS / name).read_text()))


def test_the_committed_ads_are_the_shared_ones_as_they_are():
    """tests/data/ads is a copy of shared/data/ads, so that a clone alone can run the suite."""
    if SHARED_ADS.is_dir():
        for shared in SHARED_ADS.glob("*.ads"):
            copy = ADS / shared.name
            assert copy.exists() and copy.read_bytes() == shared.read_bytes(), (
                f"{copy} differs from {shared}: copy it again")


@pytest.mark.parametrize("path", AD_FILES, ids=lambda p: f"{p.parent.parent.parent.name}/{p.name}")
def test_every_ad_a_real_pool_wrote_is_read_or_accounted_for(path):
    """Every job ad becomes a job, is left out as off-slot, or is counted as rejected; every machine
    ad becomes a place or a counted rejection (or is unavailable): nothing raises, nothing is lost
    without a trace."""
    ads = list(classad2.parseAds(path.read_text()))
    assert ads
    jobs = [a for a in ads if a.get("MyType") == "Job"]
    machines = [a for a in ads if a.get("MyType") == "Machine"]
    assert len(jobs) + len(machines) == len(ads)
    tally = AdTally()
    read = 0
    for job_ad in jobs:
        try:
            read += to_job("schedd@vm", job_ad, tally) is not None
        except BadAd as exc:
            tally.reject(str(exc))
    assert read + tally.off_slots + tally.rejected == len(jobs)
    places = list(to_slots(machines))
    named = {s.name.split("#")[0] for s in places if not isinstance(s, BadAd)}
    unavailable = [a for a in machines if a.get("State") in ("Owner", "Drained", "Delete")]
    assert len(named) + sum(isinstance(s, BadAd) for s in places) + len(unavailable) == len(machines)


def test_every_job_of_a_real_queue_reads_as_the_negotiator_would():
    tally = AdTally()
    entries = {}
    for job_ad in fixture("jobs.ads"):
        entry = to_job("schedd@vm", job_ad, tally)
        if entry is not None:
            entries[entry.job.id.local] = entry
    # The scheduler-universe job (as DAGMan runs) and the local-universe one occupy no slot.
    assert tally.off_slots == 2 and "43.0" not in entries and "44.0" not in entries
    assert not tally and tally.examples == []  # nothing rejected, nothing defaulted
    jobs = {k: e.job for k, e in entries.items()}
    # A stock submit file: RequestMemory is an expression, evaluated in the job's own ad.
    stock = jobs["37.0"]
    assert (stock.owner, stock.state, stock.cpus, stock.memory) == ("alice", JobState.RUNNING, 1, 2)
    assert stock.slot == "slot1_1@vm" and stock.start_time is not None
    assert (jobs["38.0"].cpus, jobs["38.0"].memory) == (4, 2048)
    # Disk in KiB as HTCondor counts it: a literal request, and the stock expression (DiskUsage).
    assert jobs["38.0"].disk == 1048576 and stock.disk == 45
    assert jobs["41.0"].state is JobState.IDLE and jobs["41.0"].cpus == 16
    assert jobs["42.0"].state is JobState.HELD
    # An accounting group: the job counts for the group, and is charged to group.user.
    assert jobs["40.0"].owner == "group_physics.cms"
    assert entries["40.0"].submitter == "group_physics.cms.bob@vm"
    assert entries["39.0"].submitter == "bob@vm"


def test_the_schedd_query_leaves_out_what_occupies_no_slot():
    constraint = classad2.ExprTree(JOB_CONSTRAINT)
    kept = [a for a in fixture("jobs.ads") if constraint.eval(a) is True]
    ids = sorted(f"{a['ClusterId']}.{a['ProcId']}" for a in kept)
    # 42.0 is held (not demand), 43.0 and 44.0 run in the scheduler and local universes.
    assert ids == ["37.0", "37.1", "37.2", "38.0", "39.0", "40.0", "40.1", "41.0"]


def test_real_machine_ads():
    static = list(to_slots(fixture("machines-static.ads")))
    assert len(static) == 20 and all(s.cpus == 1 for s in static if not isinstance(s, BadAd))
    partitionable = list(to_slots(fixture("machines-partitionable.ads")))
    assert not [s for s in partitionable if isinstance(s, BadAd)]
    slots = {s.name: s for s in partitionable if isinstance(s, Slot)}
    # As machines-partitionable.summary has them: each partitionable slot with what is unclaimed,
    # each dynamic slot with what it holds and its parent.
    assert slots["slot1@vm"] == Slot("slot1@vm", 2, 6784, 1, 38944963, partitionable=True)
    assert slots["slot2@vm"] == Slot("slot2@vm", 8, 9984, 2, 39998659, partitionable=True)
    assert slots["slot1_4@vm"] == Slot("slot1_4@vm", 4, 2048, 0, 1049600, parent="slot1@vm")
    assert slots["slot1_5@vm"] == Slot("slot1_5@vm", 1, 1024, 1, 2048, parent="slot1@vm")
    assert slots["slot2_2@vm"].parent == "slot2@vm"
    assert len(slots) == 9
    # Together: two machines of 10 cores, 10 GiB and 2 GPUs each.
    snapshot = Snapshot(0.0, tuple(slots.values()), ())
    assert snapshot.totals()[1:4] == (20.0, 2 * 10240.0, 4.0)
    # and each its own disk (the unclaimed part of a machine's disk is what its filesystem has free)
    assert abs(snapshot.totals()[4] - (40002754 + 39998659 + 2048 * 2)) < 10
    assert snapshot.capacity == 7 + 10  # dynamic slots, and one per unclaimed core


@pytest.mark.parametrize("attr, text, expected", [
    ("RequestMemory", "undefined", 0),
    ("RequestMemory", "MemoryUsage", 0),  # refers to something the ad does not have
    ("RequestMemory", "1/0", 0),
    ("RequestMemory", '"lots"', 0),
    ("RequestMemory", "ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024)", 4),
    ("RequestCpus", "undefined", 1),
    ("RequestCpus", "error", 1),
    ("RequestCpus", "2 * 3", 6),
])
def test_requests_are_evaluated_and_undefined_gets_its_default(attr, text, expected):
    job_ad = ad(**RUNNING, ImageSize=3500)
    job_ad[attr] = classad2.ExprTree(text)
    tally = AdTally()
    entry = to_job("s", job_ad, tally)
    assert entry is not None
    assert getattr(entry.job, "memory" if attr == "RequestMemory" else "cpus") == expected
    if text.startswith(("ifthenelse", "2 *")):
        assert not tally
    else:  # counted, and shown as it was (undefined is never read as the number 2)
        assert tally.defaulted == {attr: 1} and tally.rejected == 0
        assert "s#7.3" in tally.examples[0] and attr in tally.examples[0]


FIELD = {"RequestCpus": "cpus", "RequestMemory": "memory", "RequestGPUs": "gpus", "RequestDisk": "disk",
         "QDate": "submit_time", "JobCurrentStartDate": "start_time", "LastCkptTime": "checkpoint_time"}
# What each attribute reads as when its value cannot be taken (a job's Job refuses negative
# requests and times that are not finite, so the reading must never hand it one).
STANDS_IN = {"RequestCpus": 1, "RequestMemory": 0, "RequestGPUs": 0, "RequestDisk": 0, "QDate": 0.0,
             "JobCurrentStartDate": None, "LastCkptTime": None}


@pytest.mark.parametrize("attr", sorted(FIELD))
@pytest.mark.parametrize("value", [-1, -1e19, -(2**62), float("nan"), float("inf"), float("-inf"), 1e19, 2**62,
                                   classad2.ExprTree("-1 * 2"), classad2.ExprTree('real("nan")')])
def test_negative_nan_and_huge_numbers_are_counted_defaults_never_a_bad_job(attr, value):
    job_ad = ad(**RUNNING)
    job_ad[attr] = value
    tally = AdTally()
    entry = to_job("s", job_ad, tally)
    assert entry is not None and getattr(entry.job, FIELD[attr]) == STANDS_IN[attr]
    assert tally.defaulted == {attr: 1} and tally.rejected == 0
    assert "s#7.3" in tally.examples[0] and "\n" not in tally.examples[0]


def test_a_tally_keeps_counts_of_everything_and_a_few_examples():
    tally = AdTally()
    for k in range(1000):
        job_ad = ad(**dict(RUNNING, ProcId=k))
        job_ad["RequestMemory"] = classad2.ExprTree("undefined")
        to_job("s", job_ad, tally)
        with pytest.raises(BadAd):
            to_job("s", ad(**{**RUNNING, "ProcId": k, "Owner": classad2.Value.Undefined}), tally)
    assert tally.defaulted == {"RequestMemory": 1000} and len(tally.examples) == 3


def test_a_running_job_with_no_start_counts_and_is_never_a_victim():
    tally = AdTally()
    attrs = {k: v for k, v in RUNNING.items() if k != "JobCurrentStartDate"}
    entry = to_job("s", ad(**attrs), tally)
    assert entry is not None and entry.job.state is JobState.RUNNING and entry.job.start_time is None
    assert tally.defaulted == {"JobCurrentStartDate": 1} and "never a victim" in tally.examples[0]
    snapshot = Snapshot(2000.0, (Slot("slot4@node1", cpus=2),),
                        (entry.job, Job(JobId("s", 8, 0), "bob", JobState.IDLE)))
    plan = decide(snapshot, PolicySettings(ShareTable({"bob": 1}), max_vacates=5))
    assert [v.running for v in plan.owners if v.owner == "alice"] == [1] and plan.vacates == ()


def test_running_job():
    entry = to_job("schedd1", ad(**RUNNING))
    assert entry is not None
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
    assert entry is not None
    assert entry.job.owner == "group_physics"
    assert entry.submitter == "group_physics.alice@site"


@pytest.mark.parametrize("status, state", [(1, JobState.IDLE), (5, JobState.HELD), (6, JobState.RUNNING)])
def test_status_table(status, state):
    attrs = dict(RUNNING, JobStatus=status)
    entry = to_job("s", ad(**attrs))
    assert entry is not None and entry.job.state is state


def test_jobs_transferring_output_or_suspended_hold_their_slot_but_are_never_victims():
    jobs = []
    for k, status in enumerate((2, 6, 7)):
        entry = to_job("s", ad(**dict(RUNNING, ProcId=k, JobStatus=status, RemoteHost=f"slot{k}@n")))
        assert entry is not None and entry.job.state is JobState.RUNNING
        jobs.append(entry.job)
    assert [j.vacatable for j in jobs] == [True, False, False]
    slots = tuple(Slot(f"slot{k}@n", cpus=2) for k in range(3))
    waiting = tuple(Job(JobId("s", 9, k), "bob", JobState.IDLE, cpus=2) for k in range(3))
    plan = decide(Snapshot(2000.0, slots, (*jobs, *waiting)),
                  PolicySettings(ShareTable({"bob": 3}), max_vacates=5))
    alice = next(v for v in plan.owners if v.owner == "alice")
    assert alice.running == 3  # all three count as hers
    assert [v.job for v in plan.vacates] == [jobs[0].id]  # only the one that runs may go


@pytest.mark.parametrize("attr", ["JobCurrentStartDate", "LastCkptTime", "QDate"])
def test_a_time_in_the_future_is_counted_and_never_helps_a_job(attr):
    # The schedd's clock says 2000; a time a day ahead is wrong, and must not make the job look
    # young (the cheapest victim) or old.
    tally = AdTally()
    entry = to_job("s", ad(**dict(RUNNING, ServerTime=2000, **{attr: 2000 + 86400})), tally)
    assert entry is not None
    assert tally.defaulted == {attr: 1}
    job = entry.job
    expected = {"JobCurrentStartDate": job.start_time is None, "LastCkptTime": job.checkpoint_time is None,
                "QDate": job.submit_time == 0.0}
    assert expected[attr]
    # A clock a little behind the schedd's is no reason to distrust a time.
    tally = AdTally()
    near = to_job("s", ad(**dict(RUNNING, ServerTime=2000, JobCurrentStartDate=2100)), tally)
    assert near is not None and near.job.start_time == 2100 and not tally


def test_a_job_counts_for_the_accounting_identity_it_is_charged_to():
    # alice's job names carol as its accounting group: the negotiator charges carol@site, so it
    # counts for carol, and holding alice must never cap carol.
    forged = to_job("s", ad(**RUNNING, AccountingGroup="carol"))
    assert forged is not None and (forged.job.owner, forged.submitter) == ("carol", "carol@site")
    own = to_job("s", ad(**dict(RUNNING, ProcId=4), AcctGroup="group_physics",
                         AccountingGroup="group_physics.alice"))
    assert own is not None and (own.job.owner, own.submitter) == ("group_physics",
                                                                 "group_physics.alice@site")
    # A group the accounting name does not belong to is not believed.
    mixed = to_job("s", ad(**dict(RUNNING, ProcId=5), AcctGroup="group_cms",
                           AccountingGroup="group_physics.alice"))
    assert mixed is not None and mixed.job.owner == "group_physics.alice"
    plain = to_job("s", ad(**dict(RUNNING, ProcId=6)))
    assert plain is not None
    accounts = Accounts()
    for entry in (forged, own, mixed, plain):
        accounts.add(entry)
    assert accounts.submitters["alice"] == {"alice@site"}
    assert accounts.submitters["carol"] == {"carol@site"}
    # An AcctGroup alone is not what the negotiator charges; an event log that records AcctGroup
    # but not AccountingGroup is read by it all the same.
    alone = ad(**RUNNING, AcctGroup="group_physics")
    assert owner_of(alone) == "alice" and owner_of(alone, group_alone=True) == "group_physics"


def test_a_second_slot_ad_of_one_name_is_counted_not_believed():
    items = list(to_slots([ad(Name="slot1@n", Cpus=1, State="Unclaimed"),
                           ad(Name="slot1@n", Cpus=64, State="Unclaimed")]))
    assert [type(i).__name__ for i in items] == ["Slot", "BadAd"]
    assert isinstance(items[0], Slot) and items[0].cpus == 1


def test_a_job_being_vacated_is_vacating_until_it_restarts_or_the_vacate_times_out():
    vacates = Vacates()
    running = to_job("s", ad(**RUNNING))
    assert running is not None
    job = running.job
    vacates.sent(job.id, job.start_time, at=1990.0)
    assert vacates.state(job) is JobState.VACATING
    assert vacates.state(replace(job, start_time=1995.0)) is JobState.RUNNING  # restarted
    assert vacates.settle([replace(job, state=JobState.VACATING)], now=2000.0) == []
    assert vacates.settle([replace(job, state=JobState.VACATING)], now=1990.0 + 601) == [(job.id, 601)]
    assert vacates.state(job) is JobState.RUNNING  # given up on: a victim again if it must be


@pytest.mark.parametrize("missing", ["Owner", "User", "RemoteHost", "JobStatus"])
def test_a_bad_job_ad_is_counted_and_skipped(missing):
    attrs = {k: v for k, v in RUNNING.items() if k != missing}
    with pytest.raises(BadAd, match=missing):
        to_job("s", ad(**attrs))
    tally = AdTally()
    assert reading.translate("s", ad(**attrs), tally, Vacates().state) is None
    assert tally.rejected == 1 and tally.examples[0].startswith(f"s#7.3: {missing} is ")


def test_slots_static_partitionable_and_unavailable():
    items = list(to_slots([
        ad(Name="slot1@a", Cpus=1, Memory=1000, SlotType="Static", State="Claimed"),
        ad(Name="slot1@b", Cpus=3, Memory=3000, SlotType="Partitionable", State="Unclaimed"),
        ad(Name="slot1_1@b", Cpus=1, Memory=1000, SlotType="Dynamic", State="Claimed"),
        ad(Name="slot2@a", Cpus=1, Memory=1000, SlotType="Static", State="Owner"),
        ad(Name="broken", Memory=1000),
    ]))
    bad = [i for i in items if isinstance(i, BadAd)]
    assert len(bad) == 1 and "broken" in str(bad[0])
    assert [(s.name, s.cpus, s.memory, s.parent, s.partitionable) for s in items if isinstance(s, Slot)] == [
        ("slot1@a", 1, 1000, None, False), ("slot1@b", 3, 3000, None, True),
        ("slot1_1@b", 1, 1000, "slot1@b", False)]


def test_dynamic_slots_of_an_unavailable_machine_are_left_out_with_it():
    items = list(to_slots([
        ad(Name="slot1_1@b", Cpus=1, Memory=1000, SlotType="Dynamic", State="Claimed", ParentSlotId=1),
        ad(Name="slot1@b", Cpus=3, Memory=3000, SlotType="Partitionable", State="Drained"),
        ad(Name="oddly_named", Cpus=1, SlotType="Dynamic", State="Claimed"),
    ]))
    assert len(items) == 1 and isinstance(items[0], BadAd) and "without a parent" in str(items[0])


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


@pytest.mark.parametrize("name", ["osep", 'evil" || true || "', "trailing\\", "a\nb", "\x1b[31m", ""])
def test_the_daemon_withdraws_its_own_ad_and_no_other(monkeypatch, name):
    from fakecondor import FakeCondor

    fake = FakeCondor()
    fake.install(monkeypatch)
    others = ["osep@elsewhere", 'evil" || true || "', "", "trailing\\"]
    for other in {name, *others}:
        fake.ads[other] = classad2.ClassAd({"MyType": "OSEP", "Name": other})
    LivePool(LiveSettings(pool="cm.fake", name=name)).withdraw()
    assert fake.advertised == ["INVALIDATE_ADS_GENERIC"]
    assert sorted(fake.ads) == sorted(set(others) - {name})


def test_an_owner_tree_places_real_jobs_by_their_whole_accounting_name():
    import tomllib

    from osep.config.policy import parse_policy
    from osep.config.toml import Table

    text = """[policy]
[owners.group_physics]
share = 4
[owners.group_physics.cms]
share = 2
[owners.group_physics.cms.bob]
share = 1
[owners.group_physics.cms.carol]
share = 1
[owners.alice]
share = 1
"""
    top = Table("tree.toml", tomllib.loads(text))
    tree = parse_policy(top.table("policy"), top.table("owners")).settings.shares
    owners = {}
    for job_ad in fixture("jobs.ads"):
        entry = to_job("schedd@vm", job_ad, naming=tree.owner_of)
        if entry is not None:
            owners[entry.job.id.local] = (entry.job.owner, entry.submitter)
    # bob's jobs in group_physics.cms count for the member bob; the charge is unchanged
    assert owners["40.0"] == ("group_physics.cms.bob", "group_physics.cms.bob@vm")
    assert owners["37.0"][0] == "alice"


def test_the_live_snapshot_says_where_its_time_went(monkeypatch):
    """Queries per daemon (the collector, each schedd) and translation, on the clocks given; the
    snapshot is the one an untimed call gives."""
    fake = FakeCondor()
    fake.run("alice", 3)
    fake.idle("bob", 5)
    fake.queues["schedd2@cm"] = [ad(ClusterId=1, ProcId=k, Owner="carol", User="carol@site", JobStatus=1,
                                    JobUniverse=5, QDate=1, RequestCpus=1) for k in range(4)]
    fake.install(monkeypatch)
    ticks = iter(range(10_000))
    phases = Phases(Clocks(lambda: float(next(ticks)), lambda: 0.0))
    pool = LivePool(LiveSettings(pool="cm.fake"), clock=lambda: 10_000.0)
    timed = pool.timed_snapshot(phases)
    assert timed == pool.snapshot() and len(timed.jobs) == 3  # the idle ones are counted in its view
    assert timed.view is not None and {o: t.idle for o, t in timed.view.tallies.items()} == \
        {"alice": 0, "bob": 5, "carol": 4}
    fields = phases.fields()
    assert set(fields["query_seconds"]) == {"collector", "schedd schedd@cm", "schedd schedd2@cm"}
    assert set(fields["seconds"]) == {"query", "translate", "other", "cycle"}
    assert fields["seconds"]["query"] == sum(fields["query_seconds"].values())

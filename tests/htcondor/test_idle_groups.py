"""Idle jobs read as groups (one ad per owner and request, from ``QueryOpt.GroupBy``): the same plan,
the same accounts and the same counts of odd ads as reading every job ad (``to_job`` on the answer of
one query for every job), on generated queues, on the ads HTCondor 23.9 wrote, and on hostile group
ads (tests/fakecondor.py answers a grouped query as a schedd does)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import classad2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakecondor import SCHEDD, FakeCondor, classad
from osep.config.livepool import LiveSettings
from osep.core.model import Slot, Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.resources import Unit
from osep.core.shares import ShareTable
from osep.htcondor.ads import BadAd
from osep.htcondor.job_ads import JOB_ATTRS, JOB_CONSTRAINT, Accounts, AdTally, IdleGroup, to_idle, to_job
from osep.htcondor.live import LivePool
from osep.htcondor.slot_ads import to_slots

E = classad2.ExprTree
NOW = 1_700_000_000
STOCK_MEMORY = E("ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024)")
OWNERS = ["alice", "bob", "carol", "dave"]
SECOND = "schedd2@cm"
ADS = Path(__file__).parents[1] / "data" / "ads"
POLICIES = [
    PolicySettings(ShareTable({"alice": 1, "bob": 1, "carol": 2, "group_physics": 1}), max_vacates=5),
    PolicySettings(ShareTable({"alice": 3, "bob": 1, "carol": 1, "dave": 1}), target=Target.FEASIBLE,
                   victim_order=VictimOrder.LOST_WORK, unit=Unit.CPUS, max_vacates=20),
    PolicySettings(ShareTable({"alice": {"cpus": 1, "memory": 1}, "bob": {"cpus": 2, "memory": 1},
                               "carol": {"cpus": 1, "memory": 3}}), unit=Unit.DOMINANT, max_vacates=8),
]


class Logged:
    """A logger that keeps the events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def bind(self, **_: Any) -> Logged:
        return self

    def info(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    warning = error = debug = info


def read_every_ad(fake: FakeCondor) -> tuple[Snapshot, AdTally, Accounts]:
    """What osep read before: every job ad of one query per schedd, with osep's projection, through
    to_job."""
    tally, accounts, jobs = AdTally(), Accounts(), []
    for name in fake.queues:
        for whole in fake._query(name, JOB_CONSTRAINT):
            ad = classad(**{k: whole.lookup(k) for k in [*JOB_ATTRS, "ServerTime"] if k in whole})
            try:
                entry = to_job(name, ad, tally)
            except BadAd as exc:
                tally.reject(str(exc))
                continue
            if entry is not None:
                jobs.append(entry.job)
                accounts.add(entry)
    slots = [s for s in to_slots(fake.slots) if isinstance(s, Slot)]
    return Snapshot(time=float(NOW), slots=tuple(slots), jobs=tuple(jobs)), tally, accounts


def read_grouped(fake: FakeCondor, monkeypatch: pytest.MonkeyPatch) -> tuple[Snapshot, Logged, LivePool]:
    fake.install(monkeypatch)
    logged = Logged()
    live = LivePool(LiveSettings(pool="cm.fake"), logger=logged, clock=lambda: 0.0)
    return live.snapshot(), logged, live


def assert_same(fake: FakeCondor, monkeypatch: pytest.MonkeyPatch) -> None:
    before, tally, accounts = read_every_ad(fake)
    now, logged, live = read_grouped(fake, monkeypatch)
    assert now.time == before.time
    assert sorted(map(str, (j.id for j in now.jobs))) == sorted(
        str(j.id) for j in before.jobs if j.state.value != "idle")
    for policy in POLICIES:
        assert decide(now, policy) == decide(before, policy)
    odd = [fields for event, fields in logged.events if event == "odd_ads"]
    if tally:
        assert len(odd) == 1
        assert odd[0]["rejected"] == tally.rejected and odd[0]["defaulted"] == tally.defaulted
    else:
        assert not odd
    seen = live._accounts
    assert (seen.running, seen.idle, seen.submitters, seen.charged) == (
        accounts.running, accounts.idle, accounts.submitters, accounts.charged)


def idle_ad(cluster: int, proc: int, owner: str, **attrs: Any) -> classad2.ClassAd:
    """An idle job of a stock submit file, as the schedd has it."""
    base: dict[str, Any] = {
        "ClusterId": cluster, "ProcId": proc, "Owner": owner, "User": f"{owner}@site", "JobStatus": 1,
        "JobUniverse": 5, "QDate": NOW - 1_000 + cluster, "RequestCpus": 1, "RequestMemory": STOCK_MEMORY,
        "ImageSize": 45, "RequestDisk": E("DiskUsage"), "DiskUsage": 45}
    return classad(**{k: v for k, v in {**base, **attrs}.items() if v is not None})


# What one submission's procs may vary in, and what a whole submission may ask for differently.
PER_PROC: list[dict[str, Any]] = [
    {}, {}, {}, {"ImageSize": 5_000_000}, {"MemoryUsage": 300}, {"RequestCpus": 4}, {"DiskUsage": 10**7},
]
PER_CLUSTER: list[dict[str, Any]] = [
    {}, {"RequestMemory": 2048, "RequestDisk": 1024}, {"RequestCpus": 8, "RequestMemory": 4096},
    {"RequestGPUs": 1}, {"AccountingGroup": "group_physics.bob", "AcctGroup": "group_physics"},
    {"AccountingGroup": "carol"}, {"JobUniverse": 7}, {"JobUniverse": 12}, {"JobStatus": 5},
    {"QDate": NOW + 10_000}, {"RequestMemory": E("error")}, {"RequestCpus": E("undefined")},
    {"Owner": None, "AccountingGroup": None}, {"User": 7}, {"RequestMemory": E("ProcId * 100")},
    {"RequestMemory": E("MyOwnMemory"), "MyOwnMemory": 1000}, {"RequestCpus": E("1 + ImageSize / 10000000")},
]


def generated(seed: int) -> FakeCondor:
    """Two schedds' queues of idle, running, held and off-slot jobs, some clusters with procs of
    several requests, on one-core and partitionable slots."""
    rnd = random.Random(seed)
    fake = FakeCondor(now=NOW)
    fake.queues[SECOND] = []
    slot = 0
    for name in (SCHEDD, SECOND):
        for cluster in range(1, rnd.randint(2, 14)):
            owner = rnd.choice(OWNERS)
            whole = rnd.choice(PER_CLUSTER)
            for proc in range(rnd.randint(1, 40)):
                attrs = {**whole, **(rnd.choice(PER_PROC) if rnd.random() < 0.3 else {})}
                ad = idle_ad(cluster, proc, owner, **attrs)
                if rnd.random() < 0.15 and ad.get("JobStatus") == 1 and ad.get("JobUniverse") == 5 \
                        and "Owner" in ad and ad.get("User") != 7:
                    slot += 1
                    host = f"slot{slot}@node"
                    fake.slots.append(classad(Name=host, Cpus=8, Memory=64_000, SlotType="Static",
                                              State="Claimed", SlotWeight=8))
                    ad["JobStatus"] = 2
                    ad["RemoteHost"] = host
                    ad["JobCurrentStartDate"] = NOW - rnd.randint(60, 86_400)
                fake.queues[name].append(ad)
    for k in range(rnd.randint(0, 6)):
        fake.slots.append(classad(Name=f"free{k}@node", Cpus=rnd.choice([1, 4, 16]), Memory=64_000,
                                  SlotType="Static", State="Unclaimed"))
    fake.slots.append(classad(Name="slot1@big", Cpus=rnd.randint(0, 32), Memory=100_000, GPUs=2,
                              SlotType="Partitionable", State="Unclaimed"))
    return fake


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_grouped_idle_jobs_give_the_plan_reading_every_ad_gives(seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(generated(seed), monkeypatch)


def test_the_ads_htcondor_wrote_many_times_over(monkeypatch):
    """The 23.9 ads (stock submit files, accounting groups, a held job, DAGMan's scheduler universe,
    the local universe, on partitionable slots), each job also queued idle 50 times over in
    clusters of its own, in both schedds."""
    fake = FakeCondor(now=NOW)
    fake.queues[SECOND] = []
    fake.slots.extend(classad2.parseAds((ADS / "machines-partitionable.ads").read_text()))
    jobs = list(classad2.parseAds((ADS / "jobs.ads").read_text()))
    fake.jobs.extend(jobs)
    for k, job in enumerate(jobs):
        for name in (SCHEDD, SECOND):
            for proc in range(50):
                copy = classad2.ClassAd(repr(job))
                copy["ClusterId"], copy["ProcId"] = 1_000 + k, proc
                if copy["JobStatus"] == 2:
                    copy["JobStatus"] = 1
                    for attr in ("RemoteHost", "JobCurrentStartDate"):
                        copy.pop(attr, None)
                copy["ServerTime"] = NOW
                fake.queues[name].append(copy)
    for job in jobs:
        job["ServerTime"] = NOW
    assert_same(fake, monkeypatch)


def test_a_schedd_with_only_idle_jobs_is_asked_for_its_clock(monkeypatch):
    fake = FakeCondor(now=NOW)
    fake.idle("alice", 30)
    snapshot, _, _ = read_grouped(fake, monkeypatch)
    assert snapshot.time == NOW and snapshot.jobs == ()
    assert snapshot.view is not None and snapshot.view.tallies["alice"].idle == 30


GOOD = {"Owner": "alice", "User": "alice@site", "JobStatus": 1, "JobUniverse": 5, "RequestCpus": 2,
        "RequestMemory": 10, "RequestDisk": 100, "JobCount": 30, "JobIds": "7.2 ... 9.0", "QDate": NOW - 5}


@pytest.mark.parametrize(("change", "rejected"), [
    ({}, 0),
    ({"JobCount": None}, 1), ({"JobCount": 0}, 1), ({"JobCount": -3}, 1), ({"JobCount": 2**40}, 1),
    ({"JobCount": "30"}, 1), ({"JobCount": E("undefined")}, 1), ({"JobCount": True}, 1),
    ({"JobIds": None}, 30), ({"JobIds": ""}, 30), ({"JobIds": "7"}, 30), ({"JobIds": "x.y ... 9.0"}, 30),
    ({"JobIds": "-1.0"}, 30), ({"JobIds": "99999999999.0"}, 30), ({"JobIds": "٧.2"}, 30),
    ({"JobIds": 7}, 30), ({"JobIds": ["7.2"]}, 30),
    ({"Owner": None}, 30), ({"User": ""}, 30), ({"JobStatus": 2}, 30), ({"JobStatus": E("error")}, 30),
])
def test_a_group_that_cannot_be_read_is_counted_job_by_job(change, rejected):
    attrs = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    tally = AdTally()
    group = to_idle(SCHEDD, classad(**attrs), tally, server_time=NOW)
    assert tally.rejected == rejected
    if rejected:
        assert group is None and len(tally.examples) == 1
    else:
        assert group == IdleGroup("alice", "alice@site", (2, 10, 0, 100), 30, group.first)
        assert str(group.first) == f"{SCHEDD}#7.2"


def test_a_group_counts_its_defaults_once_per_job():
    tally = AdTally()
    group = to_idle(SCHEDD, classad(**{**GOOD, "RequestMemory": E("error"), "QDate": NOW + 1_000}), tally,
                    server_time=NOW)
    assert group is not None and group.shape == (2, 0, 0, 100)
    assert tally.defaulted == {"RequestMemory": 30, "QDate": 30} and tally.rejected == 0
    assert tally.examples[0].startswith(f"{SCHEDD}#7.2: RequestMemory is error")


def test_what_an_expression_refers_to_beyond_the_projection_is_not_read():
    """As a query with osep's projection leaves it out: the same request as reading the job ad."""
    tally = AdTally()
    group = to_idle(SCHEDD, classad(**{**GOOD, "RequestMemory": E("MyOwnMemory"), "MyOwnMemory": 500}),
                    tally, server_time=NOW)
    assert group is not None and group.shape == (2, 0, 0, 100) and tally.defaulted == {"RequestMemory": 30}

"""JobReader: the procs of one submission translated once, with exactly what to_job gives each ad
(jobs, rejections and the tally), whatever the ads hold."""

from __future__ import annotations

from typing import Any

import classad2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.htcondor import ads as reading
from osep.htcondor.ads import AdTally, BadAd, JobReader, to_job

E = classad2.ExprTree
NOW = 1_700_000_000
STOCK_MEMORY = "ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024)"


def job_ad(proc: int, cluster: int = 5, owner: str = "alice", **attrs: Any) -> classad2.ClassAd:
    """An idle job of a stock submit file, as a schedd query with osep's projection returns it."""
    out = classad2.ClassAd()
    base: dict[str, Any] = {
        "ClusterId": cluster, "ProcId": proc, "Owner": owner, "User": f"{owner}@site", "JobStatus": 1,
        "JobUniverse": 5, "QDate": NOW - 100, "ServerTime": NOW, "RequestCpus": 1,
        "RequestMemory": E(STOCK_MEMORY), "ImageSize": 45, "RequestDisk": E("DiskUsage"), "DiskUsage": 45,
    }
    for key, value in {**base, **attrs}.items():
        if value is not None:
            out[key] = value
    return out


def both(ads: list[classad2.ClassAd]) -> tuple[list[Any], AdTally, list[Any], AdTally, JobReader]:
    """Each ad through to_job and through one reader: the results (an exception's text where one was
    raised) and the tallies."""
    expected: list[Any] = []
    tally = AdTally()
    for ad in ads:
        try:
            expected.append(to_job("schedd@a", ad, tally))
        except BadAd as exc:
            expected.append(f"BadAd: {exc}")
    got: list[Any] = []
    reader = JobReader("schedd@a", AdTally())
    for ad in ads:
        try:
            got.append(reader.read(ad))
        except BadAd as exc:
            got.append(f"BadAd: {exc}")
    return expected, tally, got, reader.tally, reader


@pytest.mark.parametrize(("name", "ads", "reused"), [
    # A cluster's template is its second ad that could be one: a cluster of one job costs nothing more.
    ("a stock submission of 100 idle procs", [job_ad(k) for k in range(100)], 98),
    ("two submissions, one after the other",
     [job_ad(k) for k in range(5)] + [job_ad(k, cluster=6, owner="bob") for k in range(5)], 6),
    ("three submissions, their procs interleaved as a schedd lists them",
     [job_ad(k, cluster=c, owner=o) for k in range(10) for c, o in ((1, "a"), (2, "b"), (3, "a"))], 24),
    ("clusters of one job", [job_ad(0, cluster=c) for c in range(1, 20)], 0),
    ("a proc changed with condor_qedit", [job_ad(0), job_ad(1), job_ad(2, RequestCpus=4), job_ad(3)], 1),
    ("a template made again after two ads it did not match",
     [job_ad(k, RequestCpus=4) for k in range(2)] + [job_ad(k) for k in range(2, 10)], 6),
    ("running procs are never templates",
     [job_ad(k, JobStatus=2, RemoteHost=f"slot{k}@a", JobCurrentStartDate=NOW - 10) for k in range(4)], 0),
    ("an expression naming ProcId", [job_ad(k, RequestMemory=E("100 + ProcId")) for k in range(4)], 0),
    ("an expression naming it in another case", [job_ad(k, RequestMemory=E("MY.procid")) for k in range(4)], 0),
    ("eval() may name it too", [job_ad(k, RequestMemory=E('eval(strcat("Proc", "Id"))')) for k in range(4)], 0),
    ("time() too", [job_ad(k, QDate=E("time() - 5")) for k in range(4)], 0),
    ("a defaulted request is counted for every ad", [job_ad(k, RequestCpus=E("undefined")) for k in range(4)], 0),
    ("a ProcId that cannot be read",
     [job_ad(0), job_ad(1), job_ad(-1), job_ad(2**31), job_ad(2), job_ad(1.0), job_ad(E("3"))], 2),
    ("no ProcId at all", [job_ad(0), job_ad(1), job_ad(0, ProcId=None), job_ad(2)], 1),
    ("a ClusterId that is not a plain number", [job_ad(k, cluster=5.0) for k in range(4)], 0),
    ("a scheduler-universe job", [job_ad(k, JobUniverse=7) for k in range(3)], 0),
    ("an owner that only differs in case", [job_ad(0), job_ad(1, Owner="Alice"), job_ad(2)], 0),
    ("an accounting group", [job_ad(k, AccountingGroup="group_x.alice", AcctGroup="group_x")
                             for k in range(3)], 1),
])
def test_the_reader_gives_what_to_job_gives(name, ads, reused):
    expected, tally, got, got_tally, reader = both(ads)
    assert got == expected, name
    assert got_tally == tally, name
    assert reader.reused == reused, name


def test_random_is_evaluated_for_every_ad():
    """random() differs at each evaluation (so to_job's result for such an ad is not a function of
    it): no such ad is a template."""
    reader = JobReader("schedd@a")
    for k in range(20):
        reader.read(job_ad(k, RequestCpus=E("random(4) + 1")))
    assert reader.reused == 0


def test_a_hit_is_the_same_job_under_its_own_number():
    reader = JobReader("schedd@a", pool="p")
    reader.read(job_ad(0))
    reader.read(job_ad(1))
    second = reader.read(job_ad(7))
    assert second is not None and reader.reused == 1
    assert second.job.id.local == "5.7" and second.job.id.pool == "p"
    assert second == to_job("schedd@a", job_ad(7), pool="p")


def test_a_template_is_not_the_callers_ad():
    """The reader compares against its own copy: the ads it was given are left as they were."""
    ads = [job_ad(k) for k in range(3)]
    reader = JobReader("schedd@a")
    for ad in ads:
        reader.read(ad)
    assert [ad["ProcId"] for ad in ads] == [0, 1, 2] and reader.reused == 1


def test_the_templates_kept_are_bounded(monkeypatch):
    """Past TEMPLATES clusters, the oldest template goes: its cluster's ads are translated in full
    again (and the results stay the same)."""
    monkeypatch.setattr(reading, "TEMPLATES", 2)
    queue = [job_ad(k, cluster=c) for k in range(6) for c in (1, 2, 3)]
    expected, tally, got, got_tally, reader = both(queue)
    assert got == expected and got_tally == tally
    assert reader.reused < 12 and len(reader._templates) == 2


VALUES: list[Any] = [
    1, 2, 0, -3, 2.5, 1e19, float("nan"), True, "x", "", E("undefined"), E("error"), E("ProcId"),
    E("ProcId * 2"), E("1 + 1"), E("RequestCpus"), [1, 2], E("[a = 1]"),
]
ATTRS = ["ProcId", "ClusterId", "JobStatus", "RequestCpus", "RequestMemory", "QDate", "Owner", "User",
         "JobUniverse", "AccountingGroup", "ServerTime"]


@st.composite
def queues(draw: st.DrawFn) -> list[classad2.ClassAd]:
    """Runs of procs of a few submissions, some changed here and there (hostile values included)."""
    ads = []
    for cluster in range(1, draw(st.integers(1, 4)) + 1):
        owner = draw(st.sampled_from(["alice", "bob"]))
        for proc in range(draw(st.integers(1, 8))):
            ad = job_ad(proc, cluster=cluster, owner=owner)
            if draw(st.booleans()):
                for attr in draw(st.lists(st.sampled_from(ATTRS), max_size=2)):
                    value = draw(st.sampled_from(VALUES))
                    if attr == "JobStatus" and value == 2:
                        ad["RemoteHost"] = f"slot{proc}@a"
                        ad["JobCurrentStartDate"] = NOW - 50
                    ad[attr] = value
            ads.append(ad)
    return ads


@settings(max_examples=200, deadline=None)
@given(queues())
def test_any_queue_reads_the_same_through_the_reader(ads):
    expected, tally, got, got_tally, _ = both(ads)
    assert got == expected
    assert got_tally == tally

"""Hostile and damaged ads through the real translation and whole cycles (fake bindings,
tests/fakecondor.py; real everything else): no ad may stop a cycle, hide a valid job, or make osep
act on a job it should not touch.

Each cycle's pool is generated from a seed: valid jobs and slots carrying hostile values wherever a
user or a broken daemon can put them (expressions, undefined, error, infinities, NaN, 1e19, negative
numbers, strings with newlines and terminal escapes, lists, nested ads, times in the future), and ads
that cannot be read at all. The figures (ads read, rejected, vacates) are printed at the end.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import classad2
import pytest

from fakecondor import FakeCondor, classad
from osep.act.actuator import Actuator, Limits
from osep.act.cycle import Enforcer
from osep.config.livepool import LiveSettings
from osep.core.model import JobId, JobState
from osep.core.policy import PolicySettings
from osep.core.resources import Unit
from osep.core.shares import ShareTable
from osep.htcondor.job_ads import owner_of
from osep.htcondor.live import LivePool

NOW = 1_700_000_000
CYCLES = 250
SCHEDDS = ["schedd@submit", 'evil" || true || "@submit']
OWNERS = ["alice", "bob", "carol", "dave"]

E = classad2.ExprTree
# Values a number-valued attribute may hold in a hostile or broken ad.
BAD_NUMBERS: list[Any] = [
    E("undefined"), E("error"), E("1/0"), 1e19, -1e19, -5, float("inf"), float("-inf"), float("nan"),
    2**62, E("99999999999999999999999"), E("9223372036854775807 + 1"), "lots", "", "7\n8", [1, 2],
    E("[a = 1]"), True, E("NoSuchAttribute"), E("ifthenelse(MemoryUsage =!= undefined, MemoryUsage, 1)"),
    0.5, 10_000_000, E("2 * 3"), E("RequestCpus"),  # the last: a reference to itself
]
# Values a string-valued attribute may hold.
BAD_STRINGS: list[Any] = [
    "", "a\nb", "\x1b[31mred\x1b[0m", 'evil" || true || "', "x" * 5_000, 5, E("undefined"), E("error"),
    ["alice"], "é\u202eevil", "back\\slash\\",
]


class Events:
    """A logger that keeps every event (with what the caller bound) for the test to read."""

    def __init__(self, events: list[dict[str, Any]] | None = None, **bound: Any) -> None:
        self.events = events if events is not None else []
        self.bound = bound

    def bind(self, **context: Any) -> Events:
        return Events(self.events, **{**self.bound, **context})

    def _add(self, level: str, event: str, **fields: Any) -> None:
        self.events.append({"level": level, "event": event, **self.bound, **fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._add("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self._add("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._add("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._add("error", event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._add("error", event, **fields)


def hostile(rnd: random.Random, ad: classad2.ClassAd, attrs: list[str], values: list[Any],
            chance: float = 0.3) -> None:
    for attr in attrs:
        if rnd.random() < chance:
            ad[attr] = rnd.choice(values)


class Pool:
    """One generated pool: the ads, and what a correct reading of them must give."""

    def __init__(self, seed: int) -> None:
        rnd = random.Random(seed)
        self.slots: list[classad2.ClassAd] = []
        self.jobs: dict[str, list[classad2.ClassAd]] = {name: [] for name in SCHEDDS}
        self.valid: set[JobId] = set()  # jobs that hold a slot, which must be in the snapshot
        self.idle: list[tuple[str, classad2.ClassAd]] = []  # idle jobs, which must be counted
        self.off_slot: set[JobId] = set()  # valid, but occupy no execute slot
        self.vacatable: set[JobId] = set()  # running jobs a vacate may take
        self.bad_slots = 0
        self.bad_jobs = 0
        free: list[str] = []
        # Valid places: static one-core slots and partitionable machines with dynamic slots.
        for m in range(rnd.randint(2, 6)):
            for k in range(rnd.randint(1, 6)):
                name = f"slot{k + 1}@static{m}"
                ad = classad(Name=name, Cpus=1, Memory=2048, SlotType="Static", State="Unclaimed")
                hostile(rnd, ad, ["Memory", "GPUs", "Disk", "SlotWeight"], BAD_NUMBERS, 0.2)
                self.slots.append(ad)
                free.append(name)
        for m in range(rnd.randint(0, 3)):
            parent = f"slot1@machine{m}"
            for k in range(rnd.randint(0, 6)):
                name = f"slot1_{k + 1}@machine{m}"
                ad = classad(Name=name, Cpus=1, Memory=1024, SlotType="Dynamic", State="Unclaimed",
                             ParentSlotId=1)
                hostile(rnd, ad, ["Memory", "GPUs", "Disk", "SlotWeight"], BAD_NUMBERS, 0.2)
                self.slots.append(ad)
                free.append(name)
            ad = classad(Name=parent, Cpus=rnd.choice([0, 2, 10_000_000]), Memory=4096,
                         SlotType="Partitionable", State="Unclaimed")
            hostile(rnd, ad, ["Memory", "GPUs", "Disk", "SlotWeight"], BAD_NUMBERS, 0.2)
            self.slots.append(ad)
        rnd.shuffle(free)
        # Slot ads that cannot be read: no usable name or no usable cores.
        for k in range(rnd.randint(0, 8)):
            ad = classad(Name=f"broken{k}@nowhere", Cpus=1, State="Unclaimed")
            if rnd.random() < 0.5:
                ad["Name"] = rnd.choice([s for s in BAD_STRINGS if not isinstance(s, str) or s == ""])
            else:
                ad["Cpus"] = rnd.choice([v for v in BAD_NUMBERS if _unreadable_number(v)])
            hostile(rnd, ad, ["Memory", "GPUs", "Disk", "SlotType", "State"], BAD_NUMBERS + BAD_STRINGS)
            if ad.get("State") == "Claimed":
                ad["State"] = "Unclaimed"
            self.slots.append(ad)
            self.bad_slots += 1
        rnd.shuffle(self.slots)
        # Jobs: the same cluster.proc on both schedds, to catch a vacate sent to the wrong one.
        for schedd in SCHEDDS:
            for cluster in range(1, rnd.randint(2, 12)):
                owner = rnd.choice(OWNERS)
                for proc in range(rnd.randint(1, 4)):
                    job_id = JobId(schedd, cluster, proc)
                    ad = self.job(rnd, owner, cluster, proc)
                    kind = rnd.random()
                    if kind < 0.45 and free:
                        slot = free.pop()
                        status = rnd.choice([2, 2, 2, 2, 6, 7])
                        ad["JobStatus"] = status
                        ad["RemoteHost"] = slot
                        ad["JobCurrentStartDate"] = NOW - rnd.randint(0, 86_400)
                        self._claim(slot, owner)
                        if status == 2:
                            self.vacatable.add(job_id)
                        self.valid.add(job_id)
                    elif kind < 0.8:
                        self.idle.append((schedd, ad))
                    elif kind < 0.85:
                        ad["JobUniverse"] = rnd.choice([7, 12])  # DAGMan, local
                        self.off_slot.add(job_id)
                    else:  # an ad nobody can name or place (it stays idle: no slot is claimed)
                        broken = rnd.choice(["ClusterId", "ProcId", "Owner", "User", "JobStatus"])
                        if broken in ("ClusterId", "ProcId"):
                            # An idle job is named by its place in the queue (a schedd's keys, which
                            # condor_qedit cannot change), not by what its ad says: counted all the same.
                            ad[broken] = rnd.choice([v for v in BAD_NUMBERS if _unreadable_number(v)
                                                     and not isinstance(v, float)])
                            self.idle.append((schedd, ad))
                            self.jobs[schedd].append(ad)
                            continue
                        if broken in ("Owner", "User"):
                            ad[broken] = rnd.choice([v for v in BAD_STRINGS if not isinstance(v, str) or not v])
                            if broken == "Owner":  # nothing else may name an owner either
                                for other in ("AcctGroup", "AccountingGroup"):
                                    if other in ad:
                                        del ad[other]
                        elif broken == "JobStatus":
                            # The schedd's query (JobStatus 1, 2, 6 or 7) leaves these out.
                            ad[broken] = rnd.choice([0, 99, -1, E("undefined"), "running"])
                            self.jobs[schedd].append(ad)
                            continue
                        else:
                            ad[broken] = rnd.choice([v for v in BAD_NUMBERS if _unreadable_number(v)
                                                     and not isinstance(v, float)])
                        self.bad_jobs += 1
                    self.jobs[schedd].append(ad)

    def job(self, rnd: random.Random, owner: str, cluster: int, proc: int) -> classad2.ClassAd:
        ad = classad2.ClassAd()
        ad["ClusterId"] = cluster
        ad["ProcId"] = proc
        ad["Owner"] = owner
        ad["User"] = f"{owner}@site"
        ad["JobStatus"] = 1
        ad["JobUniverse"] = 5
        ad["QDate"] = NOW - 90_000
        ad["ServerTime"] = NOW
        ad["RequestCpus"] = 1
        ad["RequestMemory"] = E("ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024)")
        ad["ImageSize"] = 1000
        ad["RequestDisk"] = E("DiskUsage")
        ad["DiskUsage"] = 45
        # What a user can set (condor_qedit, +Attr in a submit file) takes any value at all.
        hostile(rnd, ad, ["RequestCpus", "RequestMemory", "RequestGPUs", "RequestDisk", "QDate",
                          "LastCkptTime", "MemoryUsage", "ImageSize", "DiskUsage"], BAD_NUMBERS)
        if rnd.random() < 0.1:
            ad["AcctGroup"] = rnd.choice(BAD_STRINGS)
        if rnd.random() < 0.15:  # accounting groups, consistent or not, shared or forged
            ad["AccountingGroup"] = rnd.choice(["group_x.alice", "group_x.bob", "carol", "bob",
                                                E("undefined"), 7])
            if rnd.random() < 0.5:
                ad["AcctGroup"] = "group_x"
        return ad

    def _claim(self, slot: str, owner: str) -> None:
        for ad in self.slots:
            if ad.get("Name") == slot:
                ad["State"] = "Claimed"
                ad["RemoteOwner"] = f"{owner}@site"


def _unreadable_number(value: Any) -> bool:
    """Whether ``value`` can never be read as a slot's cores or a job's id (no number in range)."""
    if isinstance(value, (bool, str, list)):
        return True
    if isinstance(value, classad2.ExprTree):
        return str(value) in ("undefined", "error", "1/0", "[a = 1]", "NoSuchAttribute",
                              "9223372036854775807 + 1")
    return math.isnan(value) or not 0 <= value <= 2**31 - 1


def run(monkeypatch, seed: int) -> tuple[Pool, FakeCondor, list[dict[str, Any]], Any, Any]:
    pool = Pool(seed)
    edge = FakeCondor(now=NOW)
    edge.slots, edge.queues = pool.slots, pool.jobs
    edge.install(monkeypatch)
    events = Events()
    live = LivePool(LiveSettings(pool="cm.fake"), logger=events, clock=lambda: float(NOW))
    taken: list[Any] = []
    snapshot = live.snapshot

    def keep() -> Any:
        taken.append(snapshot())
        return taken[-1]

    live.snapshot = keep  # type: ignore[method-assign]
    shares = ShareTable({"alice": {"cpus": 3}, "bob": {"cpus": 6}, "carol": {"cpus": 2}})
    enforcer = Enforcer(PolicySettings(shares, unit=Unit.CPUS, max_vacates=20),
                        Actuator(live, Limits()), events)
    report = enforcer.run_cycle(live)
    return pool, edge, events.events, taken[0], report


FIGURES: dict[str, int] = {}


@pytest.mark.parametrize("seed", range(CYCLES))
def test_no_ad_stops_a_cycle_hides_a_job_or_misdirects_an_action(monkeypatch, seed):
    pool, edge, events, snapshot, report = run(monkeypatch, seed)
    seen = {j.id: j for j in snapshot.jobs}
    # Every valid job that holds a slot is in the snapshot, every idle one is counted for its
    # owner; none that occupies no execute slot is either.
    missing = pool.valid - set(seen)
    assert not missing, f"valid jobs dropped: {sorted(map(str, missing))}"
    assert not (pool.off_slot & set(seen))
    idle = Counter(owner_of(ad) for _, ad in pool.idle)
    assert {o: t.idle for o, t in snapshot.view.tallies.items() if t.idle} == idle
    # Every rejected ad is counted, in one line for the whole cycle.
    odd = [e for e in events if e["event"] == "odd_ads"]
    expected = pool.bad_jobs + pool.bad_slots
    if expected:
        assert len(odd) == 1 and odd[0]["rejected"] == expected, odd
        assert len(odd[0]["examples"]) <= 3
    assert not [e for e in events if e["event"] == "cycle_failed"]
    # Vacates go to the schedd that holds the job, only to jobs that run and may be vacated.
    for schedd, local in edge.vacated:
        cluster, proc = (int(x) for x in local.split("."))
        job_id = JobId(schedd, cluster, proc)
        assert job_id in pool.vacatable, f"vacated {job_id}, which may not be"
        assert seen[job_id].state is JobState.RUNNING
    # Ceilings are never absurd, and a submitter is capped only if every job charged to it
    # (its AccountingGroup, else its User, as the negotiator charges) counts for a held owner.
    charged: dict[str, set[str]] = {}
    for schedd, ads in pool.jobs.items():
        for ad in ads:
            cluster, proc = ad.get("ClusterId"), ad.get("ProcId")
            if not all(type(x) is int for x in (cluster, proc)):  # not bool, not classad2.Value
                continue
            job = seen.get(JobId(schedd, cluster, proc))
            if job is not None:
                group = ad.eval("AccountingGroup") if "AccountingGroup" in ad else None
                submitter = f"{group}@site" if isinstance(group, str) and group else ad["User"]
                charged.setdefault(submitter, set()).add(job.owner)
    for _, ad in pool.idle:
        group = ad.eval("AccountingGroup") if "AccountingGroup" in ad else None
        submitter = f"{group}@site" if isinstance(group, str) and group else ad["User"]
        charged.setdefault(submitter, set()).add(owner_of(ad))
    for who, value in edge.ceiling_commands:
        assert value == -1 or charged.get(who, set()) <= set(report.plan.holds), (who, value)
        assert -1 <= value < 2**31
    FIGURES["ads"] = FIGURES.get("ads", 0) + len(pool.slots) + sum(map(len, pool.jobs.values()))
    FIGURES["rejected"] = FIGURES.get("rejected", 0) + expected
    FIGURES["vacates"] = FIGURES.get("vacates", 0) + len(edge.vacated)
    if seed == CYCLES - 1:
        print(f"\nhostile ads: {FIGURES}")

"""A pool as the HTCondor bindings show it, for tests of the live adapter and of ``osep run`` and
``osep release`` without HTCondor: a collector (slot ads and the daemon's own ad), schedds (job ads,
vacates; one, ``SCHEDD``, unless more are added to ``queues``; each schedd's configuration,
``schedd_config``) and a negotiator (submitter ceilings, and its own configuration,
``negotiator_config``), whose configurations ``RemoteParam`` reads as the real one does. ``ping``
answers as a daemon does: granted, as ``identity``, unless the daemon is down or the right is in
``denied``.
:meth:`FakeCondor.install` puts it in place of the bindings in the live adapter's modules; the knobs
are its ``param``. Only the network is fake: queries evaluate their constraints in the ads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import classad2
import htcondor2
import pytest

NEGOTIATOR = "negotiator@cm"
SCHEDD = "schedd@cm"
COLLECTOR = "collector@cm"
VERSION = "$CondorVersion: 23.9.6 2024-07-12 $"


def classad(**attrs: Any) -> classad2.ClassAd:
    """A ClassAd of ``attrs``, as the bindings return them."""
    out = classad2.ClassAd()
    for key, value in attrs.items():
        out[key] = value
    return out


class FakeCondor:
    def __init__(self, knobs: dict[str, str] | None = None, now: int = 10_000) -> None:
        self.knobs = dict(knobs or {})
        # The negotiator's own configuration: key (spelled as in its files) -> value; None is a key
        # with an empty value, which the daemon answers as "Not defined".
        self.negotiator_config: dict[str, str | None] = {}
        self.config_reads: list[str] = []  # every key RemoteParam asked the negotiator for
        # Every schedd's own configuration, as RemoteParam reads it: osep's identity is a super user.
        self.schedd_config: dict[str, str | None] = {"QUEUE_SUPER_USERS": "root, condor, osep",
                                                     "UID_DOMAIN": "cm"}
        self.identity = "osep@cm"  # who every daemon authenticates osep as
        # (daemon, command) refused by ping, a daemon named by its kind ("negotiator", "schedd"), or its
        # name (a schedd's), and the command as osep pings it ("SET_CEILING")
        self.denied: set[tuple[str, str]] = set()
        self.pings: list[tuple[str, str]] = []  # every ping: (daemon's name, command)
        self.user_records: dict[str, int] = {"osep@cm": 1}  # every schedd's user records: Enabled
        self.now = now
        self.slots: list[classad2.ClassAd] = []
        self.jobs: list[classad2.ClassAd] = []  # the queue of SCHEDD
        # Every schedd's queue, by name (SCHEDD's is ``jobs``); a test may add schedds.
        self.queues: dict[str, list[classad2.ClassAd]] = {SCHEDD: self.jobs}
        self.ceilings: dict[str, int] = {}  # submitter -> its ceiling, as the negotiator has it
        self.ads: dict[str, classad2.ClassAd] = {}  # generic ads in the collector, by Name
        self.vacates: list[str] = []  # every vacate the schedds received (cluster.proc)
        self.vacated: list[tuple[str, str]] = []  # the same, as (schedd, cluster.proc)
        self.ceiling_commands: list[tuple[str, int]] = []
        self.advertised: list[str] = []  # every command to the collector about the daemon's ad
        # "schedd" (every schedd), a schedd's name, "negotiator", "collector": refusing every command
        self.down: set[str] = set()
        # daemons up but not (yet) in the collector: a restarted collector hears of each only once
        # it advertises again
        self.unlisted: set[str] = set()
        self.lose_vacate_replies = False  # the schedd vacates, but its answer never arrives
        self.queries: list[tuple[str, str]] = []  # every query of a schedd: (schedd, constraint)
        self._procs: dict[str, int] = {}

    # -- building the pool ----------------------------------------------------------------------

    def run(self, owner: str, count: int, start: int = 1_000) -> None:
        """``count`` jobs of ``owner`` running on slots of their own."""
        for _ in range(count):
            slot = f"slot{len(self.slots) + 1}@node"
            self.slots.append(classad(Name=slot, Cpus=1, Memory=1024, SlotType="Static", State="Claimed",
                                  SlotWeight=1))
            self.jobs.append(self._job(owner, JobStatus=2, RemoteHost=slot, JobCurrentStartDate=start))

    def idle(self, owner: str, count: int) -> None:
        for _ in range(count):
            self.jobs.append(self._job(owner, JobStatus=1))

    def _job(self, owner: str, **attrs: Any) -> classad2.ClassAd:
        proc = self._procs.get(owner, 0)
        self._procs[owner] = proc + 1
        cluster = 100 + list(self._procs).index(owner)  # one cluster per owner
        return classad(ClusterId=cluster, ProcId=proc, Owner=owner, User=f"{owner}@site", JobUniverse=5,
                   QDate=1, RequestCpus=1, RequestMemory=1, **attrs)

    def running(self, owner: str) -> int:
        return sum(1 for j in self.jobs if j["Owner"] == owner and j["JobStatus"] == 2)

    def finish_vacates(self) -> None:
        """Every job vacated so far has left its slot and is idle again."""
        for job in self.jobs:
            if f"{job['ClusterId']}.{job['ProcId']}" in self.vacates and job["JobStatus"] == 2:
                slot = job["RemoteHost"]
                job["JobStatus"] = 1
                del job["RemoteHost"]
                del job["JobCurrentStartDate"]
                for ad in self.slots:
                    if ad["Name"] == slot:
                        ad["State"] = "Unclaimed"

    def match(self, owner: str) -> None:
        """``owner``'s idle jobs start on the free slots, as the negotiator would match them."""
        free = [ad for ad in self.slots if ad["State"] == "Unclaimed"]
        for job in self.jobs:
            if job["Owner"] == owner and job["JobStatus"] == 1 and free:
                self._start(job, free.pop(0))

    def leave(self, owner: str) -> None:
        """Every job of ``owner`` is done: gone from the queue, its slots free."""
        for job in [j for j in self.jobs if j["Owner"] == owner]:
            self.jobs.remove(job)
            for ad in self.slots:
                if job["JobStatus"] == 2 and ad["Name"] == job["RemoteHost"]:
                    ad["State"] = "Unclaimed"

    def _start(self, job: classad2.ClassAd, slot: classad2.ClassAd) -> None:
        slot["State"] = "Claimed"
        job["JobStatus"] = 2
        job["RemoteHost"] = slot["Name"]
        job["JobCurrentStartDate"] = self.now

    def start_again(self) -> None:
        """Every vacated job that is idle again starts on a free slot, as the negotiator would match
        it (were its owner not held)."""
        free = [ad for ad in self.slots if ad["State"] == "Unclaimed"]
        for job in self.jobs:
            if f"{job['ClusterId']}.{job['ProcId']}" in self.vacates and job["JobStatus"] == 1 and free:
                self._start(job, free.pop(0))

    # -- the bindings' face ---------------------------------------------------------------------

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from osep.htcondor import group_reader, live, negotiator, pinging, probe, reach

        fake = _Bindings(self)
        for module in (live, reach, negotiator, group_reader):
            monkeypatch.setattr(module, "htcondor", fake)
        monkeypatch.setattr(probe, "htcondor", fake)
        monkeypatch.setattr(pinging, "htcondor", fake)
        # In this process: the fake answers at once, and what it records must be seen by the test.
        monkeypatch.setattr(probe, "bounded", lambda work, seconds=0.0: work())
        monkeypatch.setattr(htcondor2._negotiator, "_negotiator_command_user_value", self._wire)

    def _refuse(self, daemon: str) -> None:
        if daemon in self.down:
            raise htcondor2.HTCondorException(f"{daemon} is down")

    def kind(self, name: str) -> str:
        return "negotiator" if name == NEGOTIATOR else "collector" if name == COLLECTOR else "schedd"

    def ping(self, ad: Any, command: str) -> classad2.ClassAd:
        name = str(ad["Name"])
        kind = self.kind(name)
        self.pings.append((name, command))
        if kind in self.down or name in self.down or {(kind, command), (name, command)} & self.denied:
            raise htcondor2.HTCondorException("Failed to start command.")
        return classad(AuthorizationSucceeded=True, MyRemoteUserName=self.identity, RemoteVersion=VERSION)

    def _wire(self, addr: str, command: int, submitter: str, value: int) -> None:
        self._set_ceiling(submitter, value)

    def _set_ceiling(self, submitter: str, value: int) -> None:
        self._refuse("negotiator")
        self.ceiling_commands.append((submitter, value))
        self.ceilings[submitter] = value

    def _act(self, schedd: str, action: Any, ids: list[str]) -> classad2.ClassAd:
        self._refuse("schedd")
        self._refuse(schedd)
        self.vacates.extend(ids)
        self.vacated.extend((schedd, i) for i in ids)
        if self.lose_vacate_replies:
            raise htcondor2.HTCondorException("timed out waiting for the schedd's answer")
        return classad(TotalSuccess=len(ids))

    def _query(self, schedd: str, constraint: str) -> list[classad2.ClassAd]:
        self._refuse("schedd")
        self._refuse(schedd)
        self.queries.append((schedd, constraint))
        expr = classad2.ExprTree(constraint)
        out = []
        for job in self.queues[schedd]:
            if expr.eval(job) is True:
                copy = classad(**{k: job[k] for k in job})
                copy["ServerTime"] = self.now
                out.append(copy)
        return out

    def _group(self, schedd: str, constraint: str, projection: list[str]) -> list[classad2.ClassAd]:
        """A query with ``QueryOpt.GroupBy``, answered as a schedd does: the jobs that match, grouped
        by the projected attributes as written and the attributes their expressions refer to; an
        ad per group with those attributes, ``Id``, ``JobCount`` and ``JobIds`` (the first job, in
        queue order, then ``...`` and the last), if the group's ad matches the constraint too."""
        expr = classad2.ExprTree(constraint)
        groups: dict[tuple[tuple[str, str], ...], list[classad2.ClassAd]] = {}
        for job in self._query(schedd, constraint):
            names = set(projection)
            for attr in projection:
                if attr in job:
                    names |= _references(job, attr)
            key = tuple(sorted(((a, str(job.lookup(a)) if a in job else "") for a in names),
                               key=lambda pair: pair[0].lower()))
            groups.setdefault(key, []).append(job)
        out = []
        for number, (key, jobs) in enumerate(groups.items(), start=1):
            ad = classad2.ClassAd()
            for attr, text in key:
                if text:
                    ad[attr] = classad2.ExprTree(text)
            ids = sorted(map(_key, jobs))
            named = [f"{c}.{p}" for c, p in ids]
            ad["Id"] = number
            ad["JobCount"] = len(ids)
            ad["JobIds"] = named[0] if len(named) == 1 else \
                f"{named[0]} {named[1]}" if len(named) == 2 else f"{named[0]} ... {named[-1]}"
            if expr.eval(ad) is True:
                out.append(ad)
        return out


def _references(job: classad2.ClassAd, attr: str) -> set[str]:
    """The attributes ``attr``'s expression refers to (none the bindings cannot work out, such as
    those of an expression that refers to itself)."""
    tree = job.lookup(attr)
    try:
        return set(job.internalRefs(tree)) | {r for r in job.externalRefs(tree) if "." not in r}
    except Exception:  # noqa: BLE001 - the bindings' own error for such an expression
        return set()


def _key(job: classad2.ClassAd) -> tuple[int, int]:
    """A job's place in its queue: its ClusterId and ProcId. A schedd's jobs always have them (they
    are its keys, which condor_qedit cannot change); an ad made for a test that has no usable ones
    is put after every other."""
    cluster, proc = job.get("ClusterId"), job.get("ProcId")
    if type(cluster) is int and type(proc) is int and 0 <= min(cluster, proc) <= max(cluster, proc) < 2**31:
        return cluster, proc
    return 2**31 - 1, 2**31 - 1


class _Bindings:
    """What the live adapter uses of htcondor2."""

    DaemonType = htcondor2.DaemonType
    AdTypes = htcondor2.AdTypes
    JobAction = htcondor2.JobAction
    QueryOpt = htcondor2.QueryOpt
    HTCondorException = htcondor2.HTCondorException

    def __init__(self, pool: FakeCondor) -> None:
        self._pool = pool
        self.param = pool.knobs

    def reload_config(self) -> None:
        pass

    def Collector(self, where: str | None = None) -> _Collector:
        return _Collector(self._pool)

    def Schedd(self, ad: Any) -> _Schedd:
        if ad is None:
            raise AssertionError("Schedd() without an ad would be the local schedd")
        return _Schedd(self._pool, str(ad["Name"]))

    def Negotiator(self, ad: Any) -> _Negotiator:
        return _Negotiator(self._pool)

    def RemoteParam(self, ad: Any) -> _RemoteParam:
        if ad is None or "MyAddress" not in ad:
            raise ValueError("Address not available in location ClassAd.")
        return _RemoteParam(self._pool, str(ad.get("Name", NEGOTIATOR)))

    def ping(self, ad: Any, command: str) -> classad2.ClassAd:
        return self._pool.ping(ad, command)

    def version(self) -> str:
        return VERSION


class _RemoteParam(Mapping[str, str]):
    """htcondor2.RemoteParam: the key list is fetched once (as the daemon spells its keys) and gates
    every lookup, case and all; each value is one more request to the daemon (``name``: the
    negotiator's configuration, or a schedd's)."""

    def __init__(self, pool: FakeCondor, name: str) -> None:
        self._pool = pool
        self._name = name
        self._config = pool.negotiator_config if pool.kind(name) == "negotiator" else pool.schedd_config
        pool._refuse(name if self._config is pool.schedd_config else "negotiator")
        self._keys = list(self._config)

    def __getitem__(self, key: str) -> str:
        if key not in self._keys:
            raise KeyError(key)
        self._pool._refuse(self._name if self._config is self._pool.schedd_config else "negotiator")
        if self._config is self._pool.negotiator_config:
            self._pool.config_reads.append(key)
        value = self._config.get(key)
        return "Not defined" if value is None else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class _Collector:
    def __init__(self, pool: FakeCondor) -> None:
        self._pool = pool

    def locateAll(self, kind: Any) -> list[classad2.ClassAd]:
        self._pool._refuse("collector")
        return [classad(Name=name, MyAddress=f"<cm:{k + 2}>", CondorVersion=VERSION)
                for k, name in enumerate(self._pool.queues)]

    def locate(self, kind: Any) -> classad2.ClassAd:
        self._pool._refuse("collector")
        if kind == htcondor2.DaemonType.Collector:
            return classad(Name=COLLECTOR, MyAddress="<cm:0>", CondorVersion=VERSION)
        self._pool._refuse("negotiator")
        if "negotiator" in self._pool.unlisted:
            raise htcondor2.HTCondorException("Unable to locate local daemon.")
        return classad(Name=NEGOTIATOR, MyAddress="<cm:1>", CondorVersion=VERSION)

    def query(self, kind: Any, constraint: str | None = None,
              projection: Any = None) -> list[classad2.ClassAd]:
        self._pool._refuse("collector")
        if kind == htcondor2.AdTypes.Collector:
            return [classad(Name=COLLECTOR, MyAddress="<cm:0>", CondorVersion=VERSION)]
        if kind == htcondor2.AdTypes.Startd:
            expr = classad2.ExprTree(constraint or "true")
            return [ad for ad in self._pool.slots if expr.eval(ad) is True]
        if constraint is not None:  # the daemons' own ads (osep's among them)
            expr = classad2.ExprTree(constraint or "true")
            return [ad for ad in self._pool.ads.values() if expr.eval(ad) is True]
        return list(self._pool.slots)

    def advertise(self, ads: list[classad2.ClassAd], command: str) -> None:
        self._pool._refuse("collector")
        self._pool.advertised.append(command)
        for ad in ads:
            if command == "UPDATE_AD_GENERIC":
                ad["LastHeardFrom"] = self._pool.now  # as the collector stamps every ad it gets
                self._pool.ads[ad["Name"]] = ad
            else:
                requirements = ad["Requirements"]
                for name in [n for n, old in self._pool.ads.items() if requirements.eval(old) is True]:
                    del self._pool.ads[name]


class _Schedd:
    def __init__(self, pool: FakeCondor, name: str) -> None:
        self._pool = pool
        self._name = name

    def query(self, constraint: str = "true", projection: Any = None,
              limit: int = -1, opts: Any = htcondor2.QueryOpt.Default) -> list[classad2.ClassAd]:
        if opts & htcondor2.QueryOpt.GroupBy:
            found = self._pool._group(self._name, constraint, list(projection or []))
        else:
            found = self._pool._query(self._name, constraint)
            if projection:  # only what was asked for (and the schedd's clock)
                found = [classad(**{k: ad.lookup(k) for k in [*projection, "ServerTime"] if k in ad})
                         for ad in found]
        return found if limit < 0 else found[:limit]

    def act(self, action: Any, ids: list[str]) -> classad2.ClassAd:
        return self._pool._act(self._name, action, ids)

    def queryUserAds(self, constraint: str = "true", projection: Any = None) -> list[classad2.ClassAd]:
        self._pool._refuse("schedd")
        self._pool._refuse(self._name)
        expr = classad2.ExprTree(constraint)
        ads = [classad(User=user, Enabled=enabled) for user, enabled in self._pool.user_records.items()]
        return [ad for ad in ads if expr.eval(ad) is True]


class _Negotiator:
    _SET_CEILING = 0

    def __init__(self, pool: FakeCondor) -> None:
        self._pool = pool
        self._addr = "<cm:1>"

    def getPriorities(self) -> list[classad2.ClassAd]:
        self._pool._refuse("negotiator")
        return [classad(Name=s, Ceiling=v) for s, v in sorted(self._pool.ceilings.items())]

    def setCeiling(self, submitter: str, value: int) -> None:
        if value <= -1:
            raise ValueError("ceiling must be greater than -1")  # as the bindings refuse it
        self._pool._set_ceiling(submitter, value)

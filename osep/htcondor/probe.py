"""Probes of the rights osep uses (:mod:`osep.htcondor.rights` says which, and reads the answers),
sent through the bindings; and what ``osep doctor`` reads of the pool besides.

Every probe is harmless: a ping asks a daemon whether osep's identity may send a command, and the
daemon answers without carrying it out. A refusal comes back as an exception, as an unreachable
daemon's does, which is why each daemon's read is probed first. Being a queue super user is read from
the schedd's own ``QUEUE_SUPER_USERS`` and ``UID_DOMAIN`` and compared with the identity of its vacate
probe: no job is touched to find out. Each probe is sent once, not retried. The bindings' ping waits
for ever on a daemon that accepts the connection and never answers, so each daemon is probed in a
child process of its own, killed after PROBE_SECONDS: a daemon that hangs costs that long, once.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import classad2
import htcondor2 as htcondor

from osep.config.livepool import LiveSettings
from osep.core.model import Snapshot
from osep.htcondor import rights as r
from osep.htcondor.live import LivePool
from osep.htcondor.negotiator import takes_leases
from osep.htcondor.pinging import FAULTS, ping, problem
from osep.htcondor.reach import collector_of, the_collector
from osep.htcondor.rights import DaemonProbe, Finding, Ping, Right

PROBE_SECONDS = 20.0  # what one daemon's probes may take, as long as the bindings give a query
T = TypeVar("T")
# The facts of a daemon's ad a probe needs (a ClassAd does not cross to the parent process).
FACTS = ("Name", "MyAddress", "CondorVersion")


def bounded(work: Callable[[], T], seconds: float = PROBE_SECONDS) -> T | None:
    """``work()`` in a child process: what it returned, or None if it had not within ``seconds`` (the
    child is then killed). What ``work`` raised is raised here as a RuntimeError with its text."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing of the parent's (log streams, locks) is touched but the pipe
        os.close(read)
        try:
            data = pickle.dumps((True, work()))
        except BaseException as exc:  # noqa: BLE001 - handed to the parent as text
            data = pickle.dumps((False, f"{type(exc).__name__}: {exc}"))
        with os.fdopen(write, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(write)
    chunks = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                return None
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    done, value = pickle.loads(b"".join(chunks))  # from this process's own child
    if not done:
        raise RuntimeError(value)
    return value  # type: ignore[no-any-return]


def _facts(ad: Any) -> dict[str, str]:
    return {k: str(ad[k]) for k in FACTS if isinstance(ad.get(k), str)}


def bindings_version() -> str:
    """The HTCondor version of the Python bindings osep runs with (``25.14.1``)."""
    return r.version_number(str(htcondor.version())) or str(htcondor.version())


def probe_daemon(daemon: str, facts: Mapping[str, str], commands: Iterable[str]) -> DaemonProbe:
    """Ping the daemon ``facts`` locates with each of ``commands`` (its read first), once each, all
    within PROBE_SECONDS (a daemon that does not answer by then is reported so); a schedd's queue
    super users and user record are read too where it granted its vacate probe."""
    wanted = list(commands)
    found = bounded(lambda: _probe(daemon, facts, wanted))
    if found is not None:
        return found
    silent = Ping(False, None, f"no answer within {PROBE_SECONDS:g} s")
    return DaemonProbe(daemon, facts.get("Name", ""), facts.get("MyAddress", ""), facts.get("CondorVersion"),
                       {wanted[0]: silent})


def _probe(daemon: str, facts: Mapping[str, str], commands: Iterable[str]) -> DaemonProbe:
    ad = classad2.ClassAd(dict(facts))
    pings: dict[str, Ping] = {}
    for command in commands:
        answer = ping(ad, command)
        pings[command] = answer
        if len(pings) == 1 and not answer.granted:
            break  # it does not answer: nothing more is asked of it
    found = DaemonProbe(daemon, facts.get("Name", ""), facts.get("MyAddress", ""), facts.get("CondorVersion"),
                        pings)
    vacate = pings.get(r.VACATE.command)
    if daemon == r.SCHEDD and vacate is not None and vacate.granted:
        found = _super_users(found, ad)
    return found


def _super_users(found: DaemonProbe, ad: Any) -> DaemonProbe:
    """The schedd's QUEUE_SUPER_USERS and UID_DOMAIN, and its user record of the identity its vacate
    probe authenticated (a schedd refuses every vacate from a user it has no record of)."""
    try:
        config = htcondor.RemoteParam(ad)
        supers, domain = (str(config.get(k, r.NOT_DEFINED)) for k in ("QUEUE_SUPER_USERS", "UID_DOMAIN"))
    except FAULTS as exc:
        return replace(found, config_problem=problem(exc))
    # Undefined, QUEUE_SUPER_USERS is the schedd's default (root, condor).
    found = replace(found, super_users="root, condor" if supers == r.NOT_DEFINED else supers,
                    uid_domain=None if domain == r.NOT_DEFINED else domain,
                    config_problem="" if domain != r.NOT_DEFINED else "its UID_DOMAIN is not defined")
    identity = found.pings[r.VACATE.command].identity
    if not r.authenticated(identity):
        return found
    try:
        records = htcondor.Schedd(ad).queryUserAds(constraint=f"User == {classad2.quote(str(identity))}",
                                                   projection=["User", "Enabled"])
    except FAULTS as exc:
        return replace(found, config_problem=f"its user records could not be read: {problem(exc)}")
    enabled = [rec.get("Enabled") for rec in records]
    return replace(found, user_record=r.ENABLED if any(e in (True, 1) for e in enabled)
                   else r.DISABLED if enabled else r.NO_RECORD)


def _commands(daemon: str, wanted: Iterable[Right]) -> list[str]:
    """The probes of one daemon, its read first."""
    out = [r.reading(daemon).command]
    out += [w.command for w in wanted if w.daemon == daemon and w.command and w.command not in out]
    return out


def probe_pool(settings: LiveSettings, acting: bool = True,
               publish: bool = True) -> tuple[list[DaemonProbe], tuple[Right, ...], dict[str, bool]]:
    """Probe the collector, the negotiator and every schedd it lists for the rights a run needs
    (``acting``: a real run; ``publish``: one that publishes its ad). Returns the probes, the
    rights they were for, and whether the negotiator takes ceilings that lapse (by target)."""
    located = bounded(lambda: _locate(settings))
    if located is None:
        silent = f"{the_collector(settings.pool)} did not answer within {PROBE_SECONDS:g} s"
        return [DaemonProbe(r.COLLECTOR, "", located=silent)], r.needed(acting, publish), {}
    ads, probes = located
    negotiator = next((facts for daemon, facts in ads if daemon == r.NEGOTIATOR), None)
    lapse = negotiator is not None and takes_leases(negotiator.get("CondorVersion"))
    wanted = r.needed(acting, publish, lapse)
    leases: dict[str, bool] = {}
    for daemon, facts in ads:
        probe = probe_daemon(daemon, facts, _commands(daemon, wanted))
        if daemon == r.NEGOTIATOR:
            leases[probe.target] = lapse
        probes.append(probe)
    order = (r.COLLECTOR, r.NEGOTIATOR, r.SCHEDD)
    return sorted(probes, key=lambda p: order.index(p.daemon)), wanted, leases


def _locate(settings: LiveSettings) -> tuple[list[tuple[str, dict[str, str]]], list[DaemonProbe]]:
    """Where the collector says the daemons are (each ad's FACTS), and those it could not say."""
    collector = collector_of(settings.pool)
    asked = the_collector(settings.pool)
    ads: list[tuple[str, dict[str, str]]] = []
    missing: list[DaemonProbe] = []

    def locate(daemon: str, find: Callable[[], Any]) -> Any:
        try:
            return find()
        except FAULTS as exc:
            missing.append(DaemonProbe(daemon, "", located=f"asking {asked}: {problem(exc)}"))
            return None

    own = locate(r.COLLECTOR, lambda: _collector_ad(collector))
    if own is None:
        return ads, missing
    ads.append((r.COLLECTOR, _facts(own)))
    negotiator = locate(r.NEGOTIATOR, lambda: collector.locate(htcondor.DaemonType.Negotiator))
    if negotiator is not None:
        ads.append((r.NEGOTIATOR, _facts(negotiator)))
    schedds = locate(r.SCHEDD, lambda: collector.locateAll(htcondor.DaemonType.Schedd))
    ads += [(r.SCHEDD, _facts(ad)) for ad in schedds or []]
    if schedds == []:
        missing.append(DaemonProbe(r.SCHEDD, "", located=f"{asked} lists no schedd"))
    return ads, missing


def _collector_ad(collector: Any) -> Any:
    """The collector's own ad (its name and version; ``locate`` makes one up from the address it was
    given, which names neither)."""
    ads = collector.query(htcondor.AdTypes.Collector, projection=["Name", "MyAddress", "CondorVersion"])
    found = next((ad for ad in ads if ad.get("MyAddress")), None)
    return found if found is not None else collector.locate(htcondor.DaemonType.Collector)


def check_at_start(settings: LiveSettings, dry_run: bool, publish: bool, log: Any) -> str | None:
    """What ``osep run`` checks before it touches anything: every right it will use, at every daemon
    that answers. Returns the line to stop with where a daemon does not grant one (None: go on);
    each finding is logged. A dry run is not probed (it only reads, which its first cycle shows)."""
    if dry_run:
        log.info("rights_not_probed", reason="dry run: osep reads the collector, the negotiator and "
                 "every schedd (READ), and lifts only ceilings a real run left")
        return None
    probes, wanted, _ = probe_pool(replace(settings, retries=1), acting=True, publish=publish)
    found = r.findings(probes, wanted)
    identity = r.identity_of(probes)
    for down in r.unreached(found):
        log.warning("rights_not_probed", daemon=down.target, problem=down.detail,
                    meaning="its cycles fail until it answers")
    stop = r.blocking(found)
    if stop is not None:
        line = r.refusal(stop, identity)
        assert stop.right is not None
        log.error("right_missing", daemon=stop.target, right=stop.right.level, command=stop.right.command,
                  identity=identity, problem=line)
        return line
    for warn in (f for f in found if f.status == r.WARN):
        log.warning("right_unsure", daemon=warn.target, check=warn.check, problem=warn.detail)
    log.info("rights_probed", identity=identity, daemons=len(probes),
             rights=sorted({f"{w.daemon} {w.level}" for w in wanted}))
    return None


def pool_now(settings: LiveSettings) -> tuple[Snapshot, list[str]]:
    """The pool's snapshot (one attempt per query, no state file) and the submitters the negotiator
    has a record of (``alice@site``, from its priorities), for checking a policy against the pool;
    PoolError if either cannot be read."""
    live = LivePool(replace(settings, retries=1, state_file=None))
    snapshot = live.snapshot()
    collector = collector_of(settings.pool)

    def names() -> list[str]:
        negotiator = htcondor.Negotiator(collector.locate(htcondor.DaemonType.Negotiator))
        return [str(ad["Name"]) for ad in negotiator.getPriorities() if isinstance(ad.get("Name"), str)]

    return snapshot, live.call(f"reading the submitters of the negotiator {the_collector(settings.pool)} lists",
                               names)


__all__ = ["Finding", "bindings_version", "check_at_start", "pool_now", "probe_pool"]

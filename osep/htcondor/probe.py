"""Probes of the rights osep uses (:mod:`osep.htcondor.rights` says which, and reads the answers),
sent through the bindings; and what ``osep doctor`` reads of the pool besides.

Every probe is harmless: a ping (``htcondor2.ping(ad, COMMAND)``, what ``condor_ping`` sends) asks a
daemon whether the identity osep authenticates as may send that command, and the daemon answers
without carrying it out (an ad with ``AuthorizationSucceeded`` and ``MyRemoteUserName``, the same in
HTCondor 23.9 and 25.x; a refusal comes back as an exception, as an unreachable daemon's does, which is
why each daemon's read is probed first). Whether osep is a queue super user of a schedd is read from
the schedd's own configuration (``RemoteParam``: its ``QUEUE_SUPER_USERS`` and ``UID_DOMAIN``, as the
running schedd has them, a READ command) and compared with the identity the schedd authenticated in
its vacate probe (:func:`osep.htcondor.rights.super_user`): no job is touched to find out.

Each probe is sent once, not retried, and a daemon that does not answer its first is asked nothing
more, so that a daemon that hangs costs one timeout of the bindings, not one per right.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import classad2
import htcondor2 as htcondor

from osep.core.model import Snapshot
from osep.htcondor import rights as r
from osep.htcondor.live import LivePool, takes_leases
from osep.htcondor.rights import DaemonProbe, Finding, Ping, Right
from osep.htcondor.settings import LiveSettings

_FAULTS = (htcondor.HTCondorException, OSError, ValueError, RuntimeError, TypeError)


def bindings_version() -> str:
    """The HTCondor version of the Python bindings osep runs with (``25.14.1``)."""
    return r.version_number(str(htcondor.version())) or str(htcondor.version())


def _problem(exc: BaseException) -> str:
    return f"{exc}" if str(exc) else type(exc).__name__


def ping(ad: Any, command: str) -> Ping:
    try:
        answer = htcondor.ping(ad, command)
    except _FAULTS as exc:
        return Ping(False, None, _problem(exc))
    identity = answer.get("MyRemoteUserName")
    granted = answer.get("AuthorizationSucceeded") in (True, "True", "true")
    return Ping(granted, str(identity) if identity is not None else None,
                "" if granted else "the daemon refused it")


def probe_daemon(daemon: str, ad: Any, commands: Iterable[str]) -> DaemonProbe:
    """Ping ``ad``'s daemon with each of ``commands`` (its read first), once each; a schedd's queue
    super users are read too where it granted its vacate probe."""
    pings: dict[str, Ping] = {}
    for command in commands:
        answer = ping(ad, command)
        pings[command] = answer
        if len(pings) == 1 and not answer.granted:
            break  # it does not answer: nothing more is asked of it
    found = DaemonProbe(daemon, str(ad.get("Name", "")), str(ad.get("MyAddress", "")),
                        _text(ad.get("CondorVersion")), pings)
    vacate = pings.get(r.VACATE.command)
    if daemon == r.SCHEDD and vacate is not None and vacate.granted:
        found = _super_users(found, ad)
    return found


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _super_users(found: DaemonProbe, ad: Any) -> DaemonProbe:
    """The schedd's QUEUE_SUPER_USERS and UID_DOMAIN, and its user record of the identity its vacate
    probe authenticated (a schedd refuses every vacate from a user it has no record of)."""
    try:
        config = htcondor.RemoteParam(ad)
        supers, domain = (str(config.get(k, r.NOT_DEFINED)) for k in ("QUEUE_SUPER_USERS", "UID_DOMAIN"))
    except _FAULTS as exc:
        return replace(found, config_problem=_problem(exc))
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
    except _FAULTS as exc:
        return replace(found, config_problem=f"its user records could not be read: {_problem(exc)}")
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
    collector = htcondor.Collector(settings.pool) if settings.pool else htcondor.Collector()
    probes: list[DaemonProbe] = []
    leases: dict[str, bool] = {}

    def locate(daemon: str, find: Callable[[], Any]) -> Any:
        try:
            return find()
        except _FAULTS as exc:
            probes.append(DaemonProbe(daemon, "", located=_problem(exc)))
            return None

    own = locate(r.COLLECTOR, lambda: _collector_ad(collector))
    negotiator = None if own is None else locate(
        r.NEGOTIATOR, lambda: collector.locate(htcondor.DaemonType.Negotiator))
    schedds = [] if own is None else locate(r.SCHEDD, lambda: collector.locateAll(htcondor.DaemonType.Schedd))
    lapse = negotiator is not None and takes_leases(negotiator.get("CondorVersion"))
    wanted = r.needed(acting, publish, lapse)
    if own is not None:
        probes.insert(0, probe_daemon(r.COLLECTOR, own, _commands(r.COLLECTOR, wanted)))
    if negotiator is not None:
        probe = probe_daemon(r.NEGOTIATOR, negotiator, _commands(r.NEGOTIATOR, wanted))
        leases[probe.target] = lapse
        probes.append(probe)
    for ad in schedds or []:
        probes.append(probe_daemon(r.SCHEDD, ad, _commands(r.SCHEDD, wanted)))
    if own is not None and schedds == []:
        probes.append(DaemonProbe(r.SCHEDD, "", located="the collector lists no schedd"))
    return probes, wanted, leases


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
    collector = htcondor.Collector(settings.pool) if settings.pool else htcondor.Collector()

    def names() -> list[str]:
        negotiator = htcondor.Negotiator(collector.locate(htcondor.DaemonType.Negotiator))
        return [str(ad["Name"]) for ad in negotiator.getPriorities() if isinstance(ad.get("Name"), str)]

    return snapshot, live.call("reading the negotiator's submitters", names)


__all__ = ["Finding", "bindings_version", "check_at_start", "pool_now", "probe_pool"]

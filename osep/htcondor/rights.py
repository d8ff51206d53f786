"""The rights osep uses in a pool, daemon by daemon, and what probes of them found: pure, no bindings
(:mod:`osep.htcondor.probe` sends the probes).

A right is the level a daemon registers one of osep's commands with, or, at a schedd, being a queue
super user with a user record there. docs/install.md gives the table of them and what a dry run
needs. Each level is probed by pinging the daemon with the command itself (the daemon says whether
the identity may send it, and does not carry it out), so that a daemon's own ``ALLOW_*`` lists and a
token's ``-authz`` limits both count. The first probe of a daemon is its read: a daemon that does not
answer it is unreachable and asked nothing more, as each unanswered probe costs the bindings'
timeout. A later probe refused by a daemon that answered the first is a right it does not grant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

COLLECTOR, NEGOTIATOR, SCHEDD = "collector", "negotiator", "schedd"
SUPER_USER = "queue super user"  # the schedd's QUEUE_SUPER_USERS, where a level would be
OK, WARN, FAIL = "ok", "warn", "fail"
UNAUTHENTICATED = "unauthenticated@"  # what a daemon calls a client it did not authenticate
NOT_DEFINED = "Not defined"  # what a daemon answers for a knob that has no value
# Names a schedd takes for its own account, whatever the domain: queue super users with no user record.
SCHEDD_ITSELF = ("condor", "root")
# A schedd's user record of osep: a disabled one stops its owner submitting, not vacating.
ENABLED, DISABLED, NO_RECORD = "enabled", "disabled", "none"


@dataclass(frozen=True, slots=True)
class Right:
    daemon: str  # COLLECTOR, NEGOTIATOR or SCHEDD (every schedd)
    level: str  # READ, WRITE, ADMINISTRATOR, DAEMON, or SUPER_USER
    command: str  # what the probe pings: a command name, or a level; "" for SUPER_USER
    purpose: str  # "to set ceilings": what osep needs it for


READ_POOL = Right(COLLECTOR, "READ", "READ", "to read the slots and locate the daemons")
READ_CEILINGS = Right(NEGOTIATOR, "READ", "GET_PRIORITY", "to read the submitters' ceilings")
READ_JOBS = Right(SCHEDD, "READ", "QUERY_JOB_ADS", "to read its jobs")
PUBLISH = Right(COLLECTOR, "DAEMON", "UPDATE_AD_GENERIC", "to publish osep's ad")
WITHDRAW = Right(COLLECTOR, "DAEMON", "INVALIDATE_ADS_GENERIC", "to withdraw osep's ad")
SET_CEILING = Right(NEGOTIATOR, "ADMINISTRATOR", "SET_CEILING", "to set ceilings")
LEASE_CEILING = Right(NEGOTIATOR, "ADMINISTRATOR", "MANAGE_CEILING", "to set ceilings that lapse by themselves")
VACATE = Right(SCHEDD, "WRITE", "ACT_ON_JOBS", "to vacate jobs")
SUPER = Right(SCHEDD, SUPER_USER, "", "to vacate other users' jobs")
READS = (READ_POOL, READ_CEILINGS, READ_JOBS)  # the first probe of each daemon: is it there


def needed(acting: bool = True, publish: bool = True, leases: bool = False) -> tuple[Right, ...]:
    """The rights a run uses: ``acting`` (not a dry run), publishing its ad, on a negotiator that
    takes ceilings that lapse (``leases``: HTCondor 25.11 and later)."""
    if not acting:
        return READS
    out = [*READS, SET_CEILING]
    if leases:
        out.append(LEASE_CEILING)
    out += [VACATE, SUPER]
    if publish:
        out += [PUBLISH, WITHDRAW]
    return tuple(out)


def reading(daemon: str) -> Right:
    """The right whose probe is ``daemon``'s first: whether it answers at all."""
    return next(r for r in READS if r.daemon == daemon)


def needs(right: Right, name: str = "") -> str:
    """What a failed command needed, for its error line: ``needs ADMINISTRATOR at the negotiator``."""
    at = f"the {right.daemon} {name}".rstrip()
    if right.level == SUPER_USER:
        return f"needs WRITE, a user record and a queue super user at {at}"
    return f"needs {right.level} at {at}"


@dataclass(frozen=True, slots=True)
class Ping:
    """One probe's answer: granted or not, the identity the daemon authenticated (None where it did
    not), and why it was refused."""

    granted: bool
    identity: str | None = None
    problem: str = ""


@dataclass(frozen=True, slots=True)
class DaemonProbe:
    """What the probes of one daemon found. ``pings``: command -> answer, for each command probed
    (none after the first that went unanswered); ``located``: why the collector could not say where
    the daemon is ("" if it could). A schedd's ``super_users`` and ``uid_domain`` are its own
    configuration's, as it answered, and ``user_record`` its record of the identity (None: not read,
    and why in ``config_problem``)."""

    daemon: str
    name: str
    address: str = ""
    version: str | None = None
    pings: Mapping[str, Ping] = field(default_factory=dict)
    located: str = ""
    super_users: str | None = None
    uid_domain: str | None = None
    user_record: str | None = None  # ENABLED, DISABLED, NO_RECORD; None: not read
    config_problem: str = ""

    @property
    def target(self) -> str:
        return f"{self.daemon} {self.name}" if self.name else self.daemon

    @property
    def reached(self) -> Ping | None:
        """The answer to its first probe (None: not even located)."""
        return self.pings.get(reading(self.daemon).command) if not self.located else None

    def identity(self) -> str | None:
        """Who this daemon authenticated osep as, in the first probe it authenticated."""
        return next((p.identity for p in self.pings.values() if authenticated(p.identity)), None)


@dataclass(frozen=True, slots=True)
class Finding:
    """One row of ``osep doctor``, and what ``osep run`` checks at start: ``check`` of ``target``
    is ``status`` (OK, WARN, FAIL) because of ``detail``; ``right``, the right it is about."""

    check: str
    target: str
    status: str
    detail: str
    right: Right | None = None
    probe: DaemonProbe | None = None


def authenticated(identity: str | None) -> bool:
    return bool(identity) and not str(identity).startswith(UNAUTHENTICATED)


def identity_of(probes: Iterable[DaemonProbe]) -> str | None:
    """The identity osep authenticates as: the first any daemon authenticated (the same token and
    the same mapping everywhere in a pool)."""
    return next((i for i in (p.identity() for p in probes) if i is not None), None)


def version_number(version: str | None) -> str | None:
    """``25.14.1`` of ``$CondorVersion: 25.14.1 2026-10-16 ... $``."""
    found = re.search(r"\$CondorVersion:\s*(\S+)", version) if version else None
    return found[1] if found else None


def super_user(identity: str, super_users: str, uid_domain: str, daemon_user: str = "condor") -> bool | None:
    """Whether the schedd counts ``identity`` (``user@domain``) as a queue super user, given its
    ``QUEUE_SUPER_USERS`` and ``UID_DOMAIN``, as the schedd compares them: a name without a domain
    is in the schedd's UID_DOMAIN; user names match exactly, domains regardless of case or where one
    is the other's dotted prefix (``vm`` matches ``vm.example.org``); the account the schedd runs as
    (condor) always is one. None where the answer depends on a Unix group (``%group``), which only
    the schedd's host can resolve."""
    user, _, domain = identity.rpartition("@")
    if not user:
        user, domain = identity, uid_domain
    groups = False
    for entry in [*re.split(r"[\s,]+", super_users.strip()), daemon_user]:
        if not entry:
            continue
        if entry.startswith("%"):
            groups = True
            continue
        name, at, where = entry.rpartition("@")
        if not at:
            name, where = entry, uid_domain
        if name == user and _same_domain(where, domain):
            return True
    return None if groups else False


def _same_domain(one: str, other: str) -> bool:
    a, b = one.lower(), other.lower()
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def findings(probes: Sequence[DaemonProbe], rights: Iterable[Right]) -> list[Finding]:
    """Each daemon's reachability, then each right it must grant: OK, or FAIL with why. A daemon
    that could not be located or did not answer is one FAIL row (its rights were not probed)."""
    wanted = list(rights)
    whoami = identity_of(probes) or "osep's identity"
    out: list[Finding] = []
    for probe in probes:
        reached = probe.reached
        if reached is None or not reached.granted:
            why = probe.located or (reached.problem if reached is not None else "not probed")
            detail = (f"not located: {why}" if probe.located
                      else f"no answer to a READ probe (down, unreachable, or it refuses READ to "
                           f"{whoami}): {why}")
            out.append(Finding("reachable", probe.target, FAIL, f"{detail}; its rights were not probed",
                               reading(probe.daemon), probe))
            continue
        who = probe.identity() or whoami
        out.append(Finding("reachable", probe.target, OK, f"at {probe.address}", probe=probe))
        for right in wanted:
            if right.daemon != probe.daemon or right in READS:
                continue
            out.append(_right(probe, right, who))
    return out


def _right(probe: DaemonProbe, right: Right, who: str) -> Finding:
    if right.level == SUPER_USER:
        return _super(probe, right, who)
    answer = probe.pings.get(right.command)
    check = f"{right.level} ({right.command})"
    if answer is None:
        return Finding(check, probe.target, FAIL, "not probed", right, probe)
    if not answer.granted:
        return Finding(check, probe.target, FAIL,
                       f"not granted to {who} (needed {right.purpose}): {answer.problem}", right, probe)
    return Finding(check, probe.target, OK, f"granted to {answer.identity or who}", right, probe)


def _super(probe: DaemonProbe, right: Right, who: str) -> Finding:
    """Whether the schedd counts the identity its vacate probe authenticated as a queue super user."""
    check = "queue super user"
    vacate = probe.pings.get(VACATE.command)
    identity = vacate.identity if vacate is not None and authenticated(vacate.identity) else None
    if probe.super_users is None or probe.uid_domain is None:
        return Finding(check, probe.target, WARN, f"not read from the schedd: {probe.config_problem}",
                       right, probe)
    listed = f"QUEUE_SUPER_USERS = {probe.super_users}"
    if identity is None:
        return Finding(check, probe.target, WARN if vacate is not None and vacate.granted else FAIL,
                       f"not checked: the schedd did not authenticate {who} ({listed})", right, probe)
    if (identity.rpartition("@")[0] or identity) in SCHEDD_ITSELF:
        return Finding(check, probe.target, OK, f"{identity} is one: the schedd takes it for its own account, "
                       "with no user record needed", right, probe)
    if probe.user_record == NO_RECORD:
        return Finding(check, probe.target, FAIL, f"the schedd has no user record of {identity}, and refuses "
                       f"every vacate from it, super user or not (condor_qusers -add {identity})", right, probe)
    found = super_user(identity, probe.super_users, probe.uid_domain)
    if found is None:
        return Finding(check, probe.target, WARN, f"{identity} may be in a Unix group it names, which "
                       f"only the schedd's host can tell ({listed})", right, probe)
    if not found:
        return Finding(check, probe.target, FAIL, f"{identity} is not one ({listed})", right, probe)
    record = ", with a user record" if probe.user_record in (ENABLED, DISABLED) else ""
    return Finding(check, probe.target, OK, f"{identity} is one{record} ({listed})", right, probe)


def version_findings(probes: Sequence[DaemonProbe], leases: Mapping[str, bool] | None = None) -> list[Finding]:
    """Each located daemon's HTCondor version, as it advertises it (WARN where it says none);
    ``leases``: target -> whether it takes ceilings that lapse, said beside the version."""
    out = []
    for probe in probes:
        if probe.located:
            continue
        number = version_number(probe.version)
        if number is None:
            out.append(Finding("version", probe.target, WARN, "its ad names no CondorVersion", probe=probe))
            continue
        extra = ""
        if leases is not None and probe.target in leases:
            extra = "; ceilings that lapse by themselves" if leases[probe.target] else "; ceilings without leases"
        out.append(Finding("version", probe.target, OK, f"HTCondor {number}{extra}", probe=probe))
    return out


def refusal(found: Finding, identity: str | None) -> str:
    """The one line ``osep run`` stops with for a right a daemon does not grant."""
    probe, right = found.probe, found.right
    assert probe is not None and right is not None
    where = f"the {probe.target} at {probe.address}"
    who = identity or "osep's identity"
    if right.level == SUPER_USER:
        return f"{where} does not count {who} as a queue super user (needed {right.purpose}): {found.detail}"
    answer = probe.pings.get(right.command)
    problem = answer.problem if answer is not None else found.detail
    return f"{where} does not grant {who} {right.level} (needed {right.purpose}): {problem}"


def blocking(found: Iterable[Finding]) -> Finding | None:
    """The first right a daemon that answered does not grant: what stops a run at start. A daemon
    that does not answer stops nothing here (a cycle that needs it fails, and the next tries again,
    as when a daemon goes away while osep runs)."""
    return next((f for f in found if f.status == FAIL and f.check != "reachable" and f.right is not None
                 and f.probe is not None and f.probe.reached is not None), None)


def unreached(found: Iterable[Finding]) -> list[Finding]:
    return [f for f in found if f.status == FAIL and f.check == "reachable"]


def by_daemon(probes: Sequence[DaemonProbe], rights: Iterable[Right],
              leases: Mapping[str, bool] | None = None) -> list[Finding]:
    """``osep doctor``'s rows for the daemons: each one's version, whether it answers, and each right
    it must grant, one daemon after the other."""
    found = findings(probes, rights)
    versions = version_findings(probes, leases)
    return [f for probe in probes for f in (*versions, *found) if f.probe is probe]

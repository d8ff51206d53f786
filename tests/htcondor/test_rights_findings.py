"""The rights osep uses and what their probes' answers mean (osep.htcondor.rights): pure, table tests."""

from __future__ import annotations

import pytest

from osep.htcondor import rights as r
from osep.htcondor.rights import DaemonProbe, Ping

WHO = "osep@cm"
GRANTED = Ping(True, WHO)


@pytest.mark.parametrize(("identity", "supers", "domain", "expected"), [
    ("osep@cm", "root, condor osep", "cm", True),  # "$(QUEUE_SUPER_USERS) osep"
    ("osep@cm", "root,condor,osep", "cm", True),
    ("osep@cm", "root, condor", "cm", False),
    ("osep@cm", "osep@cm", "cm", True),
    ("osep@CM", "osep@cm", "cm", True),  # domains regardless of case
    ("OSEP@cm", "osep", "cm", False),  # user names exactly
    ("osep@cm.example.org", "osep", "cm", True),  # a domain's dotted prefix
    ("osep@cmx", "osep", "cm", False),  # a prefix that is not a dotted one
    ("osep@other", "osep", "cm", False),  # a bare name is in the schedd's UID_DOMAIN only
    ("osep@other", "osep@other", "cm", True),
    ("condor@cm", "", "cm", True),  # the account the schedd runs as always is one
    ("osep@cm", "root, %wheel", "cm", None),  # a Unix group only the schedd's host can resolve
    ("osep@cm", "%wheel osep", "cm", True),  # named outright: the group does not matter
    ("osep", "osep", "cm", True),  # an identity without a domain is in UID_DOMAIN
    ("osep@cm", "  ,, ", "cm", False),
])
def test_a_queue_super_user_is_matched_as_the_schedd_matches_it(identity, supers, domain, expected):
    assert r.super_user(identity, supers, domain) is expected


@pytest.mark.parametrize(("acting", "publish", "leases", "levels"), [
    (False, True, True, {"collector READ", "negotiator READ", "schedd READ"}),
    (True, False, False, {"collector READ", "negotiator READ", "schedd READ", "negotiator ADMINISTRATOR",
                          "schedd WRITE", "schedd queue super user"}),
    (True, True, False, {"collector READ", "negotiator READ", "schedd READ", "negotiator ADMINISTRATOR",
                         "schedd WRITE", "schedd queue super user", "collector DAEMON"}),
])
def test_what_a_run_needs(acting, publish, leases, levels):
    wanted = r.needed(acting, publish, leases)
    assert {f"{w.daemon} {w.level}" for w in wanted} == levels
    assert (r.LEASE_CEILING in wanted) == (acting and leases)
    assert wanted[:3] == r.READS


def schedd(name: str = "schedd@cm", **changes) -> DaemonProbe:
    base = {"daemon": r.SCHEDD, "name": name, "address": "<cm:2>", "version": "$CondorVersion: 23.9.6 x $",
            "pings": {"QUERY_JOB_ADS": Ping(True, None), "ACT_ON_JOBS": GRANTED},
            "super_users": "root, condor osep", "uid_domain": "cm", "user_record": r.ENABLED}
    return DaemonProbe(**{**base, **changes})


def negotiator(**pings: Ping) -> DaemonProbe:
    return DaemonProbe(r.NEGOTIATOR, "cm", "<cm:1>", "$CondorVersion: 25.14.1 x $",
                       {"GET_PRIORITY": Ping(True, None), **pings})


def statuses(found: list[r.Finding]) -> list[tuple[str, str, str]]:
    return [(f.check, f.target, f.status) for f in found]


WANTED = r.needed(True, False, False)


@pytest.mark.parametrize(("probe", "row", "status", "says"), [
    (schedd(), ("queue super user", "schedd schedd@cm"), r.OK, "osep@cm is one"),
    (schedd(super_users="root, condor"), ("queue super user", "schedd schedd@cm"), r.FAIL, "is not one"),
    (schedd(user_record=r.NO_RECORD), ("queue super user", "schedd schedd@cm"), r.FAIL,
     "no user record of osep@cm"),
    (schedd(user_record=r.DISABLED), ("queue super user", "schedd schedd@cm"), r.OK, "with a user record"),
    (schedd(user_record=r.NO_RECORD, pings={"QUERY_JOB_ADS": Ping(True), "ACT_ON_JOBS": Ping(True, "condor@cm")}),
     ("queue super user", "schedd schedd@cm"), r.OK, "no user record needed"),  # the schedd's own account
    (schedd(user_record=r.NO_RECORD, super_users="",
            pings={"QUERY_JOB_ADS": Ping(True), "ACT_ON_JOBS": Ping(True, "root@elsewhere")}),
     ("queue super user", "schedd schedd@cm"), r.OK, "no user record needed"),
    (schedd(super_users="%admins"), ("queue super user", "schedd schedd@cm"), r.WARN, "Unix group"),
    (schedd(super_users=None, config_problem="timed out"), ("queue super user", "schedd schedd@cm"), r.WARN,
     "not read from the schedd: timed out"),
    (schedd(pings={"QUERY_JOB_ADS": Ping(True), "ACT_ON_JOBS": Ping(False, None, "Failed to start command.")}),
     ("WRITE (ACT_ON_JOBS)", "schedd schedd@cm"), r.FAIL, "not granted to osep@cm (needed to vacate jobs)"),
    (schedd(pings={"QUERY_JOB_ADS": Ping(False, None, "Failed to start command.")}),
     ("reachable", "schedd schedd@cm"), r.FAIL, "no answer to a READ probe"),
    (DaemonProbe(r.SCHEDD, "", located="the collector lists no schedd"), ("reachable", "schedd"), r.FAIL,
     "not located: the collector lists no schedd"),
    (negotiator(SET_CEILING=GRANTED), ("ADMINISTRATOR (SET_CEILING)", "negotiator cm"), r.OK, "granted to osep@cm"),
    (negotiator(SET_CEILING=Ping(False, None, "Failed to start command.")), ("ADMINISTRATOR (SET_CEILING)",
     "negotiator cm"), r.FAIL, "needed to set ceilings"),
])
def test_each_probe_answer_is_one_finding(probe, row, status, says):
    others = [DaemonProbe(r.COLLECTOR, "cm", "<cm:0>", None, {"READ": GRANTED})]  # who osep is, authenticated
    found = {(f.check, f.target): f for f in r.findings([*others, probe], WANTED)}
    assert found[row].status == status, found[row]
    assert says in found[row].detail


def test_an_unreachable_daemon_is_one_row_and_its_rights_are_not_probed():
    down = schedd(pings={"QUERY_JOB_ADS": Ping(False, None, "Failed to start command.")})
    found = r.findings([down], WANTED)
    assert statuses(found) == [("reachable", "schedd schedd@cm", r.FAIL)]
    assert r.unreached(found) == found
    assert r.blocking(found) is None  # a daemon down stops no run at start: its cycles fail


def test_the_first_right_not_granted_stops_a_run_in_one_line_naming_right_and_daemon():
    refused = negotiator(SET_CEILING=Ping(False, None, "Failed to start command."))
    probes = [refused, schedd(), schedd("schedd2@cm", super_users="root")]
    found = r.findings(probes, WANTED)
    stop = r.blocking(found)
    assert stop is not None and stop.probe is refused
    assert r.refusal(stop, r.identity_of(probes)) == (
        "the negotiator cm at <cm:1> does not grant osep@cm ADMINISTRATOR (needed to set ceilings): "
        "Failed to start command.")
    rest = r.blocking([f for f in found if f.probe is not refused])
    assert rest is not None
    assert r.refusal(rest, WHO).startswith("the schedd schedd2@cm at <cm:2> does not count osep@cm as a queue "
                                           "super user (needed to vacate other users' jobs): osep@cm is not one")


@pytest.mark.parametrize(("identities", "expected"), [
    ([None, "unauthenticated@unmapped", "osep@cm"], "osep@cm"),
    (["unauthenticated@unmapped"], None),
    ([], None),
])
def test_who_osep_is_comes_from_the_first_probe_a_daemon_authenticated(identities, expected):
    probe = DaemonProbe(r.COLLECTOR, "cm", pings={f"C{k}": Ping(True, i) for k, i in enumerate(identities)})
    assert r.identity_of([probe]) == expected


@pytest.mark.parametrize(("version", "status", "detail"), [
    ("$CondorVersion: 25.14.1 2026-10-16 BuildID: 1 $", r.OK, "HTCondor 25.14.1; ceilings that lapse by themselves"),
    (None, r.WARN, "its ad names no CondorVersion"),
    ("garbage", r.WARN, "its ad names no CondorVersion"),
])
def test_versions(version, status, detail):
    probe = DaemonProbe(r.NEGOTIATOR, "cm", version=version)
    [found] = r.version_findings([probe], {"negotiator cm": True})
    assert (found.status, found.detail) == (status, detail)


def test_doctor_rows_go_daemon_by_daemon():
    probes = [negotiator(SET_CEILING=GRANTED), schedd()]
    rows = r.by_daemon(probes, WANTED)
    assert [(f.check, f.target) for f in rows] == [
        ("version", "negotiator cm"), ("reachable", "negotiator cm"), ("ADMINISTRATOR (SET_CEILING)", "negotiator cm"),
        ("version", "schedd schedd@cm"), ("reachable", "schedd schedd@cm"), ("WRITE (ACT_ON_JOBS)", "schedd schedd@cm"),
        ("queue super user", "schedd schedd@cm")]


def test_a_failed_command_names_the_right_it_needed():
    assert r.needs(r.SET_CEILING, "cm") == "needs ADMINISTRATOR at the negotiator cm"
    assert r.needs(r.PUBLISH) == "needs DAEMON at the collector"
    assert r.needs(r.SUPER, "s@cm") == "needs WRITE, a user record and a queue super user at the schedd s@cm"

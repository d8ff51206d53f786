"""osep with an identity of its own, ``osep@<UID_DOMAIN>``, and no more rights than it uses: a token
limited to the levels it needs (TOKEN_AUTHZ) and the pool's configuration lines that grant them
(OSEP_CONFIG), on HTCondor 23.9 and 25.x alike.

Every right taken away in turn stops ``osep run`` at start with one line naming the right and the
daemon, and nothing is touched: no ceiling, no vacate, no ad. A right lost while osep runs fails the
action that needs it, naming it, and nothing goes out without it. osep authenticates with its token
only (``SEC_CLIENT_AUTHENTICATION_METHODS = IDTOKENS``), so that nothing else it might be (root, on
the pool's own machine) lends it a right.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from harness import INTERVAL, Live

# The pool's configuration for osep's own identity: each line grants one right, at the daemon that
# needs to grant it and no other. (WRITE at the schedds, for ACT_ON_JOBS, and READ everywhere are
# granted to every authenticated user by HTCondor's default security configuration.)
OSEP_CONFIG = """\
# osep may vacate other users' jobs: a queue super user of every schedd.
QUEUE_SUPER_USERS = $(QUEUE_SUPER_USERS) osep
# osep may set and lift submitter ceilings: ADMINISTRATOR at the negotiator only.
NEGOTIATOR.ALLOW_ADMINISTRATOR = $(ALLOW_ADMINISTRATOR) osep@$(UID_DOMAIN)
# osep may publish and withdraw its own ad: DAEMON at the collector only.
COLLECTOR.ALLOW_DAEMON = $(ALLOW_DAEMON) osep@$(UID_DOMAIN)
"""
# The levels osep's token may be used for: READ (queries), WRITE (vacates), ADMINISTRATOR
# (ceilings), DAEMON (its ad). No other level, whatever a daemon's configuration grants the identity.
TOKEN_AUTHZ = ("READ", "WRITE", "ADMINISTRATOR", "DAEMON")
SETUP = {"extra_config": OSEP_CONFIG}
SHARES = {"alice": 10, "bob": 10}
REACH = 2 * INTERVAL + 4 + 10


def identity(live: Live) -> str:
    return f"osep@{live.pool.uid_domain()}"


def as_osep(live: Live, name: str = "osep", authz: tuple[str, ...] = TOKEN_AUTHZ, **knobs: object) -> Path:
    """osep's configuration with its own token (limited to ``authz``) and no other credential."""
    tokens = live.token(name, identity(live), authz)
    return live.config(OSEP_POLICY_FILE=live.work / "policy.toml", SEC_TOKEN_DIRECTORY=tokens,
                       SEC_TOKEN_SYSTEM_DIRECTORY=tokens, SEC_CLIENT_AUTHENTICATION_METHODS="IDTOKENS",
                       **knobs)


def reconfigure(live: Live, drop: str, add: str, daemon: str, knob: str, named: bool) -> None:
    """The pool's configuration without its line that sets ``drop`` (one of OSEP_CONFIG's), with the
    lines ``add`` after it; then wait until ``daemon`` runs with it: its ``knob`` names osep
    (``named``) or not. Both empty: OSEP_CONFIG back as it was."""
    config = live.pool.root / "etc/condor/config.d/99-osep-testpool.conf"
    kept = [line for line in config.read_text().splitlines()
            if not (drop and line.startswith(f"{drop} ="))] if drop else None
    if kept is None:
        kept = [line for line in config.read_text().splitlines() if not line.startswith("# removed: ")]
        for line in OSEP_CONFIG.splitlines():
            if line not in kept:
                kept.append(line)
    else:
        kept.append(f"# removed: {drop}")
    config.write_text("\n".join(kept) + "\n")
    (live.pool.root / "etc/condor/config.d/99-zz-osep-rights.conf").write_text(add)
    live.pool.condor(["condor_reconfig", "-all"])

    def applied() -> bool:
        value = live.pool.condor(["condor_config_val", f"-{daemon}", knob], check=False)
        return ("osep" in value) == named

    live.wait_until(applied, 60, f"the {daemon}'s {knob} to {'' if named else 'not '}name osep")


def untouched(live: Live) -> None:
    """Nothing of the pool's was touched: no ceiling, no vacate, no OSEP ad."""
    time.sleep(3)  # a ceiling command is fire-and-forget: give it time to show, were one sent
    assert all(v == -1 for v in live.ceilings().values()), live.ceilings()
    assert live.history("alice")["evicted"] == [] and live.running("alice") == 20
    assert live.pool.condor(["condor_status", "-any", "-constraint", 'MyType == "OSEP"', "-af", "Name"]) == ""


def running_as_osep(live: Live) -> subprocess.Popen:
    """alice fills the pool; osep, as itself, runs (its first cycle done)."""
    live.fill("alice")
    live.policy(SHARES)
    live.user_record(identity(live))
    as_osep(live)
    daemon = live.start()
    live.wait_until(lambda: bool(live.events("cycle")), 60, "the first cycle")
    return daemon


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_osep_enforces_a_share_with_its_own_identity_and_least_rights(live: Live):
    daemon = running_as_osep(live)
    probed = live.events("rights_probed")
    assert probed and probed[0]["identity"] == identity(live), live.events()

    live.submit("bob", 10)
    took = live.wait_until(lambda: live.running("bob") == 10, REACH, "bob to run 10 jobs")
    print(f"MEASURED seconds for bob to reach 10 as osep@: {took:.1f}")
    live.wait_until(lambda: live.running("alice") == 10, 30, "alice to settle at 10")
    assert len(live.history("alice")["evicted"]) == 10 and live.history("alice")["aborted"] == []

    def ad() -> str:
        return live.osep_ad("OSEPState", "OSEPVacatesTotal")

    live.wait_until(lambda: ad() == "ok 10", 30, f"osep's ad, published as osep@ (now {ad()!r})")
    assert live.stop(daemon) == 0
    live.wait_until(lambda: ad() == "", 20, "the ad withdrawn")
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15, f"ceilings lifted ({live.ceilings()})")
    assert not live.events("publish_failed") and not [e for e in live.events("action") if e["outcome"] == "failed"]


# Each right taken away: (what, the token's levels, the configuration changed (OSEP_CONFIG's line
# that sets a knob removed, lines added) with the daemon and knob that show it applied and whether
# that knob names osep then, what the one line must say).
TAKEN = [
    ("token without ADMINISTRATOR", ("READ", "WRITE", "DAEMON"), None,
     r"the negotiator \S+ at <\S+> does not grant osep@\S+ ADMINISTRATOR \(needed to set ceilings\)"),
    ("token without DAEMON", ("READ", "WRITE", "ADMINISTRATOR"), None,
     r"the collector .+ at <\S+> does not grant osep@\S+ DAEMON \(needed to publish osep's ad\)"),
    # (With no other level, no daemon authenticates osep: the line cannot say who it is.)
    ("token for READ only", ("READ",), None, r"the collector .+ at <\S+> does not grant osep's identity DAEMON"),
    ("no NEGOTIATOR.ALLOW_ADMINISTRATOR line", TOKEN_AUTHZ,
     ("NEGOTIATOR.ALLOW_ADMINISTRATOR", "", "negotiator", "ALLOW_ADMINISTRATOR", False),
     r"the negotiator \S+ at <\S+> does not grant osep@\S+ ADMINISTRATOR \(needed to set ceilings\)"),
    ("no COLLECTOR.ALLOW_DAEMON line", TOKEN_AUTHZ,
     ("COLLECTOR.ALLOW_DAEMON", "", "collector", "ALLOW_DAEMON", False),
     r"the collector .+ at <\S+> does not grant osep@\S+ DAEMON \(needed to publish osep's ad\)"),
    ("no QUEUE_SUPER_USERS line", TOKEN_AUTHZ,
     ("QUEUE_SUPER_USERS", "", "schedd", "QUEUE_SUPER_USERS", False),
     r"the schedd \S+ at <\S+> does not count osep@\S+ as a queue super user \(needed to vacate other "
     r"users' jobs\)"),
    ("WRITE denied at the schedd", TOKEN_AUTHZ,
     ("", "SCHEDD.DENY_WRITE = osep@$(UID_DOMAIN)\n", "schedd", "DENY_WRITE", True),
     r"the schedd \S+ at <\S+> does not grant osep@\S+ WRITE \(needed to vacate jobs\)"),
]


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_each_right_taken_away_stops_osep_at_start_naming_it_and_nothing_is_touched(live: Live):
    live.fill("alice")
    live.submit("bob", 10)  # a real run would vacate 10 of alice's jobs for him
    live.policy(SHARES)
    # No user record of osep at the schedd (a fresh pool has none): it would refuse every vacate,
    # super user or not.
    as_osep(live, "no-record")
    done = live.once()
    line = one_line(done.stderr)
    print(f"MEASURED no user record: exit {done.returncode}: {line}")
    assert done.returncode == 1 and re.fullmatch(
        r"osep: error: the schedd \S+ at <\S+> does not count osep@\S+ as a queue super user \(needed to "
        r"vacate other users' jobs\): the schedd has no user record of osep@\S+, .*", line), line
    untouched(live)
    live.user_record(identity(live))
    for k, (what, authz, config, expected) in enumerate(TAKEN):
        if config is not None:
            reconfigure(live, *config)
        as_osep(live, f"taken{k}", authz)
        started = time.monotonic()
        done = live.once()
        line = one_line(done.stderr)
        print(f"MEASURED {what}: exit {done.returncode} after {time.monotonic() - started:.1f} s: {line}")
        assert done.returncode == 1, (what, done.stderr)
        assert re.fullmatch(r"osep: error: " + expected + r".*: .*", line), (what, line)
        missing = live.events("right_missing")
        assert missing and missing[-1]["problem"] in line, what
        assert not [e for e in live.events("action") if e["outcome"] != "dry-run"], what
        untouched(live)
        if config is not None:
            reconfigure(live, "", "", *config[2:4], not config[4])  # back to OSEP_CONFIG alone
    # With every right back, the same run acts.
    as_osep(live, "whole")
    done = live.once()
    assert done.returncode == 0, done.stderr
    live.wait_until(lambda: len(live.history("alice")["evicted"]) == 10, 30, "the 10 vacates")


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_a_right_lost_while_osep_runs_fails_the_action_naming_it_and_nothing_goes_without_it(live: Live):
    daemon = running_as_osep(live)
    reconfigure(live, "NEGOTIATOR.ALLOW_ADMINISTRATOR", "", "negotiator", "ALLOW_ADMINISTRATOR", False)
    live.submit("bob", 10)

    def refused() -> list[dict]:
        return [e for e in live.events("action") if e.get("kind") == "hold" and e.get("outcome") == "failed"]

    live.wait_until(lambda: bool(refused()), 90, "a hold refused by the negotiator")
    detail = refused()[0]["detail"]
    print(f"MEASURED the refused hold: {detail}")
    assert "needs ADMINISTRATOR at the negotiator" in detail and "\n" not in detail
    vacates = [e for e in live.events("action") if e.get("kind") == "vacate"]
    assert vacates and all(e["outcome"] == "failed" and "holds that keep its room could not be set" in e["detail"]
                           for e in vacates)
    assert live.history("alice")["evicted"] == [] and all(v == -1 for v in live.ceilings().values())
    assert all(c["vacated"] == 0 for c in live.events("cycle"))
    # The right back: the next cycles act.
    reconfigure(live, "", "", "negotiator", "ALLOW_ADMINISTRATOR", True)
    live.wait_until(lambda: live.running("bob") == 10, 90, "bob to run 10 once the right is back")
    assert live.stop(daemon) == 0

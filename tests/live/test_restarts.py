"""Daemons that restart under a running osep, and osep restarted after a kill -9, on a real pool.

A restarted collector knows of the negotiator only once the negotiator advertises again (every
``NEGOTIATOR_UPDATE_INTERVAL``, 300 s by default); a stop in that window still lifts every ceiling,
at the address the collector gave before. With the negotiator really gone, the stop tries for
``OSEP_RELEASE_TIMEOUT`` seconds, then exits 1 with one line naming what is left and the command
that lifts it. An osep killed with kill -9 and started again on its state file is not kept waiting
by the ad its predecessor left in the collector.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from harness import INTERVAL, Live

SHARES = {"alice": 10, "bob": 10}
REACH = 2 * INTERVAL + 4 + 10
# The negotiator at HTCondor's default advertising interval, so that a restarted collector goes
# without it for minutes, as in a pool left at its defaults.
SLOW_NEGOTIATOR = {"layout": "static", "extra_config": "NEGOTIATOR_UPDATE_INTERVAL = 300\n"}


def negotiators(live: Live) -> list[str]:
    out = live.pool.condor(["condor_status", "-negotiator", "-af", "Name"], check=False)
    return [line for line in out.splitlines() if line.strip()]


def holding(live: Live) -> str:
    """alice fills the pool, osep starts, bob returns: osep vacates for him and holds alice. Her
    submitter."""
    live.fill("alice")
    live.policy(SHARES)
    live.start()
    live.submit("bob", 10)
    alice = f"alice@{live.pool.uid_domain()}"
    live.wait_until(lambda: live.running("bob") == 10, REACH + 30, "bob to run 10 jobs")
    live.wait_until(lambda: live.ceilings().get(alice, -1) >= 0, 30, "alice's ceiling")
    return alice


def ceilings_at(live: Live, address: str) -> dict[str, int]:
    """The negotiator's ceilings, asked at ``address``: no tool can find a negotiator the collector
    does not list (the pool writes no address file for it)."""
    code = ("import sys, classad2, htcondor2\n"
            "ads = htcondor2.Negotiator(classad2.ClassAd({'MyAddress': sys.argv[1]})).getPriorities()\n"
            "print('\\n'.join(f\"{a.get('Name')} {a.get('Ceiling')}\" for a in ads))")
    done = subprocess.run([sys.executable, "-c", code, address], env=live.env(), capture_output=True,
                          text=True, timeout=60, check=True)
    pairs = (line.partition(" ") for line in done.stdout.splitlines())
    return {name: int(value) for name, _, value in pairs if "@" in name and value.lstrip("-").isdigit()}


@pytest.mark.parametrize("live", [SLOW_NEGOTIATOR], indirect=True)
def test_a_stop_after_a_collector_restart_lifts_every_ceiling(live: Live):
    # One vacate a cycle, every 15 s: bob takes minutes to reach his 10, and alice is held all that
    # time (once he has them, nobody waits and her ceiling is lifted, which is not what this tests).
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml", OSEP_MAX_VACATES=1, OSEP_INTERVAL=15)
    live.fill("alice")
    live.policy(SHARES)
    daemon = live.start()
    live.submit("bob", 10)
    alice = f"alice@{live.pool.uid_domain()}"
    live.wait_until(lambda: live.ceilings().get(alice, -1) >= 0, 60, "alice's ceiling")
    address = live.pool.condor(["condor_status", "-negotiator", "-af", "MyAddress"]).strip()
    assert ceilings_at(live, address)[alice] >= 0

    # The collector restarts; the pool's other daemons are back in it within seconds, the
    # negotiator not for minutes.
    live.pool.condor(["condor_restart", "-collector"])
    good = len(live.events("cycle"))
    live.wait_until(lambda: len(live.events("cycle")) >= good + 2, 120, "two good cycles after the restart")
    assert negotiators(live) == [], "the negotiator is back in the collector already: nothing to test"
    assert live.running("bob") < 10 and ceilings_at(live, address)[alice] >= 0, "alice still held"
    assert live.stop(daemon) == 0
    assert (daemon.stderr.read() if daemon.stderr else "") == ""
    measured = len(live.events("negotiator_not_located"))
    print(f"MEASURED the negotiator reached at the address the collector gave last: {measured} times")
    assert measured and not live.events("ceilings_left")
    assert ceilings_at(live, address)[alice] == -1, "the stop lifted alice's ceiling"
    assert negotiators(live) == []  # all of it while the collector still did not list the negotiator


def test_a_stop_that_cannot_lift_a_ceiling_exits_1_and_names_it(live: Live):
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml", OSEP_RELEASE_TIMEOUT=10)
    alice = holding(live)
    daemon = live.daemons[-1]
    live.pool.condor(["condor_off", "-negotiator"])
    live.wait_until(lambda: negotiators(live) == [], 30, "the negotiator to be gone")
    assert live.stop(daemon, timeout=90) == 1
    said = (daemon.stderr.read() if daemon.stderr else "").splitlines()
    print(f"MEASURED the stop says: {said}")
    assert len(said) == 1 and said[0].startswith("osep: error: stopped with ceilings left in force")
    assert f"{alice} at " in said[0]
    assert f"lift them with: osep release --state-file {live.work / 'osep.state'}" in said[0]
    assert len(live.events("ceilings_left")) == 1
    live.pool.condor(["condor_on", "-negotiator"])
    live.wait_until(lambda: negotiators(live) != [], 60, "the negotiator back")
    lifted = live.release()
    print(f"MEASURED osep release then says: {lifted.stdout.strip()!r}")
    assert lifted.returncode == 0, lifted.stderr
    assert live.ceilings().get(alice) == -1


def test_a_restart_after_kill_9_enforces_from_its_first_cycle(live: Live):
    """The dead osep's ad is still in the collector, heard from seconds ago; it names this osep's
    own name, host and state file, and its process is gone: the new one takes the pool at once."""
    live.fill("alice")
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    first = live.start()
    live.wait_until(lambda: live.osep_ad("OSEPInstance") != "", 60,
                    "the first osep's ad")
    assert live.stop(first, signal.SIGKILL) == -signal.SIGKILL
    cycles = len(live.events("cycle"))
    live.submit("bob", 10)
    second = live.start()
    took = live.wait_until(lambda: live.running("bob") == 10, REACH + 30, "bob to run 10 jobs")
    print(f"MEASURED seconds for bob to reach 10 after the restart: {took:.1f}")
    assert not live.events("another_osep"), "the new osep stood aside for its dead predecessor"
    assert len(live.events("predecessor_ad")) == 1
    vacates = [e for e in live.events("action") if e.get("kind") == "vacate"]
    assert vacates and all(e["outcome"] != "dry-run" for e in vacates)
    assert len(live.events("cycle")) > cycles
    assert live.stop(second) == 0
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15,
                    f"ceilings lifted on exit (now {live.ceilings()})")

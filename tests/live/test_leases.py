"""A killed osep's hold: on HTCondor 25.11 and later a lease that ends by itself, with the
administrator's own ceiling back as it was; on 23.9 a ceiling that stays, on record in the state
file, until ``osep release`` lifts it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from harness import INTERVAL, Live
from osep.config.knobs import LEASE_CYCLES, LEASE_LEAST

LEASE = max(LEASE_LEAST, LEASE_CYCLES * INTERVAL)


def leases(live: Live) -> bool:
    major, minor = (int(x) for x in live.pool.version().split(".")[:2])
    return (major, minor) >= (25, 11)


def test_a_killed_oseps_hold_ends_by_itself_where_ceilings_are_leases(live: Live):
    live.fill("alice")
    alice = f"alice@{live.pool.uid_domain()}"
    live.pool.condor(["condor_userprio", "-setceil", alice, "30"])  # the administrator's own
    live.wait_until(lambda: live.ceilings().get(alice) == 30, 30, "the administrator's ceiling of 30")
    live.policy({"alice": 10, "bob": 10})
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    live.submit("bob", 10)
    daemon = live.start()
    live.wait_until(lambda: live.ceilings().get(alice) == 10, 30, "osep's hold on alice at 10")
    set_as = [e.get("lease") for e in live.events("ceiling") if e.get("submitter") == alice]
    assert live.stop(daemon, signal.SIGKILL) == -signal.SIGKILL
    if leases(live):
        assert set_as and set_as[0] == LEASE, f"set as a lease of {LEASE:g} s: {set_as}"
        took = live.wait_until(lambda: live.ceilings().get(alice) == 30, LEASE + 30,
                               f"the lease to end and the administrator's 30 to be back "
                               f"(now {live.ceilings()})")
        print(f"MEASURED {live.pool.label()}: hold gone {took:.0f} s after kill -9 (lease {LEASE:g} s)")
    else:
        assert set_as == [None], f"no lease on {live.pool.label()}: {set_as}"
        # Several negotiation cycles later (every 4 s in the test pool) the hold is still in
        # force: only osep can lift it. (The negotiator keeps its own time: this waits on it.)
        time.sleep(3 * 4)
        assert live.ceilings().get(alice) == 10
        done = subprocess.run([sys.executable, "-m", "osep", "release"], env=live.env(),
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        live.wait_until(lambda: live.ceilings().get(alice) == 30, 15,
                        f"osep release to give back the administrator's 30 (now {live.ceilings()})")
    assert {v for k, v in live.ceilings().items() if k != alice} <= {-1}
    assert live.history("alice")["aborted"] == []  # none removed

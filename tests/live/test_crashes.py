"""osep killed with kill -9 in the middle of a cycle on a real pool, then started again: no job is
vacated twice for the same room, every ceiling it set is recognised as its own and managed, and in
the end every ceiling is what the administrator had (condor_userprio says so). And a second osep
against the same pool: it stands aside while the first holds the lease.

alice fills the pool (with an administrator's ceiling of her own where it matters); bob returns for
his 10.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import INTERVAL, Live

SHARES = {"alice": 10, "bob": 10}
REACH = 2 * INTERVAL + 4 + 10
QUIET = 6 * INTERVAL


def crashing(live: Live, point: str) -> subprocess.Popen:
    """``osep run`` that kills itself with SIGKILL at ``point`` (see crashing_osep.py)."""
    command = [sys.executable, str(Path(__file__).with_name("crashing_osep.py")), point,
               "--log-level", "info", "--log-file", str(live.log), "run"]
    proc = subprocess.Popen(command, env=live.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    live.daemons.append(proc)
    return proc


def admin_ceiling(live: Live, user: str, value: int) -> str:
    name = f"{user}@{live.pool.uid_domain()}"
    live.pool.condor(["condor_userprio", "-setceil", name, str(value)])
    live.wait_until(lambda: live.ceilings().get(name) == value, 30, f"{name}'s ceiling at {value}")
    return name


def killed_then_restarted(live: Live, point: str, ceiling: int) -> tuple[list[str], str, Live]:
    younger = live.fill("alice")
    alice = admin_ceiling(live, "alice", ceiling)
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    live.submit("bob", 10)
    proc = crashing(live, point)
    assert proc.wait(timeout=120) == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    if point == "after-ceiling":
        # The holds go out before any vacate: the dead run vacated nothing.
        assert live.history("alice")["evicted"] == []
    else:
        live.wait_until(lambda: len(live.history("alice")["evicted"]) == 10, 60,
                        "the vacates the dead run sent to take effect")
    return younger, alice, live


def settles(live: Live, younger: list[str]) -> None:
    """bob gets his 10 from alice's 10 youngest, each vacated once, and nothing moves after."""
    took = live.wait_until(lambda: live.running("bob") == 10, REACH + 30, "bob to run 10 jobs")
    print(f"MEASURED seconds for bob to reach 10 after the restart: {took:.1f}")
    deadline = time.monotonic() + QUIET
    while time.monotonic() < deadline:
        evicted = live.history("alice")["evicted"]
        assert sorted(evicted) == sorted(younger), f"each of alice's 10 youngest once: {evicted}"
        assert live.running("bob") == 10 and live.running("alice") == 10
        time.sleep(INTERVAL / 2)
    assert live.history("alice")["aborted"] == [] and live.queued("alice") == 20  # none removed


def test_killed_after_its_vacates_went_out(live: Live):
    younger, alice, _ = killed_then_restarted(live, "after-vacates", ceiling=10)
    daemon = live.start()
    settles(live, younger)
    assert live.stop(daemon) == 0
    live.wait_until(lambda: live.ceilings().get(alice) == 10, 15,
                    f"alice's own ceiling of 10 as the administrator set it (now {live.ceilings()})")
    assert {v for k, v in live.ceilings().items() if k != alice} <= {-1}


def test_killed_right_after_setting_a_ceiling(live: Live):
    younger, alice, _ = killed_then_restarted(live, "after-ceiling", ceiling=15)
    # The dead run held alice at what she would run after its vacates, below the administrator's 15.
    assert live.ceilings().get(alice) == 10
    daemon = live.start()
    settles(live, younger)
    # Once bob has his share nobody waits, and the ceiling osep set (and the dead run recorded
    # before sending) is lifted back to the administrator's.
    live.wait_until(lambda: live.ceilings().get(alice) == 15, 3 * INTERVAL + 10,
                    f"alice's ceiling back to the administrator's 15 (now {live.ceilings()})")
    assert not live.events("ceiling_not_osep"), "osep's own ceiling taken for another's"
    assert live.stop(daemon) == 0
    assert live.ceilings().get(alice) == 15
    assert {v for k, v in live.ceilings().items() if k != alice} <= {-1}


def test_a_second_osep_elsewhere_stands_aside_while_the_first_holds_the_lease(live: Live):
    """A second osep with a state file of its own (as on another machine) sees the first one's ad in
    the collector, stands aside and publishes nothing; it takes over when the first one stops."""
    younger = live.fill("alice")
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    first = live.start()
    live.wait_until(lambda: len(live.events("cycle")) >= 1, 30, "the first osep's first cycle")
    second_log = live.work / "second.log"
    env = {**live.env(), "_CONDOR_OSEP_NAME": "osep@second"}
    second = subprocess.Popen(
        [sys.executable, "-m", "osep", "--log-level", "info", "--log-file", str(second_log), "run",
         "--state-file", str(live.work / "second.state")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    live.daemons.append(second)

    def second_events(name: str) -> list[dict]:
        lines = second_log.read_text().splitlines() if second_log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("event") == name]

    live.wait_until(lambda: len(second_events("another_osep")) >= 2, 60,
                    "the second osep to stand aside twice")
    print(f"MEASURED the second osep says: {second_events('another_osep')[0]['problem']}")
    live.submit("bob", 10)
    live.wait_until(lambda: live.running("bob") == 10, REACH, "bob to run 10 jobs")
    assert sorted(live.history("alice")["evicted"]) == sorted(younger)
    vacates = [e for e in second_events("action") if e.get("kind") == "vacate"]
    assert all(e["outcome"] == "dry-run" for e in vacates), "the second osep sent nothing"
    def published() -> list[str]:
        return live.osep_ad("Name").split()

    assert "osep@second" not in published()

    assert live.stop(first) == 0  # its ad is withdrawn: the lease is free
    aside = len(second_events("another_osep"))
    live.wait_until(lambda: published() == ["osep@second"], 30, "the second osep's ad, alone")
    assert len(second_events("another_osep")) <= aside + 1  # at most a cycle already under way
    assert live.stop(second) == 0
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15,
                    f"ceilings lifted on exit (now {live.ceilings()})")

"""Small workloads run on the live test pool, whose logs `osep replay` is tested on.

``scripts/record_logs.py`` runs them and stores the logs under tests/data/; the live tests run one
afresh and replay what it wrote. Each leaves the pool's event log (every job's events with its owner),
osep's decision log when osep ran, and the policy used.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from harness import Live

SLOTS = 4
POLICY = {"alice": 2, "bob": 2}


@dataclass(frozen=True)
class Recording:
    events: Path
    decisions: Path | None
    policy: Path


def share_back(live: Live) -> None:
    """alice fills the 4 slots with 4 jobs of 40 s; 10 s later bob, who owns half the pool, submits
    2 jobs of 20 s. osep (every 2 s, p = 2) vacates 2 of alice's jobs for him; they run again when
    slots come free."""
    live.config(OSEP_INTERVAL=2, OSEP_MIN_RUN_TIME=0)
    daemon = live.start("--policy-file", str(live.policy(POLICY)))
    live.submit("alice", 4, seconds=40)
    live.wait_until(lambda: live.running("alice") == 4, 60, "alice's 4 jobs to run")
    time.sleep(10)
    live.submit("bob", 2, seconds=20)
    live.wait_until(lambda: not live.jobs(), 240, "every job to finish")
    time.sleep(3)  # a cycle or two with nothing to do, then stop
    live.stop(daemon)


def no_enforcement(live: Live) -> None:
    """No osep. alice takes the 4 slots with 4 jobs of 30 s, bob waits for them with 2 jobs of 15 s;
    carol (no share) submits one job that is held and released before it runs, and one that is
    removed while it waits."""
    live.policy(POLICY)
    live.submit("alice", 4, seconds=30)
    live.wait_until(lambda: live.running("alice") == 4, 60, "alice's 4 jobs to run")
    time.sleep(5)
    live.submit("bob", 2, seconds=15)
    held = live.submit("carol", 1, seconds=5)
    removed = live.submit("carol", 1, seconds=5)
    time.sleep(2)
    live.pool.condor(["condor_hold", str(held)], user="carol")
    live.pool.condor(["condor_rm", str(removed)], user="carol")
    time.sleep(3)
    live.pool.condor(["condor_release", str(held)], user="carol")
    live.wait_until(lambda: not live.jobs(), 240, "every job to finish")
    time.sleep(3)


SCENARIOS = {"share-back": share_back, "no-enforcement": no_enforcement}


def record(live: Live, name: str, out: Path) -> Recording:
    """Run the scenario ``name`` on the (fresh) pool and copy its logs into ``out``."""
    SCENARIOS[name](live)
    out.mkdir(parents=True, exist_ok=True)
    events = out / f"{name}.events.log"
    shutil.copyfile(live.pool.event_log, events)
    decisions = None
    if live.log.exists():
        decisions = out / f"{name}.decisions.jsonl"
        shutil.copyfile(live.log, decisions)
    policy = out / f"{name}.policy.toml"
    shutil.copyfile(live.work / "policy.toml", policy)
    return Recording(events, decisions, policy)

"""osep against a real HTCondor 23.9 pool (20 cores). Every assertion is about what happened in the
pool (the schedd's queue, the users' job event logs, the negotiator's ceilings), not about what osep
logged, except where the test is about the log itself.

alice and bob each own 10 of the 20 cores; enforcement runs every INTERVAL seconds.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import INTERVAL, ROOT, Live

SHARES = {"alice": 10, "bob": 10}
# Two enforcement cycles plus a negotiation cycle (2 s interval + 2 s delay in the test pool), and
# the vacate itself (a few seconds for sleep to die and the shadow to report).
REACH = 2 * INTERVAL + 4 + 10


def measured(live: Live, name: str, value: object) -> None:
    """Leave a figure in the test's output (pytest -rA / the closing note)."""
    print(f"MEASURED {name}: {value}")


@pytest.mark.parametrize("live", ["static", "partitionable"], indirect=True)
def test_owner_gets_its_share_back_from_its_newest_jobs(live: Live):
    younger = live.fill("alice")
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    daemon = live.start()
    live.wait_until(lambda: any(e.get("event") == "cycle" for e in live.events()), 30,
                    "the first cycle")

    live.submit("bob", 10)
    took = live.wait_until(lambda: live.running("bob") == 10, REACH, "bob to run 10 jobs")
    measured(live, "seconds for bob to reach 10", round(took, 1))

    live.wait_until(lambda: live.running("alice") == 10, 30, "alice to settle at 10")
    evicted = live.history("alice")["evicted"]
    assert sorted(evicted) == sorted(younger), "exactly alice's 10 most recently started jobs"
    assert live.history("alice")["aborted"] == [] and live.queued("alice") == 20  # none removed
    assert live.running("bob") == 10 and live.running("alice") == 10

    def ad() -> str:
        return live.osep_ad("OSEPState", "OSEPVacatesTotal", "OSEPCapacity")

    # OSEPCapacity in the policy's unit (slots here: a real number, as every figure in that unit).
    live.wait_until(lambda: ad() == "ok 10 20.0", 20, f"the OSEP ad to show 10 vacates (now {ad()!r})")

    def bob_in_ad() -> str:
        owners = live.osep_ad("OSEPOwners")
        found = re.search(r'\[[^\]]*Name = "bob"[^\]]*\]', owners)
        return found.group(0) if found else ""

    # The owners' figures are those of the latest cycle's snapshot: wait for one after bob started.
    live.wait_until(lambda: "RunningJobs = 10;" in bob_in_ad(), 3 * INTERVAL + 10,
                    f"the OSEP ad to show bob running 10 (now {bob_in_ad()!r})")

    assert live.stop(daemon) == 0
    live.wait_until(lambda: ad() == "", 20, "the OSEP ad to be withdrawn")
    # SET_CEILING is fire-and-forget on the wire: give the negotiator a moment to apply it.
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15,
                    f"ceilings lifted on exit (now {live.ceilings()})")
    measured(live, "vacates", len(evicted))


def test_stock_submit_files_are_enforced_as_literal_ones(live: Live):
    """Jobs submitted the way users write submit files (no request_* lines: condor_submit writes its
    defaults, expressions among them), beside a DAGMan-like scheduler-universe job and a held job of
    the same owner, neither of which occupies an execute slot: bob gets exactly alice's 10
    youngest."""
    younger = live.fill("alice", stock=True)
    live.submit("alice", 1, extra="universe = scheduler\n", stock=True)
    live.submit("alice", 1, extra="hold = true\n", stock=True)
    live.wait_until(lambda: any(j["universe"] == 7 and j["status"] == 2 for j in live.jobs()), 60,
                    "alice's scheduler-universe job to run")
    raw = live.pool.condor(["condor_q", "-all", "-l", "-attributes", "RequestMemory,RequestDisk"])
    # HTCondor 23.9 writes RequestMemory from MemoryUsage and ImageSize and RequestDisk = DiskUsage;
    # 25.x writes RequestMemory = 128 (JOB_DEFAULT_REQUESTMEMORY) and RequestDisk as
    # MAX({ 1024,(TransferInputSizeMB + 1) * 1.25 }) * 1024 (JOB_DEFAULT_REQUESTDISK).
    written = {line.partition(" = ")[2] for line in raw.splitlines() if " = " in line}
    assert any(not re.fullmatch(r"[0-9.]+", value) for value in written), \
        f"condor_submit should write a request as an expression: {sorted(written)}"
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    daemon = live.start()
    live.wait_until(lambda: any(e.get("event") == "cycle" for e in live.events()), 30,
                    "the first cycle")

    live.submit("bob", 10, stock=True)
    took = live.wait_until(lambda: live.running("bob") == 10, REACH, "bob to run 10 jobs")
    measured(live, "seconds for bob to reach 10 (stock jobs)", round(took, 1))
    live.wait_until(lambda: live.running("alice") == 10, 30, "alice to settle at 10")
    assert sorted(live.history("alice")["evicted"]) == sorted(younger)
    assert live.history("alice")["aborted"] == [] and live.queued("alice") == 22  # none removed
    scheduler = [j for j in live.jobs() if j["universe"] == 7]
    assert [j["status"] for j in scheduler] == [2], "the scheduler-universe job runs on, untouched"
    # Every ad read as it is: nothing rejected or defaulted, in any cycle; the capacity is the 20
    # slots, and alice's demand counts neither her scheduler-universe job nor her held one.
    assert live.events("odd_ads") == []
    cycles = live.events("cycle")
    assert cycles and all(c["capacity"] == 20 for c in cycles)
    assert sum(c["vacated"] for c in cycles) == 10
    assert live.stop(daemon) == 0


def test_no_thrash_when_the_owner_has_the_worse_user_priority(live: Live):
    # bob needs an accountant record before his priority factor can be set: one short job.
    live.submit("bob", 1, seconds=2)
    live.wait_until(lambda: live.queued("bob") == 0, 60, "bob's first job to finish")
    live.set_priority_factor("bob", 1_000_000)
    measured(live, "priority factors (alice default, bob)", live.priority_factors())

    live.fill("alice")
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    daemon = live.start()
    # bob's jobs are short and plenty, so slots keep coming free while he waits: each one is a
    # chance for alice (far better priority) to take it back if nothing holds her.
    live.submit("bob", 60, seconds=75)

    took = live.wait_until(lambda: live.running("bob") == 10, REACH, "bob to run 10 jobs")
    measured(live, "seconds for bob to reach 10 (worse priority)", round(took, 1))
    live.wait_until(lambda: len(live.history("alice")["evicted"]) == 10, 30, "the 10 vacates")

    samples = []
    end = time.monotonic() + 180
    while time.monotonic() < end:
        samples.append((live.running("alice"), live.running("bob"),
                        len(live.history("alice")["evicted"])))
        time.sleep(5)
    measured(live, "samples (alice, bob, alice evictions)", samples)
    assert max(a for a, _, _ in samples) <= 10, "alice never got a slot back"
    assert all(ev == 10 for _, _, ev in samples), "no vacate after the first 10"
    assert sum(1 for _, b, _ in samples if b == 10) >= 0.8 * len(samples)
    assert min(b for _, b, _ in samples) >= 7  # dips only while a finished job is replaced
    assert len(live.history("bob")["executed"]) > 20, "bob's short jobs kept turning over"
    assert live.stop(daemon) == 0


def test_dry_run_once_and_p(live: Live):
    live.fill("alice")
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    live.submit("bob", 10)

    # Observe-only: decides all 10, touches nothing.
    done = live.once("--dry-run")
    assert done.returncode == 0, done.stderr
    actions = [e for e in live.events("action") if e.get("kind") == "vacate"]
    assert len(actions) == 10 and {a["outcome"] for a in actions} == {"dry-run"}
    time.sleep(6)
    assert live.history("alice")["evicted"] == [] and live.running("alice") == 20
    assert all(v == -1 for v in live.ceilings().values())

    # One real cycle with p = 3: exactly 3 vacates; a second cycle: 3 more. Between the two runs
    # (as between cron calls) alice stays held at what she runs, so the freed slots reach bob.
    alice = f"alice@{live.pool.uid_domain()}"
    for cycle, total in ((1, 3), (2, 6)):
        done = live.once("-p", "3")
        assert done.returncode == 0, done.stderr
        live.wait_until(lambda total=total: len(live.history("alice")["evicted"]) == total, 30,
                        f"{total} vacates after cycle {cycle}")
        live.wait_until(lambda total=total: live.ceilings().get(alice) == 20 - total, 15,
                        f"alice held at {20 - total} after cycle {cycle} ({live.ceilings()})")
        time.sleep(3)
        assert len(live.history("alice")["evicted"]) == total
    live.wait_until(lambda: live.running("bob") == 6, 30, "bob to run 6 jobs")
    assert live.running("alice") == 14

    # When the cron entry goes, `osep release` lifts what the last run kept.
    done = subprocess.run([sys.executable, "-m", "osep", "release"], env=live.env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"lifted the ceiling of {alice} (was 14)" in done.stdout
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15, "every ceiling lifted")

    # --once against a pool that is not there: the cycle fails and the exit status says so.
    done = live.once("--pool", "127.0.0.1:9")
    assert done.returncode == 1
    assert any(e.get("event") == "cycle_failed" for e in live.events())


def test_outages_of_the_collector_negotiator_and_schedd(live: Live):
    """The collector, then the negotiator, then the schedd go away and come back while osep runs.
    Each cycle that needs a daemon that is gone fails with one clean line and the next one after it
    succeeds; bob, who returns while the negotiator is away, is held for until it is back and then
    gets his share; no ceiling is left behind."""
    live.fill("alice")
    live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    daemon = live.start()
    live.wait_until(lambda: len(live.events("cycle")) >= 1, 30, "a first good cycle")

    def failed_since(before: int) -> list[str]:
        return [e["problem"] for e in live.events("cycle_failed")[before:]]

    def back(flag: str) -> None:
        live.pool.condor(["condor_on", flag])
        good = len(live.events("cycle"))
        live.wait_until(lambda: len(live.events("cycle")) > good, 90,
                        f"a good cycle after {flag[1:]} is back")
        assert daemon.poll() is None, "the daemon kept running"

    # The collector: no view of the pool, no cycle.
    before = len(live.events("cycle_failed"))
    live.pool.condor(["condor_off", "-collector"])
    live.wait_until(lambda: len(failed_since(before)) >= 1, 60, "a failed cycle without the collector")
    back("-collector")
    measured(live, "cycles failed without the collector", failed_since(before))

    # The negotiator: bob returns; alice's jobs are vacated for him, but the hold that keeps them
    # from coming back cannot be set, and says so; once it is back, bob gets his 10.
    live.pool.condor(["condor_off", "-negotiator"])
    live.submit("bob", 10)

    def hold_failed() -> list[dict]:
        return [e for e in live.events("action") if e.get("kind") == "hold"
                and e.get("outcome") == "failed"]

    live.wait_until(lambda: bool(hold_failed()), 60, "a hold that fails without the negotiator")
    measured(live, "hold without the negotiator", hold_failed()[0].get("detail"))
    back("-negotiator")
    live.wait_until(lambda: live.running("bob") == 10 and live.running("alice") == 10, 90,
                    "bob to run 10 and alice 10 once the negotiator is back")

    # The schedd: its jobs are out of sight, so nothing may be decided.
    before = len(live.events("cycle_failed"))
    live.pool.condor(["condor_off", "-schedd"])
    live.wait_until(lambda: len(failed_since(before)) >= 1, 60, "a failed cycle without the schedd")
    back("-schedd")
    measured(live, "cycles failed without the schedd", failed_since(before))
    live.wait_until(lambda: live.running("alice") == 10 and live.running("bob") == 10, 90,
                    "alice and bob back to 10 each")

    assert all("\n" not in p for p in failed_since(0))
    assert live.history("alice")["aborted"] == [] and live.queued("alice") == 20  # none removed
    assert live.stop(daemon) == 0
    assert "Traceback" not in (daemon.stderr.read() if daemon.stderr else "")
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15,
                    f"ceilings lifted on exit (now {live.ceilings()})")


def test_reload_and_signals(live: Live):
    """SIGHUP with a broken policy keeps the old one; SIGQUIT stops at once."""
    live.submit("alice", 20)
    live.wait_until(lambda: live.running("alice") == 20, 60, "alice to fill the pool")
    policy = live.policy(SHARES)
    live.config(OSEP_POLICY_FILE=policy, OSEP_DRY_RUN="true")
    daemon = live.start()
    live.wait_until(lambda: len(live.events("cycle")) >= 1, 30, "a first cycle")
    policy.write_text("[owners]\nalice = -4\n")
    daemon.send_signal(signal.SIGHUP)
    live.wait_until(lambda: len(live.events("reload_rejected")) >= 1, 30, "the reload to be refused")
    rejected = live.events("reload_rejected")[0]
    assert "owners.alice" in rejected["problem"]
    cycles = len(live.events("cycle"))
    live.wait_until(lambda: len(live.events("cycle")) > cycles, 30, "cycles to go on")
    assert daemon.poll() is None
    started = time.monotonic()
    assert live.stop(daemon, signal.SIGQUIT, timeout=20) == 0
    measured(live, "seconds to exit on SIGQUIT", round(time.monotonic() - started, 2))


def master_setup() -> dict:
    """The pool configured with osep/data/condor/50-osep.config as an administrator who installed
    osep with pip would paste it, changing only what must differ here: the policy file named, where
    osep is installed, the account it runs as (condor: the pool's root has no osep account), where it
    logs and keeps its state, dry run off, a short interval and no minimum run time. The Python
    installation, the virtual environment and this checkout are mounted read-only at their own paths
    inside the chroot, so its condor_master can start them."""
    snippet = (ROOT / "osep" / "data" / "condor" / "50-osep.config").read_text()
    changes = {
        "# OSEP_POLICY_FILE": "OSEP_POLICY_FILE = $(ETC)/osep-policy.toml",
        "# OSEP": f"OSEP = {Path(sys.prefix) / 'bin' / 'osep'}",
        "    OSEP_USERID": "OSEP_USERID = condor",
        "    OSEP_LOG": "OSEP_LOG = $(LOG)/OsepLog",
        "    OSEP_STATE_FILE": "OSEP_STATE_FILE = $(SPOOL)/osep.state",
        "    OSEP_DRY_RUN": "OSEP_DRY_RUN = false",
        "    OSEP_INTERVAL": f"OSEP_INTERVAL = {INTERVAL}",
        "    OSEP_MIN_RUN_TIME": "OSEP_MIN_RUN_TIME = 0",
    }
    for knob, value in changes.items():
        snippet, count = re.subn(rf"^{knob} = .*$", value, snippet, flags=re.M)
        assert count == 1, f"{knob} is not in the shipped snippet"
    binds = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix, ROOT)}
    return {"layout": "static", "binds": tuple(sorted(binds)), "extra_config": snippet}


@pytest.mark.parametrize("live", [master_setup()], indirect=True)
def test_runs_under_condor_master_from_the_shipped_snippet(live: Live):
    root = live.pool.root
    oseplog = root / "var/log/condor/OsepLog"
    (root / "etc/condor/osep-policy.toml").write_text("[owners]\nalice = 10\nbob = 10\n")
    # The token as the snippet says: in the condor account's own token directory, its alone.
    condor_uid = int(live.pool.condor(["id", "-u", "condor"]))
    tokens = root / "var/lib/condor/.condor/tokens.d"
    tokens.mkdir(parents=True, exist_ok=True)
    for directory in (tokens.parent, tokens):
        directory.chmod(0o700)
        os.chown(directory, condor_uid, -1)
    token = tokens / "osep"
    token.write_text((live.pool.token_dir / "osep").read_text())
    token.chmod(0o600)
    os.chown(token, condor_uid, -1)

    def events(name: str) -> list[dict]:
        return live.events(name, log=oseplog)

    def ad() -> str:
        return live.osep_ad("OSEPState", "OSEPVacatesTotal")

    # The master starts osep as soon as the pool is up (policy file read, no token needed to read).
    live.wait_until(lambda: events("cycle"), 60, f"osep started by condor_master (log {oseplog})")
    live.fill("alice")
    live.submit("bob", 10)
    took = live.wait_until(lambda: live.running("bob") == 10, REACH + 10, "bob to run 10 jobs")
    measured(live, "seconds for bob to reach 10 under condor_master", round(took, 1))
    live.wait_until(lambda: ad().startswith("ok 10"), 30, f"the OSEP ad (now {ad()!r})")
    assert sorted(live.history("alice")["evicted"]) == [f"2.{k}" for k in range(10)]

    live.pool.condor(["condor_reconfig"])  # the master passes SIGHUP on to osep
    live.wait_until(lambda: events("reloaded"), 30, "osep to reload on condor_reconfig")
    live.pool.condor(["condor_off", "-daemon", "OSEP"])  # SIGTERM: finish the cycle, clean up
    live.wait_until(lambda: events("stopped"), 30, "osep to stop on condor_off")
    live.wait_until(lambda: ad() == "", 30, "the OSEP ad to be withdrawn")

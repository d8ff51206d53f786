"""An owner tree on the real test pool: jobs submitted with accounting groups, as users write them
(``accounting_group`` and ``accounting_group_user`` in a stock submit file), placed in a two-level
tree. group_physics (alice and bob, half each) and group_chem own 10 of the 20 cores each."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from harness import INTERVAL, Live, group

REACH = 2 * INTERVAL + 4 + 10
TREE = """[policy]
unit = "cpus"
[owners.group_physics]
share = 10
[owners.group_physics.alice]
share = "50%"
[owners.group_physics.bob]
share = "50%"
[owners.group_chem]
share = 10
"""


def test_a_subgroup_gets_its_share_back_from_the_sibling_group(live: Live):
    # carol fills the pool in group_chem, in two batches (the second one younger)
    live.submit("carol", 10, extra=group("group_chem", "carol"), stock=True)
    live.wait_until(lambda: live.running("carol") == 10, 60, "carol's first batch to run")
    time.sleep(2)
    cluster = live.submit("carol", 10, extra=group("group_chem", "carol"), stock=True)
    live.wait_until(lambda: live.running("carol") == 20, 60, "carol's second batch to run")
    younger = [f"{cluster}.{k}" for k in range(10)]
    policy = live.work / "policy.toml"
    policy.write_text(TREE)
    live.config(OSEP_POLICY_FILE=policy)
    daemon = live.start()
    live.wait_until(lambda: any(e.get("event") == "cycle" for e in live.events()), 30,
                    "the first cycle")

    # bob alone in group_physics: alice is idle, so her half goes to her sibling bob first
    live.submit("bob", 10, extra=group("group_physics", "bob"), stock=True)
    took = live.wait_until(lambda: live.running("bob") == 10, REACH, "bob to run 10 jobs")
    print(f"MEASURED seconds for bob (group_physics.bob) to reach 10: {took:.1f}")
    live.wait_until(lambda: live.running("carol") == 10, 30, "carol to settle at 10")
    assert sorted(live.history("carol")["evicted"]) == sorted(younger)

    # alice comes back: group_physics is at its share, so she takes her half from bob, inside the
    # group; group_chem is at its share and is not touched again
    live.submit("alice", 5, extra=group("group_physics", "alice"), stock=True)
    took = live.wait_until(lambda: live.running("alice") == 5, REACH, "alice to run 5 jobs")
    print(f"MEASURED seconds for alice (group_physics.alice) to reach 5: {took:.1f}")
    live.wait_until(lambda: live.running("bob") == 5, 30, "bob to settle at 5")

    samples = []
    end = time.monotonic() + 4 * INTERVAL + 10
    while time.monotonic() < end:  # no thrash: nothing moves once every node is at its target
        samples.append((live.running("alice"), live.running("bob"), live.running("carol"),
                        len(live.history("bob")["evicted"]), len(live.history("carol")["evicted"])))
        time.sleep(3)
    print(f"MEASURED samples (alice, bob, carol, bob evictions, carol evictions): {samples}")
    assert all(s == (5, 5, 10, 5, 10) for s in samples), samples
    for user, queued in (("alice", 5), ("bob", 10), ("carol", 20)):
        assert live.history(user)["aborted"] == [], f"{user}: a job was removed"
        assert live.queued(user) == queued

    done = subprocess.run([sys.executable, "-m", "osep", "report", "--tree", "--policy-file",
                           str(policy), "--format", "json"], env=live.env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tree"]}
    assert (rows["group_physics"]["usage"], rows["group_physics"]["target"]) == (10, 10)
    assert (rows["group_physics.alice"]["usage"], rows["group_physics.bob"]["usage"]) == (5, 5)
    assert rows["group_chem"]["usage"] == 10 and rows["group_chem"]["gap"] == 0
    table = subprocess.run([sys.executable, "-m", "osep", "report", "--tree", "--policy-file",
                            str(policy)], env=live.env(), capture_output=True, text=True,
                           timeout=120, check=False)
    print(table.stdout)
    assert any(line.startswith("  alice ") for line in table.stdout.splitlines())
    assert live.stop(daemon) == 0


def test_the_test_pools_submit_queues_a_users_group_jobs_and_files(live: Live):
    """What a reader of the docs types: scripts/testpool.py submit, with an accounting group and
    requests, or a submit file of their own."""
    def testpool(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "scripts/testpool.py", "--dir", str(live.pool.dir), "--suite",
                               live.pool.suite, "submit", *args], capture_output=True, text=True, timeout=60,
                              check=False)

    done = testpool("--owner", "alice", "--group", "group_physics", "--cpus", "2", "--memory", "1024",
                    "--count", "5", "--duration", "600")
    assert done.returncode == 0, done.stderr
    cluster = done.stdout.split(".")[0]
    assert done.stdout.strip() == f"{cluster}.0 - {cluster}.4"
    mine = live.work / "mine.sub"
    mine.write_text("executable = /bin/sleep\narguments = 600\nrequest_gpus = 1\nlog = mine.log\nqueue 2\n")
    done = testpool("--owner", "bob", str(mine))
    assert done.returncode == 0, done.stderr
    queue = live.pool.condor(["condor_q", "-all", "-af", "Owner", "AccountingGroup", "RequestCpus",
                              "RequestMemory", "RequestGpus", "UserLog"])
    rows = sorted(set(queue.splitlines()))
    print(rows)
    assert len(queue.splitlines()) == 7 and len(rows) == 2
    assert rows[0] == "alice group_physics.alice 2 1024 undefined /home/alice/jobs.log"
    # The file's job, as condor_submit made it: no group, its memory its default expression's.
    owner, group_, cpus, _, gpus, log = rows[1].split()
    assert (owner, group_, cpus, gpus, log) == ("bob", "undefined", "1", "1", "/home/bob/mine.log")

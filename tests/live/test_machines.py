"""osep on partitionable machines of a real HTCondor 23.9 pool: four partitionable slots of 5 cores
and one GPU each (the GPUs declared as a custom machine resource, so no hardware is needed).

Every assertion is about what happened in the pool: which jobs the users' event logs say were
evicted, where the schedd ran them, what runs afterwards.
"""

from __future__ import annotations

import time

import pytest

from harness import INTERVAL, Live

MACHINES = {
    "layout": "partitionable",
    "cpus": 20,
    "extra_config": (
        "MACHINE_RESOURCE_GPUs = 4\n"
        "NUM_SLOTS_TYPE_1 = 4\n"
        "SLOT_TYPE_1 = cpus=5, gpus=1, memory=20%\n"
        "SLOT_TYPE_1_PARTITIONABLE = TRUE\n"
    ),
}
REACH = 2 * INTERVAL + 4 + 10
QUIET = 12 * INTERVAL  # how long nothing may happen once the owners are where they should be


def machine(host: str) -> str:
    """The partitionable slot a dynamic slot ``slot1_3@host`` was carved from."""
    local, _, where = host.partition("@")
    return f"{local.split('_')[0]}@{where}"


def started(live: Live, owner: str) -> dict[str, tuple[str, int]]:
    """Running jobs of ``owner``: id -> (partitionable slot, start of the current run)."""
    return {j["id"]: (machine(j["host"]), int(j["start"])) for j in live.jobs()
            if j["owner"] == owner and j["status"] == 2}


def stays(live: Live, seconds: float, what: dict[str, object], probe) -> None:
    """Fail if ``probe()`` differs from ``what`` at any point in the next ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = probe()
        assert now == what, f"changed after settling: {now} != {what}"
        time.sleep(INTERVAL / 2)


@pytest.mark.parametrize("live", [MACHINES], indirect=True)
def test_a_multi_core_job_gets_room_from_the_fewest_jobs_on_one_machine(live: Live):
    """alice fills all 20 cores with one-core jobs (stock submit files); bob owns 10 cores and asks
    for one 4-core job. Four of alice's jobs on one machine are vacated (the youngest there),
    nothing else is touched, bob's job runs there, and nothing moves afterwards."""
    live.fill("alice", stock=True)
    before = started(live, "alice")
    assert len(before) == 20 and len({m for m, _ in before.values()}) == 4
    live.policy({"alice": 10, "bob": 10}, unit="cpus")
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    daemon = live.start()
    live.wait_until(lambda: any(e.get("event") == "cycle" for e in live.events()), 30,
                    "the first cycle")

    live.submit("bob", 1, cpus=4)
    took = live.wait_until(lambda: live.running("bob") == 1, REACH, "bob's 4-core job to run")
    print(f"MEASURED seconds for bob's 4-core job to start: {took:.1f}")

    evicted = live.history("alice")["evicted"]
    assert len(evicted) == 4, f"the fewest jobs that make 4 cores: {evicted}"
    where = {before[j][0] for j in evicted}
    assert len(where) == 1, f"all on one machine: {where}"
    place = where.pop()
    kept = [start for j, (m, start) in before.items() if m == place and j not in evicted]
    assert min(before[j][1] for j in evicted) >= max(kept), "the youngest on that machine"
    bob = started(live, "bob")
    assert [m for m, _ in bob.values()] == [place], "bob's job runs where the room was made"

    settled = {"alice": 16, "bob": 1, "evicted": 4}
    live.wait_until(lambda: live.running("alice") == 16, 30, "alice to settle at 16")

    def probe() -> dict[str, object]:
        return {"alice": live.running("alice"), "bob": live.running("bob"),
                "evicted": len(live.history("alice")["evicted"])}

    stays(live, QUIET, settled, probe)
    assert live.history("alice")["aborted"] == [] and live.queued("alice") == 20  # none removed
    vacates = [e for e in live.events("action") if e.get("kind") == "vacate" and e["outcome"] == "done"]
    assert len(vacates) == 4 and {e["place"] for e in vacates} == {place}
    assert live.stop(daemon) == 0
    live.wait_until(lambda: set(live.ceilings().values()) <= {-1}, 15,
                    f"ceilings lifted on exit (now {live.ceilings()})")


@pytest.mark.parametrize("live", [MACHINES], indirect=True)
def test_a_gpu_share_is_reclaimed(live: Live):
    """alice and bob each own 10 cores and 2 GPUs (dominant shares). alice runs a job on each of the
    4 GPUs and 4 one-core jobs; bob asks for 2 GPU jobs. alice's 2 youngest GPU jobs are vacated, her
    one-core jobs are not touched, and nothing moves afterwards."""
    gpu = "request_gpus = 1\n"
    live.submit("alice", 2, extra=gpu)
    live.wait_until(lambda: live.running("alice") == 2, 60, "alice's first GPU jobs")
    time.sleep(2)  # a distinct start time for the younger pair
    younger = live.submit("alice", 2, extra=gpu)
    cpu_only = live.submit("alice", 4, stock=True)
    live.wait_until(lambda: live.running("alice") == 8, 60, "alice's 8 jobs")
    live.policy({"alice": "{ cpus = 10, gpus = 2 }", "bob": "{ cpus = 10, gpus = 2 }"},
                unit="dominant")
    live.config(OSEP_POLICY_FILE=live.work / "policy.toml")
    daemon = live.start()
    live.wait_until(lambda: any(e.get("event") == "cycle" for e in live.events()), 30,
                    "the first cycle")

    live.submit("bob", 2, extra=gpu)
    took = live.wait_until(lambda: live.running("bob") == 2, REACH, "bob's 2 GPU jobs to run")
    print(f"MEASURED seconds for bob's GPU jobs to start: {took:.1f}")
    evicted = sorted(live.history("alice")["evicted"])
    assert evicted == [f"{younger}.0", f"{younger}.1"], "alice's two youngest GPU jobs, nothing else"
    running = {j["id"] for j in live.jobs() if j["owner"] == "alice" and j["status"] == 2}
    assert {f"{cpu_only}.{k}" for k in range(4)} <= running

    def probe() -> dict[str, object]:
        return {"alice": live.running("alice"), "bob": live.running("bob"),
                "evicted": len(live.history("alice")["evicted"])}

    # alice's two vacated GPU jobs wait: every GPU is taken.
    stays(live, QUIET, {"alice": 6, "bob": 2, "evicted": 2}, probe)
    assert live.history("alice")["aborted"] == [] and live.queued("alice") == 8  # none removed
    assert live.stop(daemon) == 0

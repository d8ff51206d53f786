#!/usr/bin/env python3
"""A floor on the owner below its share against ceilings on the owners above it, on the real test
pool: which gets freed room to its owner, how fast, and whether it stays there.

Four partitionable slots of 5 cores. alice fills the 20 cores with one-core stock jobs; bob, whose
priority factor is 1,000,000 (far worse than alice's), asks for two 4-core jobs and four one-core
jobs. Then, in each round, 4 of alice's jobs on each of two machines are vacated (8 cores, in two
rooms of 4, as osep would vacate for bob's share of 8) with, set just before the vacates:

- ``floor``: a submitter floor of 8 on bob, and no ceiling on alice;
- ``ceiling``: a ceiling on alice at what she runs after the vacates (12), and no floor;
- ``both``: the two.

For each round it prints the seconds until bob holds 8 cores (or that he never did within
``--watch`` seconds), the fewest cores he held after first reaching 8, and the cores alice held at
the end. The queue is emptied and every floor and ceiling lifted between rounds; the pool is stopped
at the end, whatever happens.

    sudo OSEP_TESTPOOL_SUITE=forky scripts/testpool.py isolate -- \\
        .venv/bin/python scripts/bench_floors.py [--rounds 3] [--watch 40]

Needs root (the test pool is a chroot) and a network namespace of its own (``isolate``);
OSEP_TESTPOOL_SUITE picks the pool's HTCondor (trixie: 23.9, the default; forky: 25.x), whose root
``scripts/testpool.py --suite SUITE build`` makes. Floors are in both (``condor_userprio -setfloor``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

from testpool import PoolError, TestPool  # noqa: E402 - after the check, as every script here

MACHINES = ("NUM_SLOTS_TYPE_1 = 4\nSLOT_TYPE_1 = cpus=5, memory=20%\n"
            "SLOT_TYPE_1_PARTITIONABLE = TRUE\n")
VARIANTS = ("floor", "ceiling", "both")


def cores(pool: TestPool) -> dict[str, int]:
    """Cores held per user, as the startd's dynamic slots say."""
    out: dict[str, int] = {}
    for line in pool.condor(["condor_status", "-af", "RemoteOwner", "Cpus", "State"]).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "Claimed":
            user = parts[0].split("@")[0]
            out[user] = out.get(user, 0) + int(parts[1])
    return out


def wait(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise PoolError(f"timed out waiting for {what}")
        time.sleep(1)


def reset(pool: TestPool, domain: str) -> None:
    pool.condor(["condor_rm", "-all"], check=False)
    wait(lambda: not cores(pool), 90, "the machines to empty")
    for user in ("alice", "bob"):
        pool.condor(["condor_userprio", "-setceil", f"{user}@{domain}", "-1"], check=False)
        pool.condor(["condor_userprio", "-setfloor", f"{user}@{domain}", "0"], check=False)


def victims(pool: TestPool) -> list[str]:
    """4 of alice's jobs on each of two machines: two rooms of 4 cores."""
    out = pool.condor(["condor_q", "-all", "-constraint", 'Owner == "alice" && JobStatus == 2',
                       "-af", "ClusterId", "ProcId", "RemoteHost"])
    by_machine: dict[str, list[str]] = {}
    for line in out.splitlines():
        cluster, proc, host = line.split()
        machine = host.split("@")[0].split("_")[0] + "@" + host.split("@")[1]
        by_machine.setdefault(machine, []).append(f"{cluster}.{proc}")
    chosen = [jobs[:4] for _, jobs in sorted(by_machine.items())[:2]]
    return [job for jobs in chosen for job in jobs]


def round_(pool: TestPool, domain: str, variant: str, watch: float) -> tuple[float | None, int, int]:
    reset(pool, domain)
    pool.submit("alice", 20, stock=True)
    wait(lambda: cores(pool).get("alice", 0) == 20, 120, "alice on all 20 cores")
    pool.condor(["condor_userprio", "-setfactor", f"bob@{domain}", "1000000"])
    pool.submit("bob", 2, cpus=4)
    pool.submit("bob", 4, cpus=1)
    time.sleep(4)  # bob's jobs known to the negotiator (a cycle every 4 s in the test pool)
    if variant in ("floor", "both"):
        pool.condor(["condor_userprio", "-setfloor", f"bob@{domain}", "8"])
    if variant in ("ceiling", "both"):
        pool.condor(["condor_userprio", "-setceil", f"alice@{domain}", "12"])
    pool.condor(["condor_vacate_job", *victims(pool)])
    began = time.monotonic()
    reached: float | None = None
    least = 0
    held = cores(pool)
    while time.monotonic() - began < watch:
        held = cores(pool)
        bob = held.get("bob", 0)
        if reached is None and bob >= 8:
            reached, least = time.monotonic() - began, bob
        elif reached is not None:
            least = min(least, bob)
        time.sleep(1)
    return reached, least, held.get("alice", 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--watch", type=float, default=40.0)
    args = parser.parse_args()
    pool = TestPool(suite=os.environ.get("OSEP_TESTPOOL_SUITE", "trixie"))
    try:
        pool.start(layout="partitionable", cpus=20, extra_config=MACHINES)
        domain = pool.uid_domain()
        print(f"{pool.label()}: bob (factor 1e6) wants 8 of 20 cores; 8 of alice's vacated per round")
        for variant in VARIANTS:
            for k in range(args.rounds):
                reached, least, alice = round_(pool, domain, variant, args.watch)
                when = f"8 cores in {reached:.0f} s, then at least {least}" if reached is not None \
                    else f"never 8 cores in {args.watch:.0f} s"
                print(f"{variant:8} round {k}: bob {when}; alice {alice} at the end", flush=True)
    except PoolError as exc:
        print(f"bench_floors: {exc}", file=sys.stderr)
        return 1
    finally:
        pool.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

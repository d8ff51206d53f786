#!/usr/bin/env python3
"""How long one decision takes on a large pool: prints figures, asserts nothing.

Builds a synthetic snapshot (by default 1,000,000 jobs on 100,000 slots for 10,000 owners: every
slot busy, the rest idle, shares drawn at random and scaled to the pool), then times osep.core.policy.decide
on it with the process CPU clock. The snapshot is built once and not counted.

    .venv/bin/python scripts/bench_policy.py [--jobs N] [--slots N] [--owners N] [--repeat N]
                                             [--max-vacates P]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from osep.core.model import Job, JobId, JobState, Slot, Snapshot
from osep.core.plan import Target, VictimOrder
from osep.core.policy import PolicySettings, decide
from osep.core.shares import ShareTable


def build(jobs: int, slots: int, owners: int, seed: int) -> tuple[Snapshot, ShareTable]:
    rnd = random.Random(seed)
    now = 1_000_000.0
    names = [f"owner{k:05d}" for k in range(owners)]
    # Skewed demand: a few owners submit most jobs, as in production pools.
    weights = [1.0 / (k + 1) ** 0.8 for k in range(owners)]
    owner_of = rnd.choices(names, weights=weights, k=jobs)
    slot_list = tuple(Slot(f"slot{k}@host{k // 32}") for k in range(slots))
    job_list = []
    for k, owner in enumerate(owner_of):
        if k < slots:
            job_list.append(Job(JobId("bench", k, 0), owner, JobState.RUNNING, now - 90_000, slot_list[k].name,
                                start_time=now - rnd.uniform(0, 86_400)))
        else:
            job_list.append(Job(JobId("bench", k, 0), owner, JobState.IDLE, now - rnd.uniform(0, 3_600)))
    raw = [rnd.uniform(0.1, 10.0) for _ in names]
    total = sum(raw)
    shares = ShareTable({n: slots * r / total for n, r in zip(names, raw, strict=False)})
    return Snapshot(now, slot_list, tuple(job_list)), shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--slots", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-vacates", type=int, default=None,
                        help="p; default the largest share (small here: shares are spread thin)")
    args = parser.parse_args()

    t0 = time.process_time()
    snapshot, shares = build(args.jobs, args.slots, args.owners, args.seed)
    built = time.process_time() - t0
    print(f"snapshot: {args.jobs:,} jobs, {args.slots:,} slots, {args.owners:,} owners "
          f"(built in {built:.2f} s CPU, not counted below)")
    print(f"{'target':9} {'victims':10} {'p':>7} {'vacates':>8} {'claims':>7} "
          f"{'best s':>7} {'mean s':>7}")
    for target in Target:
        for order in VictimOrder:
            settings = PolicySettings(shares, target=target, victim_order=order,
                                      max_vacates=args.max_vacates)
            times = []
            for _ in range(args.repeat):
                start = time.process_time()
                plan = decide(snapshot, settings)
                times.append(time.process_time() - start)
            print(f"{target.value:9} {order.value:10} {plan.max_vacates:>7} {len(plan.vacates):>8} "
                  f"{len(plan.claims):>7} {min(times):>7.2f} {sum(times) / len(times):>7.2f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()

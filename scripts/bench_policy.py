#!/usr/bin/env python3
"""How long one decision takes on a large pool: prints figures, asserts nothing about time.

Builds a synthetic pool (by default 1,000,000 jobs on 100,000 slots for 10,000 owners: every slot
busy, the rest idle, shares drawn at random and scaled to the pool) and a kept view of it
(osep.core.view; its construction is timed and printed, not counted in the decision), then times
osep.core.policy.decide on the snapshot carrying that view with the process CPU clock, at each p of
``--p``, for both targets and both victim orders. In the same run the naive reference
(tests/core/naive.py: the paper's loop, rescanning every owner for each preemption) decides on the
same snapshot; its plan must be the one decide made (a mismatch ends the run with an error), and the
ratio of the two times is printed. Figures are medians of ``--repeat`` runs (the naive loop runs once).

``--layout partitionable``: the slots are dynamic slots carved from partitionable machines of 32
cores, 256 GiB and 4 GPUs, for jobs of mixed shapes (1 to 16 cores, some with a GPU); shares are in
cores and GPUs, and the decision is timed in the cpus and the dominant unit, from the kept view and
from the plain snapshot (the view built inside the call). The naive reference takes static slots
only.

    .venv/bin/python scripts/bench_policy.py [--jobs N] [--slots N] [--owners N] [--repeat N]
                                             [--p P ...] [--layout static|partitionable]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "core"))

from naive import naive_decide  # noqa: E402 - tests/core/naive.py

from osep.core.model import Job, JobId, JobState, Slot, Snapshot  # noqa: E402
from osep.core.plan import Plan, Target, VictimOrder  # noqa: E402
from osep.core.policy import PolicySettings, decide  # noqa: E402
from osep.core.resources import Unit  # noqa: E402
from osep.core.shares import ShareTable  # noqa: E402
from osep.core.view import PoolView  # noqa: E402


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


SHAPES = [(1, 2048, 0)] * 10 + [(2, 4096, 0)] * 4 + [(4, 8192, 0)] * 3 + [(8, 16384, 0), (16, 32768, 0),
                                                                          (1, 8192, 1)]
MACHINE = (32, 256 * 1024, 4)


def build_partitionable(jobs: int, slots: int, owners: int, seed: int
                        ) -> tuple[Snapshot, ShareTable, ShareTable]:
    """``slots`` running jobs in dynamic slots on as many machines as they fill (one core in 16
    left unclaimed), the rest of ``jobs`` idle; shares in cores, and in cores and GPUs."""
    rnd = random.Random(seed)
    now = 1_000_000.0
    names = [f"owner{k:05d}" for k in range(owners)]
    weights = [1.0 / (k + 1) ** 0.8 for k in range(owners)]
    owner_of = rnd.choices(names, weights=weights, k=jobs)
    slot_list: list[Slot] = []
    job_list = []
    machine, used = 0, [0, 0, 0]

    def close(m: int, used: list[int]) -> None:
        slot_list.append(Slot(f"slot1@host{m}", MACHINE[0] - used[0], MACHINE[1] - used[1],
                              MACHINE[2] - used[2], partitionable=True))

    for k, owner in enumerate(owner_of):
        cpus, memory, gpus = rnd.choice(SHAPES)
        if k < slots:
            if used[0] + cpus > MACHINE[0] - 2 or used[2] + gpus > MACHINE[2]:
                close(machine, used)
                machine, used = machine + 1, [0, 0, 0]
            name = f"slot1_{k}@host{machine}"
            slot_list.append(Slot(name, cpus, memory, gpus, parent=f"slot1@host{machine}"))
            used = [used[0] + cpus, used[1] + memory, used[2] + gpus]
            job_list.append(Job(JobId("bench", k, 0), owner, JobState.RUNNING, now - 90_000, name,
                                start_time=now - rnd.uniform(0, 86_400), cpus=cpus, memory=memory,
                                gpus=gpus))
        else:
            job_list.append(Job(JobId("bench", k, 0), owner, JobState.IDLE, now - rnd.uniform(0, 3_600),
                                cpus=cpus, memory=memory, gpus=gpus))
    close(machine, used)
    snapshot = Snapshot(now, tuple(slot_list), tuple(job_list))
    totals = snapshot.totals()
    raw = [rnd.uniform(0.1, 10.0) for _ in names]
    total = sum(raw)
    cores = ShareTable({n: {"cpus": totals[1] * r / total} for n, r in zip(names, raw, strict=False)})
    both = ShareTable({n: {"cpus": totals[1] * r / total, "gpus": totals[3] * r / total}
                       for n, r in zip(names, raw, strict=False)})
    return snapshot, cores, both


def cpu(func, *args):  # type: ignore[no-untyped-def]
    start = time.process_time()
    out = func(*args)
    return out, time.process_time() - start


def kept(snapshot: Snapshot) -> tuple[Snapshot, float]:
    """The snapshot carrying a view kept of it, and the CPU seconds building the view took."""
    view, took = cpu(PoolView.of, snapshot.slots, snapshot.jobs)
    return view.snapshot(snapshot.time, snapshot.kept), took


def time_decide(snapshot: Snapshot, settings: PolicySettings, repeat: int) -> tuple[Plan, float]:
    """The plan and the median CPU seconds of ``repeat`` decisions."""
    times = []
    plan = None
    for _ in range(repeat):
        plan, took = cpu(decide, snapshot, settings)
        times.append(took)
    assert isinstance(plan, Plan)
    return plan, statistics.median(times)


def partitionable(args: argparse.Namespace) -> None:
    t0 = time.process_time()
    plain, cores, both = build_partitionable(args.jobs, args.slots, args.owners, args.seed)
    built = time.process_time() - t0
    snapshot, viewed = kept(plain)
    machines = sum(1 for s in plain.slots if s.partitionable)
    print(f"snapshot: {args.jobs:,} jobs of mixed shapes, {args.slots:,} dynamic slots on {machines:,} "
          f"partitionable machines, {args.owners:,} owners (built in {built:.2f} s CPU, its kept view "
          f"in {viewed:.2f} s; neither counted below)")
    print(f"{'unit':9} {'target':9} {'p':>6} {'vacates':>8} {'groups':>7} {'claims':>7} {'kept s':>7} "
          f"{'plain s':>8}")
    cases = [(Unit.CPUS, Target.OWNER, cores), (Unit.CPUS, Target.FEASIBLE, cores),
             (Unit.DOMINANT, Target.OWNER, both)]
    for p in args.p:
        for unit, target, shares in cases:
            settings = PolicySettings(shares, target=target, max_vacates=p, unit=unit)
            plan, fast = time_decide(snapshot, settings, args.repeat)
            again, slow = time_decide(plain, settings, 1)
            if again != plan:
                sys.exit(f"error: the plan from the kept view differs from the plain snapshot's "
                         f"({unit.value}, {target.value}, p = {p})")
            groups = len({v.group for v in plan.vacates})
            print(f"{unit.value:9} {target.value:9} {plan.max_vacates:>6} {len(plan.vacates):>8} "
                  f"{groups:>7} {len(plan.claims):>7} {fast:>7.3f} {slow:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--slots", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--p", type=int, nargs="+", default=[20, 1000],
                        help="p, the most vacates a cycle plans (several: one table row each)")
    parser.add_argument("--layout", choices=("static", "partitionable"), default="static")
    args = parser.parse_args()
    if args.layout == "partitionable":
        partitionable(args)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory of this process: {peak:.0f} MiB")
        return

    t0 = time.process_time()
    plain, shares = build(args.jobs, args.slots, args.owners, args.seed)
    built = time.process_time() - t0
    snapshot, viewed = kept(plain)
    print(f"snapshot: {args.jobs:,} jobs, {args.slots:,} slots, {args.owners:,} owners (built in "
          f"{built:.2f} s CPU, its kept view in {viewed:.2f} s; neither counted below)")
    print(f"{'target':9} {'victims':10} {'p':>5} {'vacates':>8} {'claims':>7} {'decide s':>9} "
          f"{'naive s':>8} {'naive/decide':>13}")
    for p in args.p:
        for target in Target:
            for order in VictimOrder:
                settings = PolicySettings(shares, target=target, victim_order=order, max_vacates=p)
                plan, fast = time_decide(snapshot, settings, args.repeat)
                reference, slow = cpu(naive_decide, plain, settings)
                if reference != plan:
                    sys.exit(f"error: the naive loop's plan differs from decide's ({target.value}, "
                             f"{order.value}, p = {p})")
                print(f"{target.value:9} {order.value:10} {plan.max_vacates:>5} {len(plan.vacates):>8} "
                      f"{len(plan.claims):>7} {fast:>9.3f} {slow:>8.2f} {slow / fast:>12.0f}x")
    _, whole = cpu(decide, plain, PolicySettings(shares, max_vacates=args.p[0]))
    print(f"decide on the plain snapshot (its view built inside the call), p = {args.p[0]}: "
          f"{whole:.2f} s CPU")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()

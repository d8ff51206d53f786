#!/usr/bin/env python3
"""How long a simulation takes at scale: prints figures, asserts nothing.

Two workloads, both drawn from the LCG 2005 trace (osep/data/traces/LCG-2005.swf.gz), owners being the
trace's virtual organisations (``group<G>``) with shares in proportion to the core-seconds each asks
for, on one-core slots (the trace's jobs are single-core):

- ``week``: a synthetic week, by default 1,000,000 jobs on 10,000 slots; each job's owner and run
  time are those of a trace job drawn at random, its submit time uniform over the week.
- ``trace``: the whole trace (187,520 jobs over 11 days) on 1,580 slots, the cores it keeps busy on
  average, so that owners compete.

Each policy runs as ``osep simulate`` runs it (:func:`osep.experiment.runs.run_policy`: the simulation
and its metrics), on a scenario built here (the scenario loader's job-count bound does not apply), in
a child process of its own: its CPU seconds from the process clock (the workload's building not
counted) and its peak resident memory (building included). The run ends with the last job. Each
child also prints what the run gave (PV, vacates, the last job's end), so that two versions of the
simulator can be compared on the same workload.

    .venv/bin/python scripts/bench_sim.py week [--jobs N] [--slots N] [--days D] [--policies greedy,osep]
    .venv/bin/python scripts/bench_sim.py trace [--slots N] [--policies greedy,fairshare,osep]
    ... [--repeat N] [--seed S] [--negotiation S] [--interval T] [--profile DIR]

``--profile DIR``: each run under cProfile, its statistics written to DIR/<workload>-<policy>.prof and
the functions that took the most time printed.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from osep import log  # noqa: E402
from osep.config.scenario import Scenario  # noqa: E402
from osep.core.model import JobId  # noqa: E402
from osep.core.policy import PolicySettings  # noqa: E402
from osep.core.shares import ShareTable  # noqa: E402
from osep.experiment.runs import run_policy  # noqa: E402
from osep.sim import swf  # noqa: E402
from osep.sim.specs import JobSpec, PoolSettings, SlotSpec  # noqa: E402

TRACE = ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz"
DAY = 86400.0
DEFAULTS = {"week": {"slots": 10_000, "policies": "greedy,osep"},
            "trace": {"slots": 1_580, "policies": "greedy,fairshare,osep"}}


def week(trace: Path, jobs: int, days: float, seed: int) -> list[JobSpec]:
    """``jobs`` jobs submitted uniformly over ``days``, each with the owner and run time of a trace
    job drawn at random."""
    pool = swf.read(trace, "group").jobs
    rnd = random.Random(seed)
    picks = rnd.choices(pool, k=jobs)
    submits = sorted(rnd.uniform(0.0, days * DAY) for _ in range(jobs))
    numbering: dict[str, int] = defaultdict(int)
    out = []
    for pick, submit in zip(picks, submits, strict=True):
        n = numbering[pick.owner]
        numbering[pick.owner] = n + 1
        out.append(JobSpec(JobId(pick.owner, 0, n), pick.owner, submit, pick.runtime))
    return out


def scenario(name: str, jobs: list[JobSpec], slots: int, negotiation: float, interval: float
             ) -> Scenario:
    """The jobs on ``slots`` one-core slots, each owner's share its part of the core-seconds asked."""
    work: dict[str, float] = defaultdict(float)
    for job in jobs:
        work[job.owner] += job.runtime * job.cpus
    total = sum(work.values())
    shares = ShareTable({owner: slots * w / total for owner, w in sorted(work.items())})
    return Scenario(
        path="(scripts/bench_sim.py)", name=name, description="", policies=(),
        slots=tuple(SlotSpec(f"slot{k}") for k in range(slots)), jobs=tuple(jobs),
        pool=PoolSettings(negotiation_interval=negotiation, vacate_delay=10.0),
        policy=PolicySettings(shares), interval=interval)


def child(args: argparse.Namespace) -> None:
    """One policy on one workload; prints one JSON line."""
    log.configure("warning")  # as the osep command does by default
    if args.workload == "week":
        jobs = week(args.trace, args.jobs, args.days, args.seed)
    else:
        jobs = swf.read(args.trace, "group").jobs
    built = scenario(args.workload, jobs, args.slots, args.negotiation, args.interval)
    del jobs
    profile = None
    if args.profile is not None:
        import cProfile

        profile = cProfile.Profile()
    start = time.process_time()
    if profile is not None:
        profile.enable()
    outcome = run_policy(built, args.policy)
    if profile is not None:
        profile.disable()
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    m = outcome.metrics
    print(json.dumps({
        "cpu": cpu, "rss": peak, "jobs": len(built.jobs), "end": outcome.result.end,
        "pv": m.violation, "vacates": m.vacates, "lc": m.capacity_loss, "pc": m.cost,
        "makespan": m.makespan, "cycles": outcome.result.cycles,
        "finished": sum(o.finished for o in m.owners),
    }))
    if profile is not None:
        import pstats

        out = Path(args.profile) / f"{args.workload}-{args.policy}.prof"
        profile.dump_stats(out)
        stats = pstats.Stats(str(out), stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)


def parent(args: argparse.Namespace) -> None:
    policies = (args.policies or DEFAULTS[args.workload]["policies"]).split(",")
    shown = f"{args.jobs:,} jobs over {args.days:g} days" if args.workload == "week" else "the whole trace"
    print(f"{args.workload}: {shown}, {args.slots:,} one-core slots, negotiation every "
          f"{args.negotiation:g} s, enforcement every {args.interval:g} s; {args.repeat} run(s) each")
    runs: dict[str, list[dict[str, float]]] = {p: [] for p in policies}
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    for _ in range(args.repeat):
        for policy in policies:  # interleaved, so that the machine's load falls on each alike
            command = [sys.executable, __file__, args.workload, "--child", policy,
                       "--slots", str(args.slots), "--jobs", str(args.jobs), "--days", str(args.days),
                       "--seed", str(args.seed), "--negotiation", str(args.negotiation),
                       "--interval", str(args.interval), "--trace", str(args.trace)]
            if args.profile is not None:
                command += ["--profile", str(args.profile)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sys.exit(f"{policy}: the run failed:\n{done.stderr}")
            if args.profile is not None:
                print(done.stderr)
            runs[policy].append(json.loads(done.stdout.strip().splitlines()[-1]))
    base = statistics.median(r["cpu"] for r in runs[policies[0]])
    print(f"{'policy':<10} {'CPU s (median)':>14} {'runs':>24} {'x ' + policies[0]:>8} {'peak MiB':>9}"
          f" {'ended at (d)':>12} {'vacates':>8} {'PV (slot-s)':>16}")
    for policy in policies:
        cpus = [r["cpu"] for r in runs[policy]]
        last = runs[policy][-1]
        print(f"{policy:<10} {statistics.median(cpus):>14.1f} "
              f"{' '.join(f'{c:.1f}' for c in cpus):>24} {statistics.median(cpus) / base:>8.2f} "
              f"{max(r['rss'] for r in runs[policy]):>9.0f} {last['end'] / DAY:>12.2f} "
              f"{last['vacates']:>8} {last['pv']:>16.6g}")
    print("results:", json.dumps({p: {k: v for k, v in runs[p][-1].items() if k not in ("cpu", "rss")}
                                  for p in policies}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=("week", "trace"))
    parser.add_argument("--child", dest="policy", help=argparse.SUPPRESS)
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--jobs", type=int, default=1_000_000, help="week: jobs drawn")
    parser.add_argument("--days", type=float, default=7.0, help="week: days the submits span")
    parser.add_argument("--slots", type=int)
    parser.add_argument("--policies", help="comma-separated, the first the baseline of the ratios")
    parser.add_argument("--negotiation", type=float, default=60.0, help="seconds between negotiations")
    parser.add_argument("--interval", type=float, default=300.0, help="t: seconds between enforcements")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2005)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    if args.slots is None:
        args.slots = DEFAULTS[args.workload]["slots"]
    if args.policy is not None:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()

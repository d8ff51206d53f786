#!/usr/bin/env python3
"""How fast `osep replay` reads large HTCondor event logs, and how much memory it needs.

    .venv/bin/python scripts/bench_replay.py [--jobs 10000 100000 1000000] [--owners 28] [--slots 2000]
                                             [--runs 3] [--keep DIR] [--code DIR ...]

For each size it generates a synthetic but well-formed history (Poisson arrivals in daily waves over
the owners, log-normal run times, first-come-first-served on a fixed pool, 2% of runs evicted and run
again) as one HTCondor event log per owner, in the format the schedd writes (the bindings' own parser reads it),
plus a decision log naming the evictions as osep's. It then runs `osep replay` on it in a child
process and prints the child's own CPU time (user + system: the machine is shared, so wall time says
little), events per CPU second and its peak resident memory, the median of ``--runs`` runs. Peak
memory should stay flat as the log grows: replay keeps the jobs in flight, not the events. With
``--keep DIR`` the logs are written to DIR/JOBS and used again when they are already there. With
``--code DIR ...`` each replay is run once with the osep package of each DIR (a checkout of other
code, say the code before a change), in turn, so that the figures of each are taken in the same
minutes on the same logs: what a busy machine allows comparing.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

HEADER = "{code:03d} ({cluster:03d}.{proc:03d}.000) {stamp} "
SUBMIT = "Job submitted from host: <10.0.0.1:9618?addrs=10.0.0.1-9618>\n...\n"
EXECUTE = "Job executing on host: <10.0.0.2:9618>\n\tSlotName: slot{slot}@wn{node}\n...\n"
USAGE = "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  {what}\n"
EVICT = ("Job was evicted.\n\t(0) CPU times\n" + USAGE.format(what="Run Remote Usage")
         + USAGE.format(what="Run Local Usage")
         + "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n...\n")
TERMINATE = ("Job terminated.\n\t(1) Normal termination (return value 0)\n"
             + "".join(USAGE.format(what=w) for w in ("Run Remote Usage", "Run Local Usage",
                                                       "Total Remote Usage", "Total Local Usage"))
             + "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
             "\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n...\n")
EPOCH = 1_790_000_000  # 2026-09-21


def generate(out: Path, jobs: int, owners: int, slots: int, seed: int = 1) -> tuple[int, int]:
    """Write the logs; returns (events, bytes)."""
    rng = random.Random(seed)
    mean_run = 3600.0
    rate = slots / mean_run * 0.95  # mean arrivals per second: the pool about 95% busy...
    names = [f"vo{k:02d}" for k in range(owners)]
    weights = [1.0 / (k + 1) for k in range(owners)]  # a few big owners, a long tail
    free = [(0.0, k) for k in range(slots)]  # (time the slot is free, slot)
    per_owner: dict[str, list[tuple[float, int, int, int, int]]] = {n: [] for n in names}
    vacates: list[tuple[float, str]] = []
    t = 0.0
    for k in range(jobs):
        # ...in daily waves, so that queues build up in the afternoon and drain at night.
        t += rng.expovariate(rate * (1 + 0.6 * math.sin(2 * math.pi * t / 86400)))
        owner = rng.choices(names, weights)[0]
        runtime = min(rng.lognormvariate(7.6, 0.9), 48 * 3600.0)
        cluster, proc = k // 100 + 1, k % 100
        events = per_owner[owner]
        events.append((t, 0, cluster, proc, 0))
        ready = t
        while True:
            at, slot = heapq.heappop(free)
            start = max(ready, at)
            events.append((start, 1, cluster, proc, slot))
            if rng.random() < 0.02:  # evicted part way, queued again
                end = start + runtime * rng.random()
                events.append((end, 4, cluster, proc, slot))
                vacates.append((end, f"{cluster}.{proc}"))
                heapq.heappush(free, (end, slot))
                ready = end
                continue
            end = start + runtime
            events.append((end, 5, cluster, proc, slot))
            heapq.heappush(free, (end, slot))
            break
    count = size = 0
    bodies = {0: SUBMIT, 4: EVICT, 5: TERMINATE}
    rank = {0: 0, 4: 1, 5: 1, 1: 2}  # at one instant: submits, then runs ending, then starting
    for owner, events in per_owner.items():
        events.sort(key=lambda e: (e[0], rank[e[1]], e[2], e[3]))
        with (out / f"{owner}.log").open("w") as handle:
            for when, code, cluster, proc, slot in events:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(EPOCH + when))
                body = bodies.get(code) or EXECUTE.format(slot=slot % 32 + 1, node=slot // 32)
                text = HEADER.format(code=code, cluster=cluster, proc=proc, stamp=stamp) + body
                handle.write(text)
                size += len(text)
                count += 1
    with (out / "decisions.jsonl").open("w") as handle:
        handle.write(json.dumps({"event": "started"}) + "\n")
        for cycle, (when, job) in enumerate(sorted(vacates), start=1):
            handle.write(json.dumps({"event": "cycle", "cycle": cycle, "time": EPOCH + when - 1,
                                     "capacity": slots}) + "\n")
            handle.write(json.dumps({"event": "action", "kind": "vacate", "cycle": cycle,
                                     "time": EPOCH + when - 1, "job": f"cm#{job}",
                                     "outcome": "done"}) + "\n")
    (out / "policy.toml").write_text(
        "[owners]\n" + "".join(f'{n} = "{100 / owners:.3f}%"\n' for n in names[:owners // 2])
    )
    return count, size


# Runs osep in the child and then reports the child's own peak resident memory on stderr.
MEASURED = """
import resource, runpy, sys
if sys.argv[1] != "-":
    sys.path.insert(0, sys.argv[1])
sys.argv = ["osep", *sys.argv[2:]]
try:
    runpy.run_module("osep", run_name="__main__")
finally:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print("peak_kib", usage.ru_maxrss, "cpu_s", usage.ru_utime + usage.ru_stime, file=sys.stderr)
"""


def replay(out: Path, owners: int, code: Path | None = None) -> tuple[float, float, str]:
    """Run osep replay in a child (with the osep package in ``code``, or this one); returns (its CPU
    seconds, its peak RSS in MiB, a summary)."""
    logs = [f"vo{k:02d}={out / f'vo{k:02d}.log'}" for k in range(owners)]
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, str(code.resolve()) if code else "-", "replay", *logs,
         "--policy-file", str(out / "policy.toml"), "--decisions", str(out / "decisions.jsonl"), "--format", "json"],
        capture_output=True, text=True, check=False, env={"TZ": "UTC", "PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        raise SystemExit(f"osep replay failed:\n{done.stderr}")
    figures = done.stderr.split("peak_kib")[-1].split()
    peak, seconds = int(figures[0]), float(figures[2])
    doc = json.loads(done.stdout)
    rec = doc["policies"]["recorded"]
    summary = (f"PV {rec['PV']:.3g}, LC {rec['LC']:.3g}, PC {rec['PC']:.3g} slot-s, "
               f"{rec['vacates']} evictions ({rec['evicted_by_osep']} osep's)")
    return seconds, peak / 1024.0, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--owners", type=int, default=28)
    parser.add_argument("--slots", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3, help="Replays per size (the median is shown).")
    parser.add_argument("--keep", type=Path,
                        help="Write the logs here and keep them (or use those already there).")
    parser.add_argument("--code", type=Path, nargs="+", default=[None],
                        help="Checkouts whose osep package to replay with, in turn (a row each).")
    parser.add_argument("--generate-into", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_into is not None:
        # The generator runs in a child of its own: a child forked from a parent holding the whole
        # history would inherit its size, and ru_maxrss would charge it to the replay.
        events, size = generate(args.generate_into, args.jobs[0], args.owners, args.slots)
        print(events, size)
        return 0
    print(f"{'jobs':>9} {'events':>10} {'log MiB':>8} {'generate s':>10} {'replay CPU s':>12} "
          f"{'events/s':>9} {'peak MiB':>9}  result" + ("  code" if len(args.code) > 1 else ""))
    for jobs in sorted(args.jobs):
        out = Path(tempfile.mkdtemp(prefix="osep-bench-")) if args.keep is None else \
            args.keep / f"{jobs}"
        out.mkdir(parents=True, exist_ok=True)
        try:
            started = time.monotonic()
            made_file = out / "made.txt"
            if args.keep is not None and made_file.exists():
                made_text, generated = made_file.read_text(), 0.0
            else:
                made_text = subprocess.run(
                    [sys.executable, __file__, "--generate-into", str(out), "--jobs", str(jobs),
                     "--owners", str(args.owners), "--slots", str(args.slots)],
                    capture_output=True, text=True, check=True,
                ).stdout
                made_file.write_text(made_text)
                generated = time.monotonic() - started
            events, size = (int(x) for x in made_text.split())
            measured: dict[int, list[tuple[float, float, str]]] = {k: [] for k in range(len(args.code))}
            for _ in range(max(1, args.runs)):  # the checkouts in turn, so each sees the same load
                for k, code in enumerate(args.code):
                    measured[k].append(replay(out, args.owners, code))
            for k, code in enumerate(args.code):
                runs = sorted(measured[k])
                seconds, _, summary = runs[len(runs) // 2]
                peak = statistics.median(r[1] for r in runs)
                spread = f" ({runs[0][0]:.1f} to {runs[-1][0]:.1f})" if len(runs) > 1 else ""
                which = f"  {code}" if len(args.code) > 1 else ""
                print(f"{jobs:>9,} {events:>10,} {size / 2**20:>8.0f} {generated:>10.1f} "
                      f"{seconds:>12.1f} {events / seconds:>9,.0f} {peak:>9.0f}  {summary}{spread}"
                      f"{which}", flush=True)
        finally:
            if args.keep is None:
                shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

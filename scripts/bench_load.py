#!/usr/bin/env python3
"""Loading many jobs: the LCG 2005 log (188k jobs) through ``osep simulate --trace`` and as a CSV job
list, the bundled LCG scenario (its first day) from the log and from a CSV, one TOML table per job
(parsed only: such a file is past a scenario file's bounds), and a million jobs in a CSV.

Each load runs in a child process; the figures are its CPU time (process clock, the load alone) and
its peak resident memory (the interpreter's ~40 MiB included), the median of ``--runs``.

    .venv/bin/python scripts/bench_load.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LCG = ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz"
POOL = '[pool]\nslots = {slots}\nnegotiation_interval = 300\n[policy]\ninterval = 300\n[owners]\n"{owner}" = 1\n'


def child(kind: str, path: str) -> None:
    """One load, in this process: print its CPU seconds, peak RSS (MiB) and jobs as JSON."""
    start = time.process_time()
    if kind == "trace":
        from osep.config.trace import TraceOptions, trace_scenario

        jobs = len(trace_scenario(TraceOptions(Path(path), "group.user", slots=1580, negotiation_interval=300,
                                               horizon=15000), 300).scenario.jobs)
    elif kind == "toml-parse":
        import tomllib

        jobs = len(tomllib.loads(Path(path).read_text())["submit"])
    else:
        from osep.config.scenario import load_scenario

        jobs = len(load_scenario(path).jobs)
    cpu = time.process_time() - start
    print(json.dumps({"cpu": cpu, "rss": peak_rss(), "jobs": jobs}))


def peak_rss() -> float:
    """This process's peak resident memory in MiB (VmHWM: unlike ru_maxrss, it starts afresh at exec,
    not counting the parent's memory the child was forked with)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(kind: str, path: Path, runs: int) -> dict[str, float]:
    out = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, __file__, "--child", kind, str(path)], check=True,
                              capture_output=True, text=True)
        out.append(json.loads(done.stdout))
    return {k: statistics.median(o[k] for o in out) for k in ("cpu", "rss", "jobs")}


def write_files(tmp: Path) -> dict[str, Path]:
    from osep.sim import swf

    work = swf.read(LCG, "group.user", limit=10**6)
    rows = [f"{j.owner},{j.submit!r},{j.runtime!r}\n" for j in work.jobs]
    (tmp / "lcg.csv").write_text("owner,submit,runtime\n" + "".join(rows))
    owner = work.jobs[0].owner
    (tmp / "lcg-csv.toml").write_text("[scenario]\nhorizon = 15000\n" + POOL.format(slots=1580, owner=owner)
                                      + '[workload]\ncsv = "lcg.csv"\n')
    (tmp / "tables.toml").write_text("".join(f'[[submit]]\nowner = "{j.owner}"\ntime = {j.submit!r}\n'
                                             f"runtime = {j.runtime!r}\n" for j in work.jobs))
    scenarios = ROOT / "osep" / "data" / "scenarios"
    bundled = (scenarios / "lcg-2005.toml").read_text()
    head, _, tail = bundled.partition("[workload]")
    rest = tail.split("\n\n", 1)[1]
    (tmp / "day-csv.toml").write_text(f'{head}[workload]\ncsv = "{scenarios / "lcg-2005.csv"}"\n\n{rest}')
    (tmp / "day-log.toml").write_text(f'{head}[workload]\nswf = "{LCG}"\nowners = "group.user"\n'
                                      f"until = 86400\n\n{rest}")
    # A million jobs, owners and run times drawn from the log, arrivals over a week.
    rng = random.Random(11)
    picks = [rng.choice(work.jobs) for _ in range(1_000_000)]
    times = sorted(rng.uniform(0, 7 * 86400) for _ in picks)
    (tmp / "million.csv").write_text("owner,submit,runtime,cpus\n" + "".join(
        f"{j.owner},{t:.0f},{j.runtime!r},1\n" for j, t in zip(picks, times, strict=True)))
    (tmp / "million.toml").write_text("[scenario]\nhorizon = 2000\n" + POOL.format(slots=10000, owner=owner)
                                      + '[workload]\ncsv = "million.csv"\n')
    return {"trace": LCG, "csv": tmp / "lcg-csv.toml", "toml-parse": tmp / "tables.toml",
            "day-log": tmp / "day-log.toml", "day-csv": tmp / "day-csv.toml", "million": tmp / "million.toml"}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp))
        labels = {
            "trace": "LCG log, all of it, osep simulate --trace (group.user)",
            "csv": "LCG, all of it, as a CSV job list",
            "toml-parse": "LCG, all of it, one [[submit]] table per job (TOML parse only)",
            "day-log": "bundled lcg-2005.toml (first day) from the log",
            "day-csv": "bundled lcg-2005.toml (first day) from a CSV",
            "million": "1,000,000 jobs in a CSV job list",
        }
        print(f"| load | jobs | CPU (median of {args.runs}) | peak RSS |")
        print("|---|---|---|---|")
        for kind, label in labels.items():
            m = measure("scenario" if kind in ("csv", "day-log", "day-csv", "million") else kind, files[kind],
                        args.runs)
            print(f"| {label} | {m['jobs']:,.0f} | {m['cpu']:.2f} s | {m['rss']:.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How many candidates `osep tune` runs per minute on one week of the LCG 2005 trace.

    .venv/bin/python scripts/bench_tune.py [--processes 1 2] [-p 1,2,4,8] [--days 7]

The history is the trace's first ``--days`` days with its virtual organisations as owners on 1,580
one-core slots and the shares of ``docs/studies/lcg-2005-vos.toml``; the candidates are ``-p``'s values
under both victim orders at t = 300 s, and the policy file's own settings. For each number of worker
processes the sweep runs once from an empty journal, and the script prints the candidates, the wall
time and the candidates per minute (wall time: the processes run side by side). Each candidate is
checked to give the same figures however many processes ran it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

from osep.config.trace import TraceOptions  # noqa: E402
from osep.tune.candidates import baseline, grid  # noqa: E402
from osep.tune.front import Pick  # noqa: E402
from osep.tune.history import TUNE, TraceHistory  # noqa: E402
from osep.tune.journal import Journal  # noqa: E402
from osep.tune.sweep import run_local  # noqa: E402
from osep.tune.tuning import Sweep, tune  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LCG = ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz"
POLICY = ROOT / "docs" / "studies" / "lcg-2005-vos.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("-p", default="1,2,4,8", help="the values of p to try")
    parser.add_argument("--days", type=float, default=7.0)
    args = parser.parse_args()
    started = time.perf_counter()
    history = TraceHistory(TraceOptions(LCG, owners="group", until=args.days * 86400, slots=1580,
                                        policy_file=POLICY))
    print(f"history read in {time.perf_counter() - started:.1f} s: {len(history.scenario(TUNE, 300.0).jobs):,} "
          f"jobs in {args.days:g} days")
    loaded = history.policy
    base = baseline(loaded.settings, loaded.interval, loaded.min_run_time, loaded.excess)
    sweep = Sweep(grid({"max_vacates": args.p, "interval": "300", "victim_order": "wallclock,lost-work",
                        "target": "owner", "min_run_time": "0", "excess": "fairshare"}, base), base, Pick())
    seen: dict[int, list[object]] = {}
    for processes in args.processes:
        with tempfile.TemporaryDirectory() as folder:
            journal = Journal(Path(folder) / "journal.jsonl", "bench", print)
            began = time.perf_counter()
            doc = tune(history, sweep, journal, lambda h, tasks, done, n=processes: run_local(h, tasks, done, n))
            wall = time.perf_counter() - began
            journal.close()
        count = len(sweep.candidates)
        print(f"{processes} process(es): {count} candidates in {wall:.1f} s of wall time, "
              f"{60 * count / wall:.1f} candidates per minute")
        seen[processes] = [(r["pv"], r["cost"], r["vacates"]) for r in doc["candidates"]]
    if len({tuple(v) for v in seen.values()}) > 1:
        sys.exit("the figures differ between numbers of processes")


if __name__ == "__main__":
    main()

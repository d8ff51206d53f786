#!/usr/bin/env python3
"""Re-record the event logs under tests/data/ from the live test pool (needs root, like the live tests).

    sudo scripts/testpool.py isolate -- .venv/bin/python scripts/record_logs.py [--out tests/data] [NAME ...]
                                                       # default: every scenario; the pool runs only
                                                       # in a network namespace of its own (isolate)

Each scenario (tests/live/recordings.py) runs on a fresh 4-slot pool; its event log, osep's decision
log and the policy are copied to OUT as NAME.events.log, NAME.decisions.jsonl and NAME.policy.toml.
The replay tests (tests/replay/test_replay_data.py) check figures worked out by hand from these very
files: after re-recording, work them out again from the new timestamps and update the tests.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "live"))

from harness import Live, TestPool  # noqa: E402
from recordings import SCENARIOS, SLOTS, record  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"one of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; there are {', '.join(SCENARIOS)}")
    for name in args.names or list(SCENARIOS):
        pool = TestPool()
        pool.start(cpus=SLOTS)
        with tempfile.TemporaryDirectory() as work:
            live = Live(pool, Path(work))
            try:
                rec = record(live, name, args.out)
            finally:
                live.close()
        print(f"{name}: {rec.events}" + (f", {rec.decisions}" if rec.decisions else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Write the LCG 2005 scenario (osep/data/scenarios/lcg-2005.toml and its job list, lcg-2005.csv) from the
trace itself.

The trace (osep/data/traces/LCG-2005.swf.gz, or ``--trace FILE``) records which virtual organisation
(field 13, ``group<G>``) and user (field 12, ``user<N>``) ran each job. The scenario makes them an
owner tree: every VO that used at least ``--least`` of the window's core seconds is a group whose
share is what it used (it contributed in proportion to its use, as the NASA scenario assumes of its
users), and its users are its members with equal shares. VOs below that are non-owners, their users
too. The pool is ``--slots`` one-core slots (the grid's 170 sites as one pool: the trace's jobs are
single-core). The window's jobs, as osep reads them from the log, go to a CSV job list beside the
scenario (loading it is about 7 times faster than reading the whole log again; docs/simulate.md "Real workload
logs"); ``osep simulate --trace`` with the same window reads the same jobs.

    .venv/bin/python scripts/lcg_scenario.py [--days 1] [--slots 800] [--least 0.01] [--horizon 3]
                                             [--out osep/data/scenarios/lcg-2005.toml]

The bundled scenario is ``--slots 600 --horizon 2.4`` (which writes it again byte for byte).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from osep.config.toml import key_text  # noqa: E402
from osep.sim import swf  # noqa: E402

TRACE = ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--days", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=800)
    parser.add_argument("--least", type=float, default=0.01)
    parser.add_argument("--negotiation", type=float, default=300.0)
    parser.add_argument("--interval", type=float, default=300.0)
    parser.add_argument("--horizon", type=float, default=3.0, help="days simulated")
    parser.add_argument("--out", type=Path, default=ROOT / "osep" / "data" / "scenarios" / "lcg-2005.toml")
    args = parser.parse_args()
    until = args.days * 86400
    work = swf.read(args.trace, "group.user", 0.0, until)
    used: dict[str, float] = defaultdict(float)
    users: dict[str, set[str]] = defaultdict(set)
    for job in work.jobs:
        group, _, user = job.owner.partition(".")
        used[group] += job.runtime * job.cpus
        users[group].add(user)
    total = sum(used.values())
    owning = [g for g in used if used[g] >= args.least * total]
    owned = sum(used[g] for g in owning)
    lines = [
        "# The LHC Computing Grid, 20 Nov 2005 onwards (Parallel Workloads Archive; acknowledge: Hui Li):",
        f"# the first {args.days:g} days, {len(work.jobs):,} single-core jobs of {len(used)} virtual",
        f"# organisations as an owner tree, on {args.slots} one-core slots.",
        "# Written by scripts/lcg_scenario.py from the trace; what it assumes:",
        "# - the grid's 170 sites are one pool of one-core slots, fewer than the jobs use on average",
        f"#   ({total / until:,.0f} cores busy), so that owners compete;",
        f"# - each VO that used at least {args.least:.0%} of the window's core-seconds contributed in",
        "#   proportion to what it used (its share); its users are its members, with equal shares;",
        "#   the other VOs are groups with no share (their users run on what owners leave unused);",
        f"# - negotiation every {args.negotiation:g} s, enforcement every {args.interval:g} s (the",
        "#   simulator's cost bound allows no shorter cycles for this many jobs), vacates take 10 s; no",
        "#   checkpoints in \"osep\", all work kept at the vacate in \"osep-ckpt\";",
        f"# - the run stops at {args.horizon:g} days (jobs of up to two days are still running then).",
        "",
        "[scenario]",
        'name = "lcg-2005"',
        f'description = "LCG 2005, first {args.days:g} days: {len(work.jobs):,} jobs of {len(used)} VOs '
        f'(as an owner tree) on {args.slots} slots"',
        'policies = ["greedy", "fairshare", "osep", "osep-ckpt"]',
        f"horizon = {args.horizon * 86400:g}",
        "",
        "[pool]",
        f"negotiation_interval = {args.negotiation:g}",
        "vacate_delay = 10",
        "",
        "[[pool.slots]]",
        f"count = {args.slots}",
        "",
        "[checkpoint]",
        'mode = "on-vacate"',
        "",
        "[policy]",
        'target = "owner"',
        f"interval = {args.interval:g}",
        "",
        "[workload]",
        f"# the jobs submitted in [0, {until:g}) s, owners by group.user, as osep reads them from",
        f"# ../traces/{args.trace.name}",
        f'csv = "{args.out.with_suffix(".csv").name}"',
        "",
    ]
    for group in sorted(used, key=lambda g: -used[g]):
        share = math.floor(1e4 * 100.0 * used[group] / owned) / 1e4 if group in owning else 0.0
        lines += [f"[owners.{key_text(group)}]", f'share = "{share:.4f}%"']
        members = sorted(users[group], key=lambda u: int(u.removeprefix("user")) if u[4:].isdigit() else 0)
        each = math.floor(1e6 * 100.0 / len(members)) / 1e6
        for user in members:
            lines += [f"[owners.{key_text(group)}.{key_text(user)}]", f'share = "{each:.6f}%"']
    jobs = args.out.with_suffix(".csv")
    jobs.write_text("owner,submit,runtime,cpus\n" + "".join(
        f"{j.owner},{_number(j.submit)},{_number(j.runtime)},{j.cpus}\n" for j in work.jobs))
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{args.out}: {len(work.jobs):,} jobs, {len(owning)} owning VOs of {len(used)}, "
          f"{sum(len(users[g]) for g in used)} member users")


def _number(value: float) -> str:
    """A time exactly as read: whole seconds without a fraction, others in full."""
    return str(int(value)) if value.is_integer() else repr(value)


if __name__ == "__main__":
    main()

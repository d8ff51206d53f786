#!/usr/bin/env python3
"""The share models side by side: every simulated policy, and OSEP over each fair-share model (the
hybrid), on the bundled scenarios. Prints Markdown tables (the README's "Every model side by side")
and, for scenarios with an owner tree, draws each top-level group's PV per policy.

    .venv/bin/python scripts/study.py [--out DIR] [SCENARIO.toml ...]

Default scenarios: paper-general, paper-job-size, tree and lcg-2005 (about a minute and a half in
all on a 2-core machine, most of it LCG).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from osep.config.scenario import load_scenario
from osep.log import configure
from osep.sim.experiment import Outcome, run_policy
from osep.sim.specs import Order
from osep.ui.plot import draw_groups

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("paper-general", "paper-job-size", "tree", "lcg-2005")
POLICIES = ("none", "fairshare", "slurm", "share", "grid", "cambridge", "osep", "osep-ckpt")
HYBRIDS = (Order.SLURM, Order.SHARE, Order.GRID)  # OSEP over each, owner targets


def run(path: Path) -> dict[str, Outcome]:
    scenario = load_scenario(path)
    out = {name: run_policy(scenario, name) for name in POLICIES}
    for order in HYBRIDS:
        out[f"osep+{order.value}"] = run_policy(replace(scenario, excess=order), "osep")
    return out


def figure(value: float) -> str:
    return f"{value / 1e6:.2f} M" if abs(value) >= 1e6 else f"{value:,.0f}"


def table(title: str, outcomes: dict[str, Outcome]) -> str:
    names = list(outcomes)
    lines = [f"**{title}**", "", "| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    rows = {
        "PV": lambda o: figure(o.metrics.violation),
        "LC": lambda o: figure(o.metrics.capacity_loss),
        "PC": lambda o: figure(o.metrics.cost),
        "vacates": lambda o: str(o.metrics.vacates),
    }
    for label, get in rows.items():
        lines.append(f"| {label} | " + " | ".join(get(outcomes[n]) for n in names) + " |")
    first = outcomes[names[0]]
    if first.groups is not None:
        for group in first.groups.owners:
            def pv(o: Outcome, g: str = group.owner) -> str:
                assert o.groups is not None
                return figure(next(x.violation for x in o.groups.owners if x.owner == g))

            def us(o: Outcome, g: str = group.owner) -> str:
                assert o.groups is not None
                s = next(x.satisfaction for x in o.groups.owners if x.owner == g)
                return "-" if s is None else f"{s:.0f}%"

            lines.append(f"| PV {group.owner} | " + " | ".join(pv(outcomes[n]) for n in names) + " |")
            lines.append(f"| A_US {group.owner} | " + " | ".join(us(outcomes[n]) for n in names) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("."), help="where the plots go")
    args = parser.parse_args()
    configure("error")
    paths = args.scenarios or [ROOT / "config" / "scenarios" / f"{n}.toml" for n in DEFAULT]
    args.out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        began = time.process_time()
        outcomes = run(path)
        spent = time.process_time() - began
        print(table(f"{path.stem} ({spent:.1f} s CPU for {len(outcomes)} runs)", outcomes))
        print()
        if next(iter(outcomes.values())).groups is not None:
            plot = args.out / f"study-{path.stem}.png"
            draw_groups(plot, f"{path.stem}: PV per top-level group", outcomes)
            print(f"plot: {plot}\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The share models side by side: every simulated policy, and OSEP over each fair-share model (the
hybrid), on the bundled scenarios. Prints Markdown tables (docs/results.md's "Every model side by side")
and, for scenarios with an owner tree, draws each top-level group's PV per policy.

    .venv/bin/python scripts/study.py [--out DIR] [SCENARIO.toml ...]
    .venv/bin/python scripts/study.py --whole-lcg [--out DIR] [--policy NAME ...] [--resume]

Default scenarios: paper-general, paper-job-size, tree and lcg-2005 (17 s in all on 2026-11-25, on
a 2-core machine, 15.6 s of it LCG's 11 runs).

``--whole-lcg``: the whole LCG 2005 trace instead (osep/data/traces/LCG-2005.swf.gz, 187,520 jobs on
1,580 one-core slots, its 28 virtual organisations as groups with their users under them, as
``osep simulate --trace ... --cores 1580 --owners group.user`` runs it) under every policy and
hybrid. Each run's figures, per group too, go to DIR/whole-lcg/NAME.json as it ends (``--resume``
keeps those already there); then DIR/whole-lcg.csv and DIR/whole-lcg.json (one row per policy and
group: PV, A_US, vacates, work redone; and per policy the totals, LC and PC, and its CPU time), a
Markdown summary on standard output, and DIR/study-whole-lcg.png (each group's PV per policy).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

from osep.config.scenario import Scenario, load_scenario  # noqa: E402
from osep.config.trace import TraceOptions, trace_scenario  # noqa: E402
from osep.experiment.runs import Outcome, run_policy  # noqa: E402
from osep.log import configure  # noqa: E402
from osep.sim.specs import Order  # noqa: E402
from osep.ui.plot import draw_groups  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("paper-general", "paper-job-size", "tree", "lcg-2005")
POLICIES = ("greedy", "fairshare", "slurm", "share", "grid", "cambridge", "osep", "osep-ckpt")
HYBRIDS = (Order.SLURM, Order.SHARE, Order.GRID)  # OSEP over each, owner targets
TRACE = ROOT / "osep" / "data" / "traces" / "LCG-2005.swf.gz"
TRACE_SLOTS = 1580  # the cores the trace keeps busy on average (scripts/bench_sim.py's choice)


def run(path: Path) -> dict[str, Outcome]:
    scenario = load_scenario(path)
    return {name: run_named(scenario, name) for name in NAMES}


NAMES = (*POLICIES, *(f"osep+{order.value}" for order in HYBRIDS))


def run_named(scenario: Scenario, name: str) -> Outcome:
    """A policy of :data:`POLICIES`, or ``osep+MODEL``: OSEP with the excess ordered by MODEL."""
    if name.startswith("osep+"):
        return run_policy(replace(scenario, excess=Order(name.removeprefix("osep+"))), "osep")
    return run_policy(scenario, name)


def whole_lcg_row(name: str, outcome: Outcome, cpu: float) -> dict[str, object]:
    """One run on the whole trace, as DIR/whole-lcg/NAME.json keeps it."""
    m = outcome.metrics
    assert outcome.groups is not None  # the trace's owners are a tree: its groups are measured
    return {
        "policy": name, "cpu_seconds": round(cpu, 1), "pv": m.violation, "lc": m.capacity_loss,
        "pc": m.cost, "work_redone": m.lost_work, "vacate_time": m.vacate_time, "vacates": m.vacates,
        "makespan": m.makespan, "end": outcome.result.end,
        "jobs": sum(o.jobs for o in m.owners), "finished": sum(o.finished for o in m.owners),
        "groups": [{"group": g.owner, "share": g.share, "jobs": g.jobs, "finished": g.finished,
                    "pv": g.violation, "a_us": g.satisfaction, "vacates": g.vacated,
                    "work_redone": g.lost_work, "lc": g.capacity_loss, "pc": g.lost_work + g.vacate_time}
                   for g in outcome.groups.owners],
    }


def whole_lcg(out: Path, names: list[str], resume: bool) -> None:
    """Every policy (``names``) on the whole LCG trace; see the module's description."""
    runs = out / "whole-lcg"
    runs.mkdir(parents=True, exist_ok=True)
    scenario: Scenario | None = None
    rows: list[dict[str, object]] = []
    for name in names:
        kept = runs / f"{name}.json"
        if resume and kept.exists():
            rows.append(json.loads(kept.read_text()))
            continue
        if scenario is None:
            scenario = trace_scenario(TraceOptions(TRACE, owners="group.user", slots=TRACE_SLOTS)).scenario
        began = time.process_time()
        outcome = run_named(scenario, name)
        row = whole_lcg_row(name, outcome, time.process_time() - began)
        kept.write_text(json.dumps(row, indent=1) + "\n")
        print(f"{name}: {row['cpu_seconds']} s CPU, PV {figure(float(row['pv']))}", flush=True)  # type: ignore[arg-type]
        rows.append(row)
    (out / "whole-lcg.json").write_text(json.dumps(rows, indent=1) + "\n")
    with (out / "whole-lcg.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["policy", "group", "share", "jobs", "finished", "pv", "a_us", "vacates",
                         "work_redone", "lc", "pc", "cpu_seconds"])
        for row in rows:
            writer.writerow([row["policy"], "(all)", "", row["jobs"], row["finished"], row["pv"], "",
                             row["vacates"], row["work_redone"], row["lc"], row["pc"], row["cpu_seconds"]])
            for g in row["groups"]:  # type: ignore[attr-defined]
                writer.writerow([row["policy"], g["group"], g["share"], g["jobs"], g["finished"], g["pv"],
                                 "" if g["a_us"] is None else g["a_us"], g["vacates"], g["work_redone"],
                                 g.get("lc", ""), g.get("pc", ""), ""])
    print(whole_lcg_table(rows))
    plot = out / "study-whole-lcg.png"
    draw_whole_lcg(plot, rows)
    print(f"\nplot: {plot}")


def whole_lcg_table(rows: list[dict[str, object]], top: int = 6) -> str:
    """Markdown: the totals per policy, then PV and A_US of the ``top`` groups by share and of the
    rest together (their PV added, their A_US over all their finished jobs)."""
    names = [str(r["policy"]) for r in rows]
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]

    def line(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    line("CPU s", [f"{float(r['cpu_seconds']):.0f}" for r in rows])  # type: ignore[arg-type]
    for key, label in (("pv", "PV"), ("lc", "LC"), ("pc", "PC")):
        line(label, [figure(float(r[key])) for r in rows])  # type: ignore[arg-type]
    line("vacates", [f"{r['vacates']:,}" for r in rows])
    line("unfinished", [f"{int(r['jobs']) - int(r['finished']):,}" for r in rows])  # type: ignore[call-overload]
    groups = rows[0]["groups"]
    assert isinstance(groups, list)
    ranked = sorted(groups, key=lambda g: (-g["share"], g["group"]))
    shown = [g["group"] for g in ranked[:top]]
    total_share = sum(g["share"] for g in groups) or 1.0
    for group in shown:
        share = next(g["share"] for g in groups if g["group"] == group)
        label = f"{group} ({100 * share / total_share:.1f}%)"
        per = [next(g for g in r["groups"] if g["group"] == group) for r in rows]  # type: ignore[attr-defined]
        line(f"PV {label}", [figure(g["pv"]) for g in per])
        line(f"A_US {label}", ["-" if g["a_us"] is None else f"{g['a_us']:.0f}%" for g in per])
    rest = len(groups) - len(shown)
    pv_rest, us_rest = [], []
    for r in rows:
        others = [g for g in r["groups"] if g["group"] not in shown]  # type: ignore[attr-defined]
        pv_rest.append(figure(sum(g["pv"] for g in others)))
        done = sum(g["finished"] for g in others if g["a_us"] is not None)
        mean = sum(g["a_us"] * g["finished"] for g in others if g["a_us"] is not None) / done if done else None
        us_rest.append("-" if mean is None else f"{mean:.0f}%")
    line(f"PV other {rest} VOs", pv_rest)
    line(f"A_US other {rest} VOs", us_rest)
    return "\n".join(lines)


def draw_whole_lcg(path: Path, rows: list[dict[str, object]]) -> None:
    """Each group's PV per policy, groups by share (largest first), log scale, as
    :func:`osep.ui.plot.draw_groups` draws a scenario's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = rows[0]["groups"]
    assert isinstance(groups, list)
    order = [g["group"] for g in sorted(groups, key=lambda g: (-g["share"], g["group"]))]
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(18.0, 6.0))
    colours = [plt.get_cmap("tab20")(i) for i in range(20)]
    for k, row in enumerate(rows):
        by_group = {g["group"]: g for g in row["groups"]}  # type: ignore[attr-defined]
        xs = [i + (k - (len(rows) - 1) / 2) * width for i in range(len(order))]
        heights = [max(by_group[g]["pv"], 1.0) for g in order]  # a PV of 0 as a stub at 1
        ax.bar(xs, heights, width, label=str(row["policy"]), color=colours[k % len(colours)])
    ax.set_yscale("log")
    ax.set_xticks(range(len(order)), order, rotation=60, fontsize=7)
    ax.set_ylabel("PV (slot-s, log)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(11, len(rows)), loc="upper center", bbox_to_anchor=(0.5, -0.2),
              frameon=False)
    ax.set_title("LCG 2005, whole trace (1,580 slots): PV per VO, VOs by share", fontsize=11, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure(value: float) -> str:
    return f"{value / 1e6:.2f} M" if abs(value) >= 1e6 else f"{value:,.0f}"


def table(title: str, outcomes: dict[str, Outcome]) -> str:
    names = list(outcomes)
    lines = [f"**{title}**", "", "| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    rows: dict[str, Callable[[Outcome], str]] = {
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
    parser.add_argument("--whole-lcg", action="store_true", help="the whole LCG 2005 trace instead")
    parser.add_argument("--policy", action="append", choices=NAMES, help="--whole-lcg: only these")
    parser.add_argument("--resume", action="store_true", help="--whole-lcg: keep runs already done")
    args = parser.parse_args()
    configure("error")
    if args.whole_lcg:
        args.out.mkdir(parents=True, exist_ok=True)
        whole_lcg(args.out, args.policy or list(NAMES), args.resume)
        return
    paths = args.scenarios or [ROOT / "osep" / "data" / "scenarios" / f"{n}.toml" for n in DEFAULT]
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

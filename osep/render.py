"""Pure renderers: results in, text out. Only the CLI prints what they return."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from osep.experiment import Outcome
from osep.scenario import Scenario


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def _num(value: float) -> str:
    """Slot-seconds and seconds to the whole unit; JSON and CSV keep full precision."""
    return f"{value:.0f}"


def comparison(scenario: Scenario, outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    """The JSON document for a side-by-side run (also the source of the table and CSV)."""
    policies: dict[str, Any] = {}
    for name, out in outcomes.items():
        m = out.metrics
        policies[name] = {
            "description": out.variant.description,
            "PV": m.violation,
            "LC": m.capacity_loss,
            "PC": m.cost,
            "vacates": m.vacates,
            "lost_work": m.lost_work,
            "vacate_time": m.vacate_time,
            "makespan": m.makespan,
            "settings": {
                "target": out.policy.target.value,
                "victim_order": out.policy.victim_order.value,
                "max_vacates": out.policy.vacate_budget(scenario.capacity),
                "interval": out.policy.interval,
            }
            if out.variant.enforce
            else None,
            "owners": {
                o.owner: {
                    "share": o.share,
                    "A_US": o.satisfaction,
                    "jobs": o.jobs,
                    "finished": o.finished,
                    "PV": o.violation,
                    "vacated": o.vacated,
                    "lost_work": o.lost_work,
                }
                for o in m.owners
            },
        }
    return {
        "scenario": {
            "name": scenario.name,
            "file": scenario.path,
            "description": scenario.description,
            "slots": scenario.capacity,
            "jobs": len(scenario.jobs),
        },
        "units": {"PV": "slot-seconds", "LC": "slot-seconds", "PC": "slot-seconds",
                  "A_US": "percent"},
        "policies": policies,
    }


def as_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def as_table(doc: Mapping[str, Any]) -> str:
    """The paper's layout: one column per policy, one row per metric and per owner's A_US."""
    scenario = doc["scenario"]
    policies = doc["policies"]
    names = list(policies)
    owners: list[tuple[str, float]] = []
    for pol in policies.values():
        for owner, data in pol["owners"].items():
            if owner not in dict(owners):
                owners.append((owner, data["share"]))
    rows: list[tuple[str, list[str]]] = [
        ("PV (slot-s)", [_num(policies[n]["PV"]) for n in names]),
        ("LC (slot-s)", [_num(policies[n]["LC"]) for n in names]),
        ("PC (slot-s)", [_num(policies[n]["PC"]) for n in names]),
        ("vacates", [str(policies[n]["vacates"]) for n in names]),
        ("makespan (s)", [_num(policies[n]["makespan"]) for n in names]),
    ]
    for owner, share in owners:
        label = f"A_US {owner} ({share:g} slots)"
        rows.append((label, [_pct(policies[n]["owners"].get(owner, {}).get("A_US")) for n in names]))
    first = max(len(r[0]) for r in rows)
    widths = [max(len(n), *(len(r[1][k]) for r in rows)) for k, n in enumerate(names)]
    lines = [
        f"{scenario['name']}: {scenario['slots']} slots, {scenario['jobs']} jobs",
        "  ".join([" " * first] + [n.rjust(w) for n, w in zip(names, widths)]),
    ]
    for label, cells in rows:
        lines.append("  ".join([label.ljust(first)] + [c.rjust(w) for c, w in zip(cells, widths)]))
    return "\n".join(lines) + "\n"


def as_csv(doc: Mapping[str, Any]) -> str:
    """One row per policy and owner, plus an ``(all)`` row per policy with the pool-wide figures."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["policy", "owner", "share", "PV", "LC", "PC", "vacates", "lost_work", "A_US"])
    for name, pol in doc["policies"].items():
        writer.writerow([name, "(all)", "", pol["PV"], pol["LC"], pol["PC"], pol["vacates"],
                         pol["lost_work"], ""])
        for owner, data in pol["owners"].items():
            a_us = "" if data["A_US"] is None else data["A_US"]
            writer.writerow([name, owner, data["share"], data["PV"], "", "", data["vacated"],
                             data["lost_work"], a_us])
    return out.getvalue()


RENDERERS = {"table": as_table, "json": as_json, "csv": as_csv}

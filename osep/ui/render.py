"""Pure renderers: results in, text out. Only the CLI prints what they return."""

from __future__ import annotations

import csv
import io
import json
import textwrap
from collections.abc import Container, Mapping
from typing import Any

from osep.config.toml import escape
from osep.measure.documents import AREA_SHORT, AREAS


def printable(text: str) -> str:
    """``text`` with every character that is not printable (newlines, terminal escapes, bidi
    overrides) escaped, as error lines are (:func:`osep.config.toml.escape`): owner, schedd and file
    names are data from users, and must neither break a table's lines nor drive the terminal."""
    return text if text.isprintable() else escape(text)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def _num(value: float) -> str:
    """Slot-seconds and seconds to the whole unit; JSON and CSV keep full precision."""
    return f"{value:.0f}"


def as_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def as_table(doc: Mapping[str, Any]) -> str:
    """The paper's layout: one column per policy, one row per metric, then each owner's A_US and
    PV. Rows only some documents have (evictions osep asked for, jobs left unfinished) show when
    any column has them."""
    scenario = doc["scenario"]
    policies = doc["policies"]
    names = list(policies)
    owners: dict[str, float] = {}
    for pol in policies.values():
        for owner, data in pol["owners"].items():
            owners.setdefault(owner, data["share"])

    def row(label: str, key: str, fmt: Any = _num) -> tuple[str, list[str]]:
        return label, [fmt(policies[n][key]) if key in policies[n] else "-" for n in names]

    resource = scenario.get("measured_in", "slots")
    pv_area = "share-s" if resource == "dominant" else AREA_SHORT[resource]
    if resource == "dominant":
        resource = "cpus"  # LC and PC: cores
    area = AREA_SHORT[resource]
    rows: list[tuple[str, list[str]]] = [
        row(f"PV ({pv_area})", "PV"),
        row(f"LC ({area})", "LC"),
        row(f"PC ({area})", "PC"),
        row(f"  work redone ({area})", "lost_work"),
        row(f"  vacate time ({area})", "vacate_time"),
        row(f"saved by checkpoints ({area})", "saved_work"),
        row("vacates", "vacates", str),
    ]
    if any("evicted_by_osep" in p for p in policies.values()):
        rows.append(row("  asked for by osep", "evicted_by_osep", str))
    rows.append(row("makespan (s)", "makespan"))
    if any("unfinished" in p for p in policies.values()):
        rows.append(row("jobs left unfinished", "unfinished", str))
    for owner, share in owners.items():
        cells = [_pct(policies[n]["owners"].get(owner, {}).get("A_US")) for n in names]
        rows.append((f"A_US {printable(owner)} ({share:g} {resource})", cells))
    for owner in owners:
        cells = [_num(policies[n]["owners"][owner]["PV"]) if owner in policies[n]["owners"]
                 else "-" for n in names]
        rows.append((f"PV {printable(owner)} ({pv_area})", cells))
    groups: dict[str, float] = {}  # an owner tree's top-level groups
    for pol in policies.values():
        for group, data in pol.get("groups", {}).items():
            groups.setdefault(group, data["share"])
    for what, key, fmt in (("A_US", "A_US", _pct), ("PV", "PV", _num)):
        for group, share in groups.items():
            cells = [fmt(policies[n]["groups"][group][key])
                     if group in policies[n].get("groups", {}) else "-" for n in names]
            unit = f"{share:g} {resource}" if what == "A_US" else pv_area
            rows.append((f"{what} group {printable(group)} ({unit})", cells))
    first = max(len(r[0]) for r in rows)
    widths = [max(len(n), *(len(r[1][k]) for r in rows)) for k, n in enumerate(names)]
    header = f"{printable(scenario['name'])}: {pool_size(scenario)}, {scenario['jobs']} jobs"
    if scenario.get("span"):
        header += f", {scenario['span']}"
    lines = [header, "  ".join([" " * first] + [n.rjust(w) for n, w in zip(names, widths, strict=False)])]
    for label, cells in rows:
        lines.append("  ".join([label.ljust(first)] + [c.rjust(w) for c, w in zip(cells, widths, strict=False)]))
    lines += metrics_legend(pv_area, area, resource)
    short = _stopped(policies)
    if short is not None:
        stop, which = short
        runs = "the runs" if len(which) == len(names) > 1 else ", ".join(map(printable, which))
        lines.append(f"{runs} stopped at {stop['why']} with jobs left unfinished: "
                     f"{'its' if len(which) == 1 else 'their'} figures cover the first "
                     f"{stop['horizon']:,.0f} s only")
    return "\n".join(lines) + "\n"


LEGEND_WIDTH = 100


def metrics_legend(pv_area: str, area: str, resource: str) -> list[str]:
    """What the table's metrics are, and their units, in a line or two under it."""
    units = ("" if pv_area == area else "share-s: shares x seconds; ") + f"{area}: {AREAS[resource]}"
    return textwrap.wrap(f"PV: capacity owed to owners and not held; LC: capacity idle after vacates; PC: work "
                         f"redone + vacate time ({units}); A_US: an owner's mean of run time / (finish - submit)",
                         LEGEND_WIDTH, break_on_hyphens=False)


def _stopped(policies: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]] | None:
    """Where the runs that stopped short stopped (one horizon for all of a scenario's runs), and
    which they are; None if every run ended with its last job."""
    which = [n for n, p in policies.items() if "stopped_short" in p]
    if not which:
        return None
    return next(p["stopped_short"] for p in policies.values() if "stopped_short" in p), which


def stopped_short(doc: Mapping[str, Any]) -> str | None:
    """One line for stderr about the runs that stopped with jobs unfinished, how many each left and
    why, and how to run longer: a warning when the simulator's bound cut them short, a note when a
    horizon given stopped them (as asked); None if every run ended with its last job."""
    policies = doc["policies"]
    short = _stopped(policies)
    if short is None:
        return None
    stop, which = short
    counts = ", ".join(f"{policies[n]['unfinished']:,} under {printable(n)}" for n in which)
    kind = "note" if stop["by"] != "bound" else "warning"
    runs = "the run" if len(which) == 1 else "the runs"
    jobs = doc["scenario"].get("what_if_jobs", doc["scenario"]["jobs"])  # replay: the workload simulated
    return (f"osep: {kind}: {runs} stopped at {stop['why']} with jobs unfinished ({counts}, of {jobs:,}); "
            f"{'its' if len(which) == 1 else 'their'} figures cover the first {stop['horizon']:,.0f} s only; "
            f"{stop['advice']}")


def pool_size(scenario: Mapping[str, Any]) -> str:
    """A scenario's pool in a few words, the same in every command (``validate``, ``simulate``,
    ``replay``): its slots, or the cores of its partitionable machines (which count a slot each) and
    its static slots beside them (``slots``, ``machines``, ``machine_cores``:
    :func:`osep.experiment.runs.pool_facts`)."""
    machines = scenario.get("machines", 0)
    if not machines:
        return f"{scenario['slots']} slots"
    cores = scenario["machine_cores"]
    text = f"{cores} cores in {machines} partitionable machine{'s' if machines != 1 else ''}"
    static = scenario["slots"] - cores
    return f"{static} slots and {text}" if static else text


def as_csv(doc: Mapping[str, Any]) -> str:
    """One row per policy and owner (and top-level group of an owner tree, as ``group <name>``), plus
    an ``(all)`` row per policy with the pool-wide figures."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["policy", "owner", "share", "PV", "LC", "PC", "vacates", "lost_work",
                     "saved_work", "A_US"])
    for name, pol in doc["policies"].items():
        writer.writerow([name, "(all)", "", pol["PV"], pol["LC"], pol["PC"], pol["vacates"],
                         pol["lost_work"], pol["saved_work"], ""])
        for owner, data in [*pol["owners"].items(),
                            *((f"group {g}", d) for g, d in pol.get("groups", {}).items())]:
            a_us = "" if data["A_US"] is None else data["A_US"]
            writer.writerow([name, owner, data["share"], data["PV"], data.get("LC", ""), data.get("PC", ""),
                             data["vacated"], data["lost_work"], data["saved_work"], a_us])
    return out.getvalue()


RENDERERS = {"table": as_table, "json": as_json, "csv": as_csv}


# -- operator reports ------------------------------------------------------------------------------


def duration(seconds: float) -> str:
    """HTCondor's own way of writing a run time: days+hh:mm:ss."""
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}+{hours:02d}:{minutes:02d}:{secs:02d}"


def aligned(header: list[str], rows: list[list[str]], footer: list[str] | None,
             right: Container[int]) -> list[str]:
    """Columns as wide as their widest cell, those in ``right`` flush right (numbers line up), and
    a rule above the footer, as condor_userprio prints its totals. Every cell is made printable."""
    rows = [[printable(c) for c in r] for r in rows]
    footer = [printable(c) for c in footer] if footer else None
    table = [header, *rows] + ([footer] if footer else [])
    widths = [max(len(r[k]) for r in table) for k in range(len(header))]

    def line(cells: list[str]) -> str:
        return " ".join(
            c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(cells, widths, strict=False))
        ).rstrip()

    out = [line(header), " ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    if footer:
        out += [" ".join("-" * w for w in widths), line(footer)]
    return out


def _victims(items: list[dict[str, Any]], shown: int = 3) -> str:
    if not items:
        return ""
    times = ", ".join(duration(v["run_time"]) for v in items[:shown])
    more = f" +{len(items) - shown} more" if len(items) > shown else ""
    return f"{len(items)}: {times}{more}"


RESOURCE_LABELS = {"cpus": "Cores", "memory": "Memory (GiB)", "gpus": "GPUs", "disk": "Disk (GiB)"}
_GIB = {"memory": 1024.0, "disk": 1024.0**2}  # memory is counted in MiB, disk in KiB


def _amount(value: float, resource: str) -> str:
    return f"{value / _GIB[resource]:.1f}" if resource in _GIB else f"{value:g}"


def _held(entry: Mapping[str, Any], resource: str) -> str:
    """``using/share`` of one resource (the share left out where the owner has none of it)."""
    using = _amount(entry["using"], resource)
    return using if entry["share"] is None else f"{using}/{_amount(entry['share'], resource)}"


UNIT_WORDS = {"slots": "slots", "cpus": "cores", "memory": "MiB of memory", "gpus": "GPUs",
              "disk": "KiB of disk"}


def _measured(doc: Mapping[str, Any]) -> str:
    """The unit a report's figures are in, in words."""
    unit = doc.get("unit", "slots")
    return "fractions of the owner's share" if unit == "dominant" else UNIT_WORDS.get(unit, unit)


def _capacity(doc: Mapping[str, Any]) -> str:
    """The pool's size in the report's unit, and in slots where that is another count."""
    unit, slots, size = doc.get("unit", "slots"), doc["slots"], doc.get("capacity")
    if unit == "slots" or size is None:
        return f"{slots} slots"
    return f"{size:g} {_measured(doc)} in {slots} slots"


def report_table(doc: Mapping[str, Any]) -> str:
    shown = list(doc.get("pool", {}))
    header = ["Owner", "Share", "Feasible", "Demand", "Using", "Kept", "Gap", "Jobs run/idle",
              "Held", *(f"{RESOURCE_LABELS[r]} used/share" for r in shown), "Vacate next (run times)"]
    rows = [
        [r["owner"], f"{r['share']:.1f}", f"{r['feasible']:.1f}", f"{r['demand']:g}",
         f"{r['using']:g}", f"{r['kept']:g}", f"{r['gap']:+.1f}",
         f"{r['running_jobs']}/{r['idle_jobs']}", _holding(r),
         *(_held(r["resources"][x], x) for x in shown), _victims(r["vacate_next"])]
        for r in doc["owners"]
    ]
    t = doc["totals"]
    footer = [f"Total ({t['owners']} owners)", f"{t['share']:.1f}", f"{t['feasible']:.1f}",
              f"{t['demand']:g}", f"{t['using']:g}", f"{t['kept']:g}", f"{t['owed']:+.1f}",
              f"{t['running_jobs']}/{t['idle_jobs']}", "",
              *(f"{_amount(doc['pool'][x], x)} in the pool" for x in shown),
              f"{t['vacate_next']} at most {doc['max_vacates']} per cycle"]
    lines = [
        f"osep report at {doc['time']}: {_capacity(doc)}; target: {doc['target']} share; "
        f"Share to Gap in {_measured(doc)}; Gap: owed (+) or held beyond the target (-)",
        "",
        *aligned(header, rows, footer, right=[*range(1, 8), *range(9, 9 + len(shown))]),
    ]
    lines += [f"note: {printable(n)}" for n in doc["notes"]]
    lines += _on_record(doc)
    return "\n".join(lines) + "\n"


def _ceilings(entries: list[Mapping[str, Any]]) -> str:
    """Ceilings osep has on record, as ``4 since 2026-11-29 02:31 UTC`` (several accounting names:
    ``4+2``, since the earliest); without a time for any of them, the ceilings alone."""
    values = "+".join(str(c["ceiling"]) for c in entries)
    since = min((c["since"] for c in entries if c["since"]), default=None)
    return f"{values} since {since[:16].replace('T', ' ')} UTC" if since else values


def _holding(row: Mapping[str, Any]) -> str:
    """The Held cell: the owner's ceilings osep has on record, else whether the next cycle holds it."""
    if row.get("ceilings"):
        return _ceilings(row["ceilings"])
    return "next cycle" if row["held"] else ""


def _on_record(doc: Mapping[str, Any]) -> list[str]:
    """Lines under the pool report: why no ceiling osep set is shown, and those it set on accounting
    names no job in the pool is charged to now."""
    state = doc.get("state_file")
    if state is None:
        return []
    lines = [f"held: {printable(state['problem'])}"] if state["problem"] else []
    lines += [f"held, with no job in the pool now: {printable(c['submitter'])} at {_ceilings([c])}"
              for c in doc.get("held_elsewhere", [])]
    return lines


def tree_table(doc: Mapping[str, Any]) -> str:
    """The owner tree, one row per group and owner, indented by level like ``sshare``."""
    header = ["Group / owner", "Share", "Norm share", "Usage", "Target", "Feasible", "Gap",
              "Running jobs", "Idle jobs", "Held"]
    rows = [
        ["  " * r["depth"] + r["name"].rpartition(".")[2] if r["depth"] else r["name"],
         f"{r['share']:.1f}", f"{r['normalized']:.4f}", f"{r['usage']:g}", f"{r['target']:.1f}",
         f"{r['feasible']:.1f}", f"{r['gap']:+.1f}", str(r["running_jobs"]), str(r["idle_jobs"]),
         "yes" if r["held"] else ""]
        for r in doc["tree"]
    ]
    lines = [
        f"osep report --tree at {doc['time']}: {_capacity(doc)}; target: {doc['target']} "
        f"share; Share, Usage, Target, Feasible and Gap in {_measured(doc)}; Norm share: of the pool",
        "",
        *aligned(header, rows, None, right=range(1, 9)),
    ]
    lines += [f"note: {printable(n)}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"


def tree_csv(doc: Mapping[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    keys = ["name", "kind", "depth", "share", "normalized", "usage", "target", "feasible", "gap",
            "running_jobs", "idle_jobs", "held"]
    writer.writerow(keys)
    for r in doc["tree"]:
        writer.writerow([r[k] for k in keys])
    return out.getvalue()


def report_csv(doc: Mapping[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    shown = list(doc.get("pool", {}))
    per = [f"{r}_{what}" for r in shown for what in ("using", "share", "gap")]
    writer.writerow(["owner", "share", "target", "feasible", "demand", "using", "kept", "gap",
                     "running_jobs", "idle_jobs", "vacating_jobs", "held", "ceiling", "held_since",
                     "vacate_next", "vacate_next_run_times", *per])
    for r in doc["owners"]:
        res = r.get("resources", {})
        ceilings = r.get("ceilings", [])
        writer.writerow([r["owner"], r["share"], r["target"], r["feasible"], r["demand"],
                         r["using"], r["kept"], r["gap"], r["running_jobs"], r["idle_jobs"],
                         r["vacating_jobs"], r["held"], sum(c["ceiling"] for c in ceilings) if ceilings else "",
                         min((c["since"] for c in ceilings if c["since"]), default=""),
                         len(r["vacate_next"]),
                         " ".join(f"{v['run_time']:g}" for v in r["vacate_next"]),
                         *(("" if res[x][what] is None else res[x][what])
                           for x in shown for what in ("using", "share", "gap"))])
    return out.getvalue()


def history_table(doc: Mapping[str, Any]) -> str:
    window = f"{doc['since'] or 'the beginning'} to {doc['until'] or 'the end'}"
    lines = [
        f"osep history from {printable(str(doc['log']))}, {window}: {doc['cycles']} cycles "
        f"({doc['first_cycle'] or '-'} to {doc['last_cycle'] or '-'}), "
        f"{doc['failed_cycles']} failed, {doc['runs']} daemon start(s)",
        "",
    ]
    header = ["Owner", "Vacated", "Work lost", "Run time", "Slots gained", "Not done",
              "Cycles held"]
    rows = [
        [r["owner"], str(r["vacated"]), duration(r["lost_work"]), duration(r["run_time"]),
         str(r["gained"]), str(r["not_done"]), str(r["held_cycles"])]
        for r in doc["owners"]
    ]
    t = doc["totals"]
    footer = [f"Total ({len(rows)} owners)", str(t["vacated"]), duration(t["lost_work"]), "",
              str(t["vacated"]), str(t["not_done"]), ""]
    lines += aligned(header, rows, footer, right=range(1, 7))
    if doc["actions"]:
        lines += ["", "Vacates:"]
        header = ["Time (UTC)", "Job", "Owner", "For", "Run time", "Outcome", "Reason"]
        rows = [
            [a["time"].replace("+00:00", ""), a["job"] or "", a["owner"] or "",
             a["beneficiary"] or "", duration(a["run_time"]),
             a["outcome"] + (f" ({a['detail']})" if a["detail"] else ""), a["reason"] or ""]
            for a in doc["actions"]
        ]
        lines += aligned(header, rows, None, right=range(4, 5))
    return "\n".join(lines) + "\n"


def history_csv(doc: Mapping[str, Any]) -> str:
    """One row per vacate, with its outcome and reason (the per-owner figures are sums of these)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    fields = ["time", "run", "cycle", "job", "owner", "beneficiary", "run_time", "lost_work",
              "outcome", "detail", "reason"]
    writer.writerow(fields)
    for a in doc["actions"]:
        writer.writerow(["" if a[f] is None else a[f] for f in fields])
    return out.getvalue()


REPORT_RENDERERS = {"table": report_table, "json": as_json, "csv": report_csv}
TREE_RENDERERS = {"table": tree_table, "json": as_json, "csv": tree_csv}
HISTORY_RENDERERS = {"table": history_table, "json": as_json, "csv": history_csv}


def doctor_table(doc: Mapping[str, Any]) -> str:
    """``osep doctor``: one row per check, then whether a run would work."""
    rows = [[c["check"], c["target"], c["status"], c["detail"]] for c in doc["checks"]]
    lines = aligned(["Check", "Target", "Status", "Detail"], rows, None, ())
    failed = sum(1 for c in doc["checks"] if c["status"] == "fail")
    lines.append("")
    lines.append("a real run would work" if doc["ok"] else f"{failed} check(s) failed: a real run would not work")
    return "\n".join(lines) + "\n"


DOCTOR_RENDERERS = {"table": doctor_table, "json": as_json}

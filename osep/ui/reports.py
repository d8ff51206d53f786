"""What operators ask of osep: who is over and under their share now, and what the loop did.

Both reports are documents (plain dicts) built by pure functions; :mod:`osep.ui.render` turns them into
tables, JSON or CSV. The pool report runs the very policy the daemon runs (:func:`osep.core.policy.decide`)
on a snapshot, so "what would be vacated next" is what the next cycle would plan, not an estimate.
It cannot see the daemon's own reservations (slots on their way to an owner), so right after a
vacate it may list again a deficit that is already being filled.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from osep.act.records import Outcome
from osep.core.model import JobState, Snapshot
from osep.core.plan import Plan
from osep.core.policy import PolicySettings, decide
from osep.core.resources import RESOURCES, ZERO, Vec, held, plus
from osep.core.tree import ShareTree
from osep.measure.documents import iso
from osep.replay.damage import EARLIEST, LATEST
from osep.replay.decisions import Action, DecisionLog

SORTS = ("owner", "gap", "running")
# Resources shown per owner beside the policy's own unit (those the pool has any of).
PER_RESOURCE = RESOURCES[1:]


# A ceiling osep has on record (the state file): submitter -> (the ceiling, since when or None).
OnRecord = Mapping[str, tuple[int, float | None]]


def pool_report(snapshot: Snapshot, settings: PolicySettings, sort: str = "owner",
                held: Held | None = None) -> dict[str, Any]:
    """The pool now, as the next cycle would see it; with ``held``, the ceilings osep has on record
    as well (see :func:`add_held`)."""
    plan = decide(snapshot, settings)
    doc = plan_report(plan, settings, sort, holdings(snapshot))
    if held is not None:
        add_held(doc, held)
    return doc


@dataclass(frozen=True, slots=True)
class Held:
    """What osep's state file says it holds: ``ceilings`` (see :data:`OnRecord`), whose each
    accounting name is (``charged``: name -> owners, as the pool's jobs say), and the file
    (``path``: None when none is configured) or why it could not be read (``problem``)."""

    path: str | None
    ceilings: OnRecord = field(default_factory=dict)
    charged: Mapping[str, set[str]] = field(default_factory=dict)
    problem: str | None = None


def add_held(doc: dict[str, Any], held: Held) -> None:
    """Add to a pool report the ceilings osep has on record: per owner (``ceilings``: submitter,
    ceiling, since), those of accounting names no job in the pool is charged to now
    (``held_elsewhere``), and the state file they come from or why there are none
    (``state_file``: path and problem)."""
    rows = {r["owner"]: r for r in doc["owners"]}
    for row in rows.values():
        row["ceilings"] = []
    elsewhere = []
    for submitter, (ceiling, since) in sorted(held.ceilings.items()):
        entry = {"submitter": submitter, "ceiling": ceiling, "since": iso(since)}
        owners = [o for o in sorted(held.charged.get(submitter, ())) if o in rows]
        for owner in owners:
            rows[owner]["ceilings"].append(entry)
        if not owners:
            elsewhere.append(entry)
    doc["held_elsewhere"] = elsewhere
    doc["state_file"] = {"path": held.path, "problem": held.problem}


def holdings(snapshot: Snapshot) -> dict[str, Vec]:
    """What each owner's running jobs hold, per resource (the decision weighs only its unit's)."""
    out: dict[str, Vec] = {}
    for job in snapshot.jobs:
        if job.state is JobState.RUNNING:
            out[job.owner] = plus(out.get(job.owner, ZERO), held(job.shape))
    return out


def plan_report(plan: Plan, settings: PolicySettings, sort: str = "owner",
                using: Mapping[str, Vec] | None = None) -> dict[str, Any]:
    """``using``: what each owner holds per resource (default: what the plan weighed)."""
    held_by = using if using is not None else {v.owner: v.using for v in plan.owners}
    victims: dict[str, list[dict[str, Any]]] = {}
    for v in plan.vacates:
        victims.setdefault(v.owner, []).append(
            {"job": str(v.job), "run_time": v.run_time, "lost_work": v.lost_work,
             "beneficiary": v.beneficiary}
        )
    pool = {r: plan.totals[RESOURCES.index(r)] for r in PER_RESOURCE} if plan.totals else {}
    shown = [r for r in PER_RESOURCE if pool.get(r, 0) > 0]
    rows: list[dict[str, Any]] = [
        {
            "owner": view.owner,
            "share": view.share,
            "target": view.target,
            "feasible": view.feasible,
            "demand": view.demand,
            "using": view.holding,
            "kept": view.active - view.holding,
            "gap": view.gap,
            "running_jobs": view.running,
            "idle_jobs": view.idle,
            "vacating_jobs": view.vacating,
            "held": view.owner in plan.holds,
            "allowance": plan.holds.get(view.owner),
            "vacate_next": victims.get(view.owner, []),
            "resources": {
                r: {"share": view.entitled.get(r),
                    "using": held_by.get(view.owner, ZERO)[RESOURCES.index(r)],
                    "gap": (view.entitled[r] - held_by.get(view.owner, ZERO)[RESOURCES.index(r)])
                    if r in view.entitled else None}
                for r in shown
            },
        }
        for view in plan.owners
    ]
    keys = {
        "owner": lambda r: r["owner"],
        "gap": lambda r: (r["gap"], r["owner"]),
        "running": lambda r: (-r["running_jobs"], r["owner"]),
    }
    rows.sort(key=keys[sort])
    totals = {
        "owners": len(rows),
        "share": sum(r["share"] for r in rows),
        "feasible": sum(r["feasible"] for r in rows),
        "demand": sum(r["demand"] for r in rows),
        "using": sum(r["using"] for r in rows),
        "kept": sum(r["kept"] for r in rows),
        "running_jobs": sum(r["running_jobs"] for r in rows),
        "idle_jobs": sum(r["idle_jobs"] for r in rows),
        "vacating_jobs": sum(r["vacating_jobs"] for r in rows),
        "owed": sum(max(0.0, r["gap"]) for r in rows),
        "vacate_next": len(plan.vacates),
    }
    doc = {
        "time": iso(plan.time),
        "capacity": plan.size,
        "unit": plan.unit.value,
        "slots": plan.capacity,
        "pool": {r: pool[r] for r in shown},
        "target": settings.target.value,
        "max_vacates": plan.max_vacates,
        "owners": rows,
        "totals": totals,
        "notes": list(plan.notes),
    }
    if isinstance(settings.shares, ShareTree):
        doc["tree"] = tree_rows(plan, settings.shares, rows)
    return doc


def tree_rows(plan: Plan, tree: ShareTree, owners: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The owner tree's groups and owners, depth first as ``sshare`` lists accounts: per node its
    share, its share as a fraction of the pool (normalized), what it holds (usage), its target and
    feasible share, the gap and whether it is held (a group: any of its owners)."""
    total = plan.totals[RESOURCES.index(tree.resource)] if plan.totals else float(plan.capacity)
    nodes: dict[str, dict[str, Any]] = {}
    below: dict[str, list[str]] = {}
    for g in plan.groups:
        nodes[g.name] = {"name": g.name, "kind": "group", "share": g.share, "usage": g.active,
                         "target": g.target, "feasible": g.feasible, "gap": g.gap, "held": False,
                         "running_jobs": 0, "idle_jobs": 0}
        below.setdefault(g.parent, []).append(g.name)
    for r in owners:
        nodes[r["owner"]] = {"name": r["owner"], "kind": "owner", "share": r["share"],
                             "usage": r["target"] - r["gap"], "target": r["target"],
                             "feasible": r["feasible"], "gap": r["gap"], "held": r["held"],
                             "running_jobs": r["running_jobs"], "idle_jobs": r["idle_jobs"]}
        below.setdefault(tree.place(r["owner"]), []).append(r["owner"])
    out: list[dict[str, Any]] = []

    def visit(parent: str, depth: int) -> None:
        for name in sorted(below.get(parent, ())):
            row = nodes[name]
            row["depth"] = depth
            row["normalized"] = row["share"] / total if total > 0 else 0.0
            out.append(row)
            visit(name, depth + 1)

    visit("", 0)
    for row in reversed(out):  # a group is held while any of its owners is; it runs what they do
        parent = tree.nodes[row["name"]].parent if row["name"] in tree.nodes else tree.place(row["name"])
        if parent in nodes:
            nodes[parent]["held"] = nodes[parent]["held"] or row["held"]
            nodes[parent]["running_jobs"] += row["running_jobs"]
            nodes[parent]["idle_jobs"] += row["idle_jobs"]
    return out


def history_report(log: DecisionLog, since: float | None, until: float | None) -> dict[str, Any]:
    """Per owner: vacates sent, work they lost, slots gained, cycles held; then every action."""
    owners: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        return owners.setdefault(name, {"owner": name, "vacated": 0, "lost_work": 0.0,
                                        "run_time": 0.0, "gained": 0, "not_done": 0,
                                        "held_cycles": log.held_cycles.get(name, 0)})

    for a in log.actions:
        if a.kind != "vacate":
            continue
        victim = row(a.owner or "?")
        if a.outcome is Outcome.DONE:
            victim["vacated"] += 1
            victim["lost_work"] += a.lost_work
            victim["run_time"] += a.run_time
            row(a.beneficiary or "?")["gained"] += 1
        else:
            victim["not_done"] += 1
    for name in log.held_cycles:
        row(name)
    rows = sorted(owners.values(), key=lambda r: (-r["vacated"], r["owner"]))
    return {
        "log": log.path,
        "since": iso(since),
        "until": iso(until),
        "first_cycle": iso(log.first),
        "last_cycle": iso(log.last),
        "runs": log.runs,
        "cycles": log.cycles,
        "failed_cycles": log.failed_cycles,
        "owners": rows,
        "totals": {
            # Every vacate is in its victim's row, so the totals are the rows' sums.
            "vacated": sum(r["vacated"] for r in rows),
            "lost_work": sum(r["lost_work"] for r in rows),
            "not_done": sum(r["not_done"] for r in rows),
            "claims": sum(1 for a in log.actions if a.kind == "claim" and a.outcome is Outcome.DONE),
        },
        "actions": [_action(a) for a in log.actions if a.kind == "vacate"],
    }


def _action(a: Action) -> dict[str, Any]:
    return {
        "time": iso(a.time),
        "cycle": a.cycle,
        "run": a.run,
        "job": str(a.job) if a.job is not None else None,
        "owner": a.owner,
        "beneficiary": a.beneficiary,
        "run_time": a.run_time,
        "lost_work": a.lost_work,
        "outcome": a.outcome.value,
        "detail": a.detail or None,
        "reason": a.reason,
    }


def parse_time(text: str) -> float:
    """Seconds since the epoch from an ISO 8601 date and time (UTC unless it says otherwise) or a
    number of seconds since the epoch; ValueError for anything else, or for a time outside the
    years a log may speak of (1970 to 2100, as the log readers take them; 2100-01-01 itself is
    allowed as the end of a window, which is not included)."""
    try:
        t = float(text)
    except ValueError:
        when = datetime.datetime.fromisoformat(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        t = when.timestamp()
    if not EARLIEST <= t <= LATEST:  # NaN too
        raise ValueError(f"outside 1970 to 2100: {text}")
    return t

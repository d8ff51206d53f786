"""``osep shares``: every node of a share tree under each fair-share model, as a document and its
renderings (pure: the CLI prints what these return)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from osep.config.sharesfile import SharesFile
from osep.fairshare import Model, Params
from osep.ui.render import as_json, printable

PRIORITY_KEYS = {"priority"}


def _plain(value: Any) -> Any:
    """JSON-safe: tuples as lists, infinities and NaN as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def shares_document(loaded: SharesFile, models: Sequence[Model], params: Params) -> dict[str, Any]:
    """Every node, parents first, with its raw shares, its usage and each model's values."""
    tree = loaded.tree
    reports = {m.name: m.report(tree, loaded.usage, loaded.total, params) for m in models}
    usage = tree.subtree_usage(loaded.usage)
    nodes = []
    for node in tree.order():
        nodes.append({
            "name": node,
            "parent": tree.parents[node],
            "level": tree.level(node),
            "leaf": tree.is_leaf(node),
            "shares": tree.shares[node],
            "percent": node in tree.percent,
            "usage": usage[node],
            "models": {name: ({k: _plain(v) for k, v in rows[node].items()} if node in rows else None)
                       for name, rows in reports.items()},
        })
    leaves_usage = sum(loaded.usage.values())
    return {
        "file": loaded.path,
        "unit": loaded.unit,
        "leaves_usage": leaves_usage,
        "pool_usage": loaded.total if loaded.total is not None else leaves_usage,
        "params": asdict(params),
        "models": [{"name": m.name, "title": m.title, "source": m.source,
                    "columns": [{"key": c.key, "header": c.header, "kind": c.kind} for c in m.columns]}
                   for m in models],
        "nodes": nodes,
    }


def _cell(kind: str, value: Any) -> str:
    if value is None:
        return "-"
    if kind == "flag":
        return "yes" if value else "no"
    if kind == "fraction":
        return f"{value:.6f}"
    if kind == "percent":
        return f"{value:.2f}"
    if kind == "price":
        return ">255" if value > 255 else f"{value:.2f}"
    if kind == "tuple":
        return "(" + ", ".join(f"{v:.2f}" for v in value) + ")"
    return f"{value:.6g}"


def _short(node: Mapping[str, Any]) -> str:
    """A node's own name, below its parent's (``user1`` for ``A.B.user1``), indented by level."""
    name, parent = str(node["name"]), str(node["parent"])
    own = name[len(parent) + 1:] if parent and name.startswith(parent + ".") else name
    return "  " * (int(node["level"]) - 1) + printable(own)


def shares_table(doc: Mapping[str, Any]) -> str:
    """One row per node, indented by level as ``sshare`` does; the models' columns side by side
    under their names. Grid's deviation tuples are left to JSON and CSV (too wide for a table)."""
    columns = [(m["name"], c) for m in doc["models"] for c in m["columns"] if c["kind"] != "tuple"]
    header = ["node", "shares", "usage", *(c["header"] for _, c in columns)]
    rows = []
    for node in doc["nodes"]:
        shares = f"{node['shares']:g}" + ("%" if node["percent"] else "")
        cells = [_short(node), shares, f"{node['usage']:g}"]
        for model, c in columns:
            values = node["models"][model]
            if values is None:
                cells.append("")
            elif c["key"] in PRIORITY_KEYS and values[c["key"]] is not None:
                cells.append(f"{values[c['key']]:.2f}")
            else:
                cells.append(_cell(c["kind"], values[c["key"]]))
        rows.append(cells)
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return " ".join(c.ljust(w) if k == 0 else c.rjust(w)
                        for k, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    # the models' names over their first column, each spanning its columns
    spans: list[str] = [" " * widths[0], " " * widths[1], " " * widths[2]]
    k = 3
    for m in doc["models"]:
        count = sum(1 for c in m["columns"] if c["kind"] != "tuple")
        width = sum(widths[k:k + count]) + count - 1
        spans.append(m["name"][:width].ljust(width, " "))
        k += count
    title_line = " ".join(spans).rstrip()
    rule = " ".join("-" * w for w in widths)
    pool = doc["pool_usage"]
    head = (f"osep shares {printable(doc['file'])}: unit {doc['unit']}; usage in any unit, "
            f"the pool's {pool:g}" + ("" if pool == doc["leaves_usage"] else
                                      f" (its leaves': {doc['leaves_usage']:g})"))
    legend = [f"{m['name']}: {m['title']} ({m['source']})" for m in doc["models"]]
    return "\n".join([head, *legend, "", title_line, line(header), rule, *(line(r) for r in rows)]) + "\n"


def shares_csv(doc: Mapping[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = [(m["name"], c) for m in doc["models"] for c in m["columns"]]
    writer.writerow(["name", "parent", "level", "leaf", "shares", "percent", "usage",
                     *(f"{model}.{c['key']}" for model, c in columns)])
    for node in doc["nodes"]:
        cells = [node["name"], node["parent"], node["level"], node["leaf"], node["shares"],
                 node["percent"], node["usage"]]
        for model, c in columns:
            values = node["models"][model]
            value = None if values is None else values[c["key"]]
            if value is None:
                cells.append("")
            elif isinstance(value, list):
                cells.append(" ".join(repr(v) for v in value))
            else:
                cells.append(value)
        writer.writerow(cells)
    return out.getvalue()


SHARES_RENDERERS = {"table": shares_table, "json": as_json, "csv": shares_csv}

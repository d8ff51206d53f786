"""``osep shares``: every node of a share tree under each fair-share model, as a document and its
renderings (pure: the CLI prints what these return)."""

from __future__ import annotations

import csv
import io
import math
import textwrap
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
        "usage_given": loaded.usage_given,
        "leaves_usage": leaves_usage,
        "pool_usage": loaded.total if loaded.total is not None else leaves_usage,
        "params": asdict(params),
        "models": [{"name": m.name, "title": m.title, "source": m.source,
                    "columns": [{"key": c.key, "header": c.header, "kind": c.kind, "about": c.about,
                                 "main": c.main} for c in m.columns]}
                   for m in models],
        "nodes": nodes,
    }


TABLE_WIDTH = 100  # the default table fits a terminal this wide
# The most characters a cell of each kind takes (beyond its header's): numbers that would take more
# lose digits (JSON and CSV keep them all).
_CAPS = {"fraction": 8, "percent": 7, "number": 8, "price": 6, "priority": 10, "flag": 3}
SHARES_CAP, USAGE_CAP = 9, 8


def _fit(value: float, first: str, cap: int) -> str:
    """``value`` formatted as ``first``, or with fewer significant digits until it takes at most
    ``cap`` characters (any float does with one digit in 7)."""
    text = format(value, first)
    digits = 6
    while len(text) > cap and digits > 0:
        text = format(value, f".{digits}g")
        digits -= 1
    return text


def _cell(kind: str, value: Any) -> str:
    if value is None:
        return "-"
    if kind == "flag":
        return "yes" if value else "no"
    if kind == "price" and value > 255:
        return ">255"
    first = {"fraction": ".6f", "percent": ".2f", "price": ".2f", "priority": ".2f"}.get(kind, ".6g")
    return _fit(value, first, _CAPS[kind])


def _short(node: Mapping[str, Any], width: int | None = None) -> str:
    """A node's own name, below its parent's (``user1`` for ``A.B.user1``), indented by level; cut
    in the middle to ``width`` characters if it is longer."""
    name, parent = str(node["name"]), str(node["parent"])
    own = printable(name[len(parent) + 1:] if parent and name.startswith(parent + ".") else name)
    indent = "  " * (int(node["level"]) - 1)
    if width is None or len(indent) + len(own) <= width:
        return indent + own
    indent = indent[:max(0, width - 3)]  # a name keeps 3 characters at least
    room = width - len(indent)
    if len(own) <= room:
        return indent + own
    head = room // 2  # of the room - 1 characters besides the ellipsis, the head gets the larger half
    return indent + own[:head] + "…" + own[len(own) - (room - 1 - head):]


def _shown(doc: Mapping[str, Any], wide: bool) -> list[tuple[str, Mapping[str, Any]]]:
    """The models' columns a table shows: their main ones, or with ``wide`` all but grid's deviation
    tuples (left to JSON and CSV)."""
    return [(m["name"], c) for m in doc["models"] for c in m["columns"]
            if c["kind"] != "tuple" and (wide or c["main"])]


def shares_table(doc: Mapping[str, Any], wide: bool = False) -> str:
    """One row per node, indented by level as ``sshare`` does; the models' columns side by side
    under their names, with a legend below. By default each model's main columns only, and no line
    wider than :data:`TABLE_WIDTH` (the nodes' names give way); ``wide``: every column, full names."""
    columns = _shown(doc, wide)
    header = ["node", "shares", "usage", *(c["header"] for _, c in columns)]
    rows = []
    for node in doc["nodes"]:
        percent = "%" if node["percent"] else ""
        shares = _fit(node["shares"], "g", SHARES_CAP - len(percent)) + percent
        cells = [_short(node), shares, _fit(node["usage"], "g", USAGE_CAP)]
        for model, c in columns:
            values = node["models"][model]
            kind = "priority" if c["key"] in PRIORITY_KEYS else c["kind"]
            cells.append("" if values is None else _cell(kind, values[c["key"]]))
        rows.append(cells)
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    k = 3
    for m in doc["models"]:  # wide enough for the model's name over its columns
        count = sum(1 for name, _ in columns if name == m["name"])
        if count:
            widths[k + count - 1] += max(0, len(m["name"]) - (sum(widths[k:k + count]) + count - 1))
        k += count
    if not wide:
        rest = sum(widths[1:]) + len(widths) - 1
        widths[0] = max(len(header[0]), min(widths[0], TABLE_WIDTH - rest))
        for cells, node in zip(rows, doc["nodes"], strict=True):
            cells[0] = _short(node, widths[0])

    def line(cells: Sequence[str]) -> str:
        return " ".join(c.ljust(w) if k == 0 else c.rjust(w)
                        for k, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    # the models' names over their first column, each spanning its columns
    spans: list[str] = [" " * widths[0], " " * widths[1], " " * widths[2]]
    k = 3
    for m in doc["models"]:
        count = sum(1 for name, _ in columns if name == m["name"])
        if count:
            spans.append(m["name"].ljust(sum(widths[k:k + count]) + count - 1))
        k += count
    title_line = " ".join(spans).rstrip()
    rule = " ".join("-" * w for w in widths)
    return "\n".join([*_head(doc), "", title_line, line(header), rule, *(line(r) for r in rows), "",
                      *_legend(doc, columns, wide)]) + "\n"


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, TABLE_WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def _head(doc: Mapping[str, Any]) -> list[str]:
    """What the table is of: the file, its unit, the pool's usage (or that there is none)."""
    pool = doc["pool_usage"]
    if not doc["usage_given"]:
        usage = ("no usage: every leaf's is 0 (a file for osep shares gives it in a [usage] table, as "
                 "osep example slurm-classic does)")
    else:
        usage = f"usage in any unit, the pool's {pool:g}" + (
            "" if pool == doc["leaves_usage"] else f" (its leaves': {doc['leaves_usage']:g})")
    return _wrapped(f"osep shares {printable(doc['file'])}: unit {doc['unit']}; {usage}")


def _legend(doc: Mapping[str, Any], columns: Sequence[tuple[str, Mapping[str, Any]]], wide: bool) -> list[str]:
    """Each model's title and what its columns shown are; then what "-" and a blank cell mean."""
    lines = _wrapped("shares: as the file gives them; usage: the node's (a group's is its members')")
    for m in doc["models"]:
        shown = "; ".join(f"{c['header']}: {c['about']}" for name, c in columns if name == m["name"])
        lines += _wrapped(f"{m['name']}: {m['title']}" + (f". {shown}" if shown else ""))
    if not wide:
        more = "Every column: --wide, or --format json or csv."
    elif any(name == "grid" for name, _ in columns):
        more = "Grid's deviation tuples: --format json or csv."
    else:
        more = ""
    lines += _wrapped("-: undefined (as P where no price will do, V with no shares); blank: the model has "
                      f"no value there. {more}")
    return lines


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

"""Pure renderers of ``osep tune``'s document (:func:`osep.tune.tuning.document`): the table and CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from osep.measure.documents import AREA_SHORT
from osep.ui.render import aligned, printable

# The settings' columns: (key, heading, how a value is shown).
_SETTINGS: tuple[tuple[str, str], ...] = (
    ("max_vacates", "p"), ("interval", "t (s)"), ("victim_order", "victims"), ("target", "target"),
    ("min_run_time", "min run (s)"), ("excess", "excess"),
)
_MARKS = "*: on the front of PV against cost (LC + PC); >: recommended; =: the policy file's settings"


def _setting(key: str, value: Any) -> str:
    if key == "max_vacates":
        return "auto" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def compact(value: float) -> str:
    """An area or a count in at most about six characters: whole below 100,000, else three
    figures and k, M, G or T (JSON and CSV keep every digit)."""
    if abs(value) < 100_000:
        return f"{value:,.0f}"
    for suffix, scale in (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)):
        if abs(value) < 1000 * scale or suffix == "T":
            shown = value / scale
            return f"{shown:.3g} {suffix}" if abs(shown) < 1000 else f"{shown:.0f} {suffix}"
    raise AssertionError("unreachable")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def _change(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def settings_text(settings: Mapping[str, Any]) -> str:
    """A candidate's settings on one line, as the policy file's keys name them."""
    return " ".join(f"{key}={_setting(key, settings[key])}" for key, _ in _SETTINGS)


def changes_text(settings: Mapping[str, Any], own: Mapping[str, Any]) -> str:
    """What differs from the policy file's settings, each as ``key old -> new``."""
    return ", ".join(f"{key} {_setting(key, own[key])} -> {_setting(key, settings[key])}"
                     for key, _ in _SETTINGS if settings[key] != own[key])


def table(doc: Mapping[str, Any]) -> str:
    """The candidates by PV then cost, the settings every candidate shares said once above them;
    then the recommendation, and how it and the policy file's settings did on the held-out period."""
    rows = doc["candidates"]
    area = AREA_SHORT.get(doc["measured_in"], "slot-s")
    varied = [(k, h) for k, h in _SETTINGS if len({repr(r["settings"][k]) for r in rows}) > 1]
    same = [(k, h) for k, h in _SETTINGS if (k, h) not in varied]
    lines = [_head(doc)]
    if same:
        first = rows[0]["settings"]
        lines.append("every candidate: " + ", ".join(f"{h} {_setting(k, first[k])}" for k, h in same))
    header = ["", *[h for _, h in varied], f"PV ({area})", f"LC ({area})", f"PC ({area})", "vacates",
              f"redone ({area})", "worst A_US"]
    body = []
    for row in sorted(rows, key=lambda r: (r["unfinished"] > 0, r["pv"], r["cost"])):
        marks = ("*" if row["front"] else "") + (">" if row["recommended"] else "") + \
                ("=" if row["policy_file"] else "")
        body.append([marks, *[_setting(k, row["settings"][k]) for k, _ in varied], compact(row["pv"]),
                     compact(row["lc"]), compact(row["pc"]), f"{row['vacates']:,}", compact(row["work_redone"]),
                     _pct(row["worst_us"]) + ("" if not row["unfinished"] else f" ({row['unfinished']:,} left)")])
    right = set(range(1 + len(varied), len(header)))
    lines.extend(aligned(header, body, None, right))
    lines.append(_MARKS)
    lines.extend(_recommendation(doc, area))
    return "\n".join(lines) + "\n"


def _head(doc: Mapping[str, Any]) -> str:
    history = doc["history"]
    runs = doc["runs"]
    logs = [printable(path.rsplit("/", 1)[-1]) for path in history["log_files"]]
    names = ", ".join(logs) if len(logs) <= 3 else f"{logs[0]} and {len(logs) - 1} more logs"
    periods = history["periods"]
    tuned = _span(periods["tune"])
    text = f"{runs['candidates']:,} candidates on {names}, tuned on {tuned}"
    if "check" in periods:
        text += f", checked on {_span(periods['check'])}"
    if runs["from_journal"]:
        text += f"\n{runs['from_journal']:,} of the candidates' runs taken from the journal, not run again"
    return text


def _span(period: Mapping[str, Any]) -> str:
    until = "the end" if period["until"] is None else f"{period['until']:,.0f} s"
    return f"[{period['from']:,.0f} s, {until})"


def _recommendation(doc: Mapping[str, Any], area: str) -> list[str]:
    rows = doc["candidates"]
    chosen = doc["recommended"]
    own = rows[doc["policy_file"]]
    if chosen is None:
        return ["no recommendation: every run stopped at its horizon with jobs left (see --format json)"]
    rec = rows[chosen]
    out = [f"recommended, {doc['pick']['says']}:", f"  {settings_text(rec['settings'])}"]
    if chosen == doc["policy_file"]:
        out.append("  (the policy file's own settings)")
    else:
        out.append(f"  changed from the policy file's: {changes_text(rec['settings'], own['settings'])}")
    check = doc["check"]
    if check is None:
        out.append("not checked on a later period (--tune-days holds one out)")
        return out
    r, o = check["recommended"], check["policy_file"]
    out.append(f"on the held-out period {_span(doc['history']['periods']['check'])}:")
    header = ["", "recommended", "policy file's", "change"]
    body = [
        [f"PV ({area})", compact(r["pv"]), compact(o["pv"]), _change(check["pv_change"])],
        [f"cost ({area})", compact(r["cost"]), compact(o["cost"]), _change(check["cost_change"])],
        ["vacates", f"{r['vacates']:,}", f"{o['vacates']:,}", _change(check["vacates_change"])],
        ["worst A_US", _pct(r["worst_us"]), _pct(o["worst_us"]), ""],
    ]
    out.extend("  " + line for line in aligned(header, body, None, {1, 2, 3}))
    return out


_CSV_FIELDS = ("pv", "lc", "pc", "cost", "vacates", "work_redone", "vacate_time", "worst_us", "worst_owner",
               "unfinished", "makespan", "front", "recommended", "policy_file")


def as_csv(doc: Mapping[str, Any]) -> str:
    """One line per candidate: its settings, its figures (in ``measured_in``) and its marks."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([k for k, _ in _SETTINGS] + list(_CSV_FIELDS))
    for row in doc["candidates"]:
        writer.writerow([row["settings"][k] if row["settings"][k] is not None else "auto" for k, _ in _SETTINGS]
                        + ["" if row[f] is None else row[f] for f in _CSV_FIELDS])
    return out.getvalue()

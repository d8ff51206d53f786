"""The comparison document: one column of figures per policy (or for a recorded history), as
``osep simulate`` and ``osep replay`` produce it. :mod:`osep.ui.render` turns it into a table, JSON or
CSV."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from osep.measure.metrics import Metrics


def column(metrics: Metrics, description: str, settings: dict[str, Any] | None = None,
           **extra: Any) -> dict[str, Any]:
    """One policy's (or the recorded history's) figures, as the comparison document holds them."""
    m = metrics
    out: dict[str, Any] = {
        "description": description,
        "PV": m.violation,
        "LC": m.capacity_loss,
        "PC": m.cost,
        "vacates": m.vacates,
        "lost_work": m.lost_work,
        "vacate_time": m.vacate_time,
        "saved_work": m.saved_work,
        "makespan": m.makespan,
        "settings": settings,
    }
    out.update(extra)
    out["owners"] = {
        o.owner: {
            "share": o.share,
            "A_US": o.satisfaction,
            "jobs": o.jobs,
            "finished": o.finished,
            "PV": o.violation,
            "LC": o.capacity_loss,
            "PC": o.lost_work + o.vacate_time,
            "vacated": o.vacated,
            "lost_work": o.lost_work,
            "vacate_time": o.vacate_time,
            "saved_work": o.saved_work,
        }
        for o in m.owners
    }
    return out


# What the areas are counted in, by the resource jobs are weighed in (see osep.measure.meter).
AREAS = {"slots": "slot-seconds", "cpus": "core-seconds", "memory": "MiB-seconds",
         "gpus": "GPU-seconds", "disk": "KiB-seconds"}
AREA_SHORT = {"slots": "slot-s", "cpus": "core-s", "memory": "MiB-s", "gpus": "GPU-s",
              "disk": "KiB-s"}


def document(info: Mapping[str, Any], columns: Mapping[str, dict[str, Any]],
             resource: str = "slots", dominant: bool = False) -> dict[str, Any]:
    """``dominant``: PV is in share-seconds (see :mod:`osep.measure.meter`), the rest in
    ``resource``."""
    area = AREAS[resource]
    return {
        "scenario": {**info, "measured_in": "dominant" if dominant else resource},
        "units": {"PV": "share-seconds" if dominant else area, "LC": area, "PC": area,
                  "lost_work": area, "vacate_time": area,
                  "saved_work": area, "makespan": "seconds", "A_US": "percent", "share": resource},
        "policies": dict(columns),
    }


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="seconds")

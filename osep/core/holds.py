"""Holds: while some owner below its target waits, keep everyone else from growing.

Every owner at or above its target with idle jobs, or losing a job to a vacate this cycle, is held at
what it runs: it keeps its jobs but is given no more new cores than its allowance, so cores freed by
vacates or by jobs ending reach the owners below target. Nothing is held when nobody below target is
waiting (counting only running jobs, not kept room).
"""

from __future__ import annotations

import math

from osep.core.model import EPS
from osep.core.plan import OwnerView


def _waiting(view: OwnerView) -> bool:
    return view.idle > 0 and view.target - view.holding > EPS


def holds(views: dict[str, OwnerView], losing: set[str], free: int, vacated: int,
          by_cores: bool = True) -> dict[str, int]:
    """Owners to hold, each with the number of new cores it may still be given (owners in name
    order). Owners that lose a job in this plan are among them: the vacated job is idle again within
    seconds.

    The allowance: the ``free`` cores beyond what the waiting owners can still take (the cores
    their idle jobs ask for, less those already kept for them and the ``vacated`` cores this plan
    frees; with ``by_cores``, when the unit counts one per core or job, no more than their gap),
    split evenly among the held owners with idle jobs. Without it a hold would leave free cores idle
    for a whole cycle whenever the owners below target wanted fewer than were free.
    """
    if not any(_waiting(v) for v in views.values()):
        return {}
    held = [o for o, v in views.items()
            if not _waiting(v) and (v.idle > 0 or v.vacating > 0 or o in losing)]
    need = 0
    for v in views.values():
        if _waiting(v):
            wanted = v.idle_cpus - v.kept_cpus
            need += max(0, min(wanted, math.ceil(v.gap - EPS)) if by_cores else wanted)
    spare = max(0, free - max(0, need - vacated))
    allowance = dict.fromkeys(held, 0)
    hungry = sorted((views[o].idle_cpus, o) for o in held if views[o].idle > 0)
    for index, (idle, owner) in enumerate(hungry):
        portion = spare // (len(hungry) - index)
        allowance[owner] = min(idle, portion)
        spare -= allowance[owner]
    return allowance

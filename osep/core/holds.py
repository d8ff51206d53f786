"""Holds: while some owner below its target waits, keep everyone else from growing.

Every owner at or above its target with idle jobs, or losing a job to a vacate this cycle, is held at
what it runs: it keeps its jobs but is given no more new slots than its allowance, so slots freed by
vacates or by jobs ending reach the owners below target. Nothing is held when nobody below target is
waiting (counting only running jobs, not reservations).
"""

from __future__ import annotations

import math

from osep.core.model import EPS
from osep.core.plan import OwnerView


def _waiting(view: OwnerView) -> bool:
    return view.idle > 0 and view.target - view.running > EPS


def holds(views: dict[str, OwnerView], losing: set[str], free: int, vacated: int) -> dict[str, int]:
    """Owners to hold, each with the number of new slots it may still be given (owners in name
    order). Owners that lose a job in this plan are among them: the vacated job is idle again within
    seconds.

    The allowance: the free slots beyond what the waiting owners can still take (their idle jobs,
    up to their target, less the slots already reserved for them and those this plan's vacates
    free), split evenly among the held owners with idle jobs. Without it a hold would leave free
    slots idle for a whole cycle whenever the owners below target wanted fewer than were free.
    """
    if not any(_waiting(v) for v in views.values()):
        return {}
    held = [o for o, v in views.items()
            if not _waiting(v) and (v.idle > 0 or v.vacating > 0 or o in losing)]
    need = sum(
        max(0, min(v.idle - v.reserved, math.ceil(v.gap - EPS)))
        for v in views.values() if _waiting(v)
    )
    spare = max(0, free - max(0, need - vacated))
    allowance = dict.fromkeys(held, 0)
    hungry = sorted((views[o].idle, o) for o in held if views[o].idle > 0)
    for index, (idle, owner) in enumerate(hungry):
        portion = spare // (len(hungry) - index)
        allowance[owner] = min(idle, portion)
        spare -= allowance[owner]
    return allowance

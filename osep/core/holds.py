"""Holds: while some owner below its target waits, keep everyone else from growing.

Every owner at or above its target with idle jobs, or losing a job to a vacate this cycle, is held at
what it runs: it keeps its jobs but is given no more new cores than its allowance, so cores freed by
vacates or by jobs ending reach the owners below target. Nothing is held when nobody below target is
waiting (counting only running jobs, not kept room).

The allowances come out of free cores that no waiting owner needs, and the room a plan's vacates make
for a waiting owner's job is needed whole: a job bigger than its owner's gap (a 128-core job of an
owner 28 cores below target) needs all of it. Were the free part of that room handed out as
allowances, the room would never be whole on a partitionable machine, its vacates would be planned
again at every cycle, and the job would never start (a livelock).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from operator import itemgetter

from osep.core.model import EPS
from osep.core.plan import OwnerView, Vacate


def kept_now(vacates: Iterable[Vacate]) -> dict[str, int]:
    """The cores of the room a plan's vacates make for each beneficiary (a group's room once), as
    the rooms' jobs ask for them."""
    kept: dict[str, int] = {}
    groups: set[int] = set()
    for v in vacates:
        if v.group not in groups:
            groups.add(v.group)
            kept[v.beneficiary] = kept.get(v.beneficiary, 0) + v.room[0]
    return kept


def holds(views: Mapping[str, OwnerView], losing: set[str], free: int, vacated: int,
          by_cores: bool = True, planned: Mapping[str, int] | None = None) -> dict[str, int]:
    """Owners to hold, each with the number of new cores it may still be given (owners in name
    order). Owners that lose a job in this plan are among them: the vacated job is idle again within
    seconds.

    The allowance: the ``free`` cores beyond what the waiting owners can still take (the cores
    their idle jobs ask for, less those already kept for them and the ``vacated`` cores this plan
    frees; with ``by_cores``, when the unit counts one per core or job, no more than their gap),
    split evenly among the held owners with idle jobs. Without it a hold would leave free cores idle
    for a whole cycle whenever the owners below target wanted fewer than were free. A waiting owner
    takes no less than the room the plan's vacates make for it (``planned``, by :func:`kept_now`),
    whatever its gap: so no allowance is carved out of that room.
    """
    # One pass sorts the owners out (a pool has 10,000): waiting (idle jobs and below target
    # counting only running jobs), held, and the held with idle jobs (by the cores those ask for).
    waiting: list[OwnerView] = []
    held: list[str] = []
    hungry: list[tuple[int, str]] = []
    for o, v in views.items():
        if v.idle > 0:
            if v.target - v.holding > EPS:
                waiting.append(v)
            else:
                held.append(o)
                hungry.append((v.idle_cpus, o))
        elif v.vacating > 0 or o in losing:
            held.append(o)
    if not waiting:
        return {}
    spare = 0  # with no free cores (a busy pool), none whatever the waiting owners need
    if free > 0:
        need = 0
        for v in waiting:
            wanted = v.idle_cpus - v.kept_cpus
            # v.gap, without the property's call (a pool has thousands waiting)
            takes = max(0, min(wanted, math.ceil(v.target - v.active - EPS)) if by_cores else wanted)
            if planned:
                takes = max(takes, planned.get(v.owner, 0))
            need += takes
        spare = max(0, free - max(0, need - vacated))
    allowance = dict.fromkeys(held, 0)
    if not spare and min(map(itemgetter(0), hungry), default=0) >= 0:
        return allowance  # what the loop below gives then, without sorting (a pool has thousands)
    hungry.sort()
    for index, (idle, owner) in enumerate(hungry):
        if not spare and idle >= 0:
            break  # everyone left (asking for as many cores or more) gets min(idle, 0): none
        portion = spare // (len(hungry) - index)
        allowance[owner] = min(idle, portion)
        spare -= allowance[owner]
    return allowance

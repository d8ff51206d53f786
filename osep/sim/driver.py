"""Moving the simulated pool through virtual time: arrivals, negotiation cycles, enforcement cycles,
job ends and vacates, as one discrete-event loop."""

from __future__ import annotations

import enum
import heapq
import math
from collections.abc import Iterable, Mapping
from typing import Any

from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.enforce.actuator import Actuator, Limits
from osep.enforce.loop import Enforcer
from osep.sim import orderings
from osep.sim.negotiator import negotiate
from osep.sim.pool import SimulatedPool
from osep.sim.specs import JobSpec, PoolSettings, SimResult, SlotSpec


class _Event(enum.IntEnum):
    # Order of events that fall on the same instant: what ended is seen before what starts.
    FINISH = 0
    RELEASE = 1
    ARRIVE = 2
    QUEUE = 3
    ENFORCE = 4
    NEGOTIATE = 5


_LATER = {"finish": _Event.FINISH, "release": _Event.RELEASE}


def simulate(
    slots: Iterable[SlotSpec],
    jobs: Iterable[JobSpec],
    settings: PoolSettings,
    shares: Mapping[str, float],
    policy: PolicySettings | None = None,
    interval: float = 300.0,
    limits: Limits = Limits(),
    logger: Any = None,
    tree: Any = None,
    resource: str = "slots",
) -> SimResult:
    """Run the pool until every job has completed (or the horizon), enforcing ``policy`` every
    ``interval`` seconds if given.

    ``shares`` (resolved, in slots) feed the Fair-Share negotiator; the enforcement loop takes its own
    from ``policy``. The seeds' models (``settings.order``) rank owners on ``tree`` (the policy's
    shares, a flat table or an owner tree, in ``resource``; by default ``shares`` as one level).
    """
    pool = SimulatedPool(slots, settings)
    jobs = list(jobs)
    queue: list[tuple[float, int, int, Any]] = []
    seq = 0

    def schedule(time: float, kind: _Event, data: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(queue, (time, int(kind), seq, data))

    def collect() -> None:
        for time, kind, data in pool.later:
            schedule(time, _LATER[kind], data)
        pool.later.clear()

    total = 0
    for spec in jobs:
        schedule(spec.submit, _Event.ARRIVE, spec)
        total += 1
    ordering = orderings.build(
        settings.order, shares, tree if tree is not None else shares, resource,
        {spec.owner for spec in jobs}, settings.models, settings.half_life, settings.initial_usage,
        pool.capacity)
    pool.on_leave = lambda spec, start, vacated: ordering.ended(spec, start, pool.now, vacated)
    enforcer = Enforcer(policy, Actuator(pool, limits), logger) if policy is not None else None
    if enforcer is not None:
        schedule(0.0, _Event.ENFORCE, None)
    schedule(0.0, _Event.NEGOTIATE, None)
    horizon = settings.horizon if settings.horizon is not None else math.inf
    while queue and pool.completed < total:
        time, kind, _, data = heapq.heappop(queue)
        if time > horizon:
            break
        pool.now = time
        if kind == _Event.FINISH:
            job: JobId
            job, run = data
            pool.finish(job, run)
        elif kind == _Event.RELEASE:
            job, run = data
            pool.release(job, run)
        elif kind == _Event.ARRIVE:
            joins = ordering.admit(data, time, pool.idle, pool.running)
            pool.arrive(data, queued=joins <= time)
            if joins > time:
                schedule(joins, _Event.QUEUE, data.id)
        elif kind == _Event.QUEUE:
            joins = ordering.admit(pool.jobs[data].spec, time, pool.idle, pool.running)
            if joins > time:
                schedule(joins, _Event.QUEUE, data)
            else:
                pool.enqueue(data)
        elif kind == _Event.ENFORCE:
            assert enforcer is not None
            enforcer.run_cycle(pool)
            schedule(time + interval, _Event.ENFORCE, None)
        else:
            negotiate(pool, ordering)
            schedule(time + settings.negotiation_interval, _Event.NEGOTIATE, None)
        collect()
    return SimResult(
        capacity=pool.capacity,
        jobs=pool.records(),
        end=pool.now,
        cycles=enforcer.cycles if enforcer else 0,
        vacates=pool.vacates,
    )


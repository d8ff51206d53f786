"""Moving the simulated pool through virtual time: arrivals, negotiation cycles, enforcement cycles,
job ends and vacates, as one discrete-event loop.

Negotiation cycles fall every ``negotiation_interval`` seconds from 0 and enforcement cycles every
``interval``, as in a pool that ticks; but a cycle is run only where it could change something. A
negotiation cycle needs a free slot or core and a queued job of an owner not held to nothing, or room
kept (:meth:`osep.sim.pool.SimulatedPool.can_match`); an ordering that ``ticks`` (Share) has every
cycle while jobs remain. An enforcement cycle needs an idle job, a held owner or room kept; the
counted ``cycles`` are those run. So results are those of ticking through every instant, and an idle
stretch costs nothing. The run ends with the last job (or at the horizon); what happens to each job
is told to the ``watch`` as it happens, and every job's record is kept only when asked for.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Iterable, Mapping
from typing import Any

from osep.act.actuator import Actuator, Limits
from osep.act.cycle import Enforcer
from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.sim import orderings
from osep.sim.negotiator import negotiate
from osep.sim.pool import SimulatedPool
from osep.sim.specs import JobSpec, PoolSettings, SimResult, SlotSpec
from osep.sim.watch import Recorder, Tee, Watch

# The kinds of event, in the order of events that fall on the same instant: what ended is seen
# before what starts (plain integers: the loop compares them for every event).
_FINISH, _RELEASE, _ARRIVE, _QUEUE, _ENFORCE, _NEGOTIATE = range(6)
_LATER = {"finish": _FINISH, "release": _RELEASE}


class _Ticks:
    """The instants 0, step, 2 step, ... (added up, as a ticking clock adds them), walked forward."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.next = 0.0  # the first instant not passed yet
        self.last: float | None = None  # the last instant passed

    def at_or_after(self, t: float) -> float:
        """The first instant not passed that is not before ``t`` (the instants before it are
        passed)."""
        while self.next < t:
            self._pass()
        return self.next

    def next_from(self, t: float, ran_at_t: bool) -> float:
        """The instant the next cycle falls on, from ``t``: the first not passed that is not before
        ``t``, but after ``t`` if ``ran_at_t`` (a cycle at ``t`` is then over: it is passed)."""
        at = self.at_or_after(t)
        if at == t and ran_at_t:
            self.passed()
            at = self.next
        return at

    def _pass(self) -> None:
        self.last = self.next
        self.next += self.step

    def passed(self) -> None:
        """The next instant was taken (its cycle ran)."""
        self._pass()

    def last_by(self, t: float) -> float | None:
        """The last instant not after ``t`` (passing every instant up to it)."""
        while self.next <= t:
            self._pass()
        return self.last


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
    watch: Watch | None = None,
    records: bool = True,
    every_cycle: bool = False,
) -> SimResult:
    """Run the pool until every job has completed (or the horizon), enforcing ``policy`` every
    ``interval`` seconds if given.

    ``shares`` (resolved, in slots) feed the Fair-Share negotiator; the enforcement loop takes its own
    from ``policy``. The seeds' models (``settings.order``) rank owners on ``tree`` (the policy's
    shares, a flat table or an owner tree, in ``resource``; by default ``shares`` as one level).
    ``watch`` is told what happens to every job as it happens; with ``records`` the result holds
    every job's record too (memory that grows with the jobs). ``every_cycle``: run every cycle of
    both grids while jobs remain, as a pool that ticks (what the results are checked against).
    """
    # The pool view is what the policy reads: kept only when a policy runs.
    pool = SimulatedPool(slots, settings, keep_view=policy is not None)
    # Jobs submitted at one instant arrive in the order given.
    arrivals = sorted(jobs, key=lambda spec: spec.submit)
    total = len(arrivals)
    recorder = Recorder() if records else None
    watches: list[Watch] = [w for w in (watch, recorder) if w is not None]
    if watches:
        pool.watch = watches[0] if len(watches) == 1 else Tee(*watches)
    queue: list[tuple[float, int, int, Any]] = []
    seq = 0

    def schedule(time: float, kind: int, data: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(queue, (time, kind, seq, data))

    ordering = orderings.build(
        settings.order, shares, tree if tree is not None else shares, resource,
        {spec.owner for spec in arrivals}, settings.models, settings.half_life,
        settings.initial_usage, pool.capacity)
    pool.accounts = ordering.reads_usage
    if type(ordering).ended is not orderings.Ordering.ended:  # the base one charges nothing
        pool.on_leave = ordering.ended
    enforcer = Enforcer(policy, Actuator(pool, limits), logger) if policy is not None else None
    negotiations = _Ticks(settings.negotiation_interval)
    enforcements = _Ticks(interval)
    negotiation_due = enforcement_due = False
    negotiated = 0

    def wants_enforcement() -> bool:
        book = pool.book
        return every_cycle or pool.waiting > 0 or book.holding() or book.pending()

    def wants_negotiation() -> bool:
        return every_cycle or ordering.ticks or pool.can_match()

    def plan_cycles(kind: int) -> None:
        """Schedule the next cycles that could do something, after an event of ``kind`` now."""
        nonlocal negotiation_due, enforcement_due
        now = pool.now
        if enforcer is not None and not enforcement_due and wants_enforcement():
            schedule(enforcements.next_from(now, kind >= _ENFORCE), _ENFORCE, None)
            enforcement_due = True
        if not negotiation_due and wants_negotiation():
            schedule(negotiations.next_from(now, kind >= _NEGOTIATE), _NEGOTIATE, None)
            negotiation_due = True

    horizon = settings.horizon if settings.horizon is not None else math.inf
    admits = type(ordering).admit is not orderings.Ordering.admit  # else every job joins at once
    plan_cycles(-1)
    arrived = 0
    later = pool.later
    heappop, heappush = heapq.heappop, heapq.heappush
    # The cyclic collector waits for the run to end. The simulation makes no reference cycles (a
    # test checks that a run leaves none to find), so reference counting frees all it drops; yet
    # the collector would walk every job, view entry and meter record still held at each of its
    # collections of the older generations: a fifth of a million-job week's CPU time.
    collecting = gc.isenabled()
    gc.disable()
    # The next arrival's submit time (infinite once every job has arrived).
    arrives = arrivals[0].submit if total else math.inf
    try:
        while pool.completed < total:
            time: float
            kind: int
            data: Any
            # An arrival goes before the queue's first event unless that one is earlier, or at the
            # same instant and of a kind that goes first.
            if arrived < total and (not queue or arrives < queue[0][0] or (
                    arrives == queue[0][0] and queue[0][1] > _ARRIVE)):
                time, kind, data = arrives, _ARRIVE, arrivals[arrived]
                arrived += 1
                arrives = arrivals[arrived].submit if arrived < total else math.inf
            elif queue:
                time, kind, _, data = heappop(queue)
            else:
                break
            if time > horizon:
                break
            pool.now = time
            if kind == _FINISH:
                job: JobId
                job, run = data
                pool.finish(job, run)
            elif kind == _RELEASE:
                job, run = data
                pool.release(job, run)
            elif kind == _ARRIVE:
                if not admits:
                    pool.arrive(data)
                else:
                    joins = ordering.admit(data, time, pool.idle, pool.running)
                    pool.arrive(data, queued=joins <= time)
                    if joins > time:
                        schedule(joins, _QUEUE, data.id)
            elif kind == _QUEUE:
                joins = ordering.admit(pool.jobs[data].spec, time, pool.idle, pool.running)
                if joins > time:
                    schedule(joins, _QUEUE, data)
                else:
                    pool.enqueue(data)
            elif kind == _ENFORCE:
                assert enforcer is not None
                enforcements.passed()
                enforcement_due = False
                if wants_enforcement():  # as it was when it was scheduled, or something changed since
                    enforcer.run_cycle(pool)
            else:
                negotiations.passed()
                negotiation_due = False
                if wants_negotiation():
                    negotiated += 1
                    negotiate(pool, ordering)
            if later:  # what the pool asks to be done later
                for when, what, about in later:
                    seq += 1
                    heappush(queue, (when, _LATER[what], seq, about))
                later.clear()
            if not negotiation_due or (enforcer is not None and not enforcement_due):
                plan_cycles(kind)
    finally:
        if collecting:
            gc.enable()
    if pool.completed < total:
        _stop(pool, horizon, negotiations, enforcements if enforcer is not None else None)
    return SimResult(
        capacity=pool.capacity,
        jobs=recorder.records() if recorder is not None else (),
        end=pool.now,
        cycles=enforcer.cycles if enforcer else 0,
        vacates=pool.vacates,
        unfinished=total - pool.completed,
        negotiations=negotiated,
    )


def _stop(pool: SimulatedPool, horizon: float, negotiations: _Ticks, enforcements: _Ticks | None
          ) -> None:
    """The run stops at the horizon with jobs left: the clock stands at the last instant by then
    of an event or a cycle (a ticking pool would have passed every cycle's), and the runs still on
    a slot end there."""
    if horizon < math.inf:
        for ticks in (negotiations, enforcements):
            last = ticks.last_by(horizon) if ticks is not None else None
            if last is not None and last > pool.now:
                pool.now = last
    for job in pool.running_jobs():
        pool.watch.end(pool.now, job.spec, False, 0.0)

"""The driver runs a cycle only where it could do something: the results are those of a pool that
ticks through every cycle, and an idle stretch costs nothing."""

from __future__ import annotations

import dataclasses
import gc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.core.resources import Unit
from osep.core.shares import ShareTable
from osep.measure.meter import Meter
from osep.measure.records import compute
from osep.sim import driver
from osep.sim.driver import simulate
from osep.sim.orderings import Ordering
from osep.sim.parts import SimJob, SimMachine, SimSlot
from osep.sim.pool import SimulatedPool
from osep.sim.specs import Checkpointing, JobSpec, Order, PoolSettings, SlotSpec
from osep.sim.watch import Metering

OWNERS = ("a", "b", "c")
SHARES = {"a": 2.0, "b": 1.0, "c": 1.0}


@st.composite
def pools(draw: st.DrawFn) -> dict:
    statics = draw(st.lists(st.integers(1, 2), min_size=0, max_size=4))
    machines = draw(st.lists(st.integers(2, 4), min_size=0, max_size=2))
    if not statics and not machines:
        statics = [1]
    slots = [SlotSpec(f"s{k}", cpus=c) for k, c in enumerate(statics)]
    slots += [SlotSpec(f"m{k}", cpus=c, partitionable=True) for k, c in enumerate(machines)]
    biggest = max(statics + machines)
    jobs = []
    for k in range(draw(st.integers(1, 14))):
        owner = draw(st.sampled_from(OWNERS))
        jobs.append(JobSpec(JobId(owner, 0, k), owner, float(draw(st.integers(0, 40)) * 15),
                            float(draw(st.integers(1, 60)) * 10), draw(st.integers(1, biggest))))
    enforce = draw(st.booleans())
    unit = draw(st.sampled_from([Unit.SLOTS, Unit.CPUS]))
    table = ShareTable(SHARES if unit is Unit.SLOTS else {o: {"cpus": s} for o, s in SHARES.items()})
    return {
        "slots": slots,
        "jobs": jobs,
        "settings": PoolSettings(
            negotiation_interval=draw(st.sampled_from([45.0, 60.0])),
            vacate_delay=draw(st.sampled_from([0.0, 10.0])),
            reservation_timeout=draw(st.sampled_from([None, 5.0, 200.0])),
            order=draw(st.sampled_from([Order.GREEDY, Order.FAIRSHARE, Order.SLURM, Order.GRID,
                                        Order.CAMBRIDGE])),
            checkpointing=draw(st.sampled_from(list(Checkpointing))),
            checkpoint_interval=30.0,
            holds=draw(st.booleans()),
            horizon=draw(st.sampled_from([None, 400.0, 1234.0])),
            half_life=600.0,
        ),
        "policy": PolicySettings(table, unit=unit) if enforce else None,
        "interval": draw(st.sampled_from([60.0, 90.0, 300.0])),
        "resource": unit.value,
    }


def run(case: dict, every_cycle: bool):
    return simulate(case["slots"], case["jobs"], case["settings"], SHARES, policy=case["policy"],
                    interval=case["interval"], resource=case["resource"], every_cycle=every_cycle)


def visit_everything(pool: SimulatedPool, ordering: Ordering) -> None:
    """A negotiation cycle that looks at every slot, every machine and every ranked owner, as the
    negotiator did before it kept track of what could change hands."""
    book = pool.book

    def ranks() -> list[str]:
        return ordering.rank(pool.now, pool.idle, pool.running, pool.accountant)

    ranked = [] if ordering.per_slot else ranks()
    for slot in [s for s in pool.slots.values() if s.parent is None]:
        if slot.job is not None:
            continue
        kept = book.take(slot.spec.name, pool.now)
        if kept is not None:
            job = pool.pop_fitting(kept.owner, slot.room)
            if job is not None:
                pool.start(job, slot)
                book.handed_over(kept)
                continue
        if ordering.per_slot:
            ranked = ranks()
        for owner in ranked:
            if book.may_match(owner, slot.spec.cpus):
                job = pool.pop_fitting(owner, slot.room)
                if job is not None:
                    pool.start(job, slot)
                    book.matched(owner, slot.spec.cpus)
                    break
    for machine in pool.machines.values():
        while (kept := book.take_fitting(machine.spec.name, pool.now, machine.free)) is not None:
            job = pool.pop_fitting(kept.owner, machine.free)
            if job is not None:
                pool.start_on(job, machine)
                book.handed_over(kept)
        placed = True
        while placed and machine.free[0] > 0:
            placed = False
            if ordering.per_slot:
                ranked = ranks()
            for owner in ranked:
                if book.may_match(owner):
                    job = pool.pop_fitting(owner, machine.free, book.allowance(owner))
                    if job is not None:
                        pool.start_on(job, machine)
                        book.matched(owner, job.spec.cpus)
                        placed = True
                        break


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_skipping_cycles_changes_nothing(case):
    """Against a pool that ticks through every cycle and visits everything in each."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "negotiate", visit_everything)
        ticking = run(case, True)
    skipping = run(case, False)
    assert skipping.jobs == ticking.jobs
    assert (skipping.end, skipping.vacates, skipping.unfinished) == (
        ticking.end, ticking.vacates, ticking.unfinished)
    assert skipping.cycles <= ticking.cycles and skipping.negotiations <= ticking.negotiations


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_a_view_built_at_the_first_snapshot_decides_as_one_kept_from_the_start(case):
    """A pool that keeps no view builds it when it is first asked for a snapshot (jobs running,
    dynamic slots carved, checkpoints taken by then), and keeps it from there."""
    if case["policy"] is None:
        case = {**case, "policy": PolicySettings(ShareTable(SHARES)), "resource": "slots"}
    kept = run(case, False)

    def late(slots, settings, keep_view=True):
        return SimulatedPool(slots, settings, keep_view=False)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "SimulatedPool", late)
        built = run(case, False)
    assert built == kept


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools())
def test_the_meter_fed_as_it_runs_measures_what_the_records_say(case):
    meter = Meter(SHARES, 10.0, origin=0.0)
    result = simulate(case["slots"], case["jobs"], case["settings"], SHARES, policy=case["policy"],
                      interval=case["interval"], resource=case["resource"],
                      watch=Metering([(meter, None)]))
    assert meter.result() == pytest.approx(compute(result.jobs, 10.0, SHARES))


def test_an_idle_stretch_costs_no_cycle():
    """A job at 0 and one 100 days later: the pool ticks through 2.9 million cycles in between; the
    driver runs the cycle that sees each job idle and the one that starts it."""
    jobs = [JobSpec(JobId("a", 0, 0), "a", 0.0, 100.0), JobSpec(JobId("b", 0, 0), "b", 8.64e6, 100.0)]
    policy = PolicySettings(ShareTable({"a": 1.0, "b": 1.0}))
    result = simulate([SlotSpec("only")], jobs, PoolSettings(), {"a": 1.0, "b": 1.0}, policy=policy)
    assert (result.cycles, result.negotiations) == (2, 2)
    assert result.end == 8.64e6 + 100.0 and result.unfinished == 0
    starts = [r.runs[0].start for r in result.jobs]
    assert starts == [0.0, 8.64e6]  # 8.64e6 is on both grids (60 s and 300 s)


def test_a_full_pool_is_not_negotiated():
    """Ten jobs queued on one slot for 10,000 s each: a negotiation is needed only when the slot
    frees, not every minute."""
    jobs = [JobSpec(JobId("a", 0, k), "a", 0.0, 10_000.0) for k in range(10)]
    result = simulate([SlotSpec("only")], jobs, PoolSettings(), {"a": 1.0})
    assert result.negotiations == 10 and result.end == 10 * 10_000.0 + 9 * 20.0


def test_the_horizon_stops_the_clock_where_a_ticking_pool_would():
    jobs = [JobSpec(JobId("a", 0, 0), "a", 0.0, 10_000.0), JobSpec(JobId("a", 0, 1), "a", 0.0, 10.0)]
    result = simulate([SlotSpec("only")], jobs, PoolSettings(horizon=1000.0), {"a": 1.0})
    assert result.end == 960.0 and result.unfinished == 2  # the last negotiation by the horizon
    assert result.jobs[0].runs[-1].end == 960.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pools(), st.sampled_from(list(Order)))
def test_a_run_leaves_no_cycles_for_the_collector_it_holds_off(case, order):
    """The run holds the cyclic collector off, which is safe only while it makes no reference
    cycles: whatever a run drops, reference counting must free. Each ordering, each checkpointing,
    with and without enforcement."""
    case["settings"] = dataclasses.replace(case["settings"], order=order)
    gc.collect()
    assert gc.isenabled()
    result = run(case, False)
    assert gc.isenabled()  # given back
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        garbage, gc.garbage[:] = list(gc.garbage), []
    finally:
        gc.set_debug(0)
    # One cycle is allowed: a job still on its slot when the horizon stopped the run (the job names
    # its slot, the slot its job), one per job left running, with what they hold.
    tied = [o for o in garbage if isinstance(o, SimJob)]
    assert all(job.slot is not None and job.slot.job is job for job in tied)
    assert len(tied) <= result.unfinished
    assert all(isinstance(o, (SimJob, SimSlot, SimMachine, JobSpec, SlotSpec, JobId, tuple, dict))
               for o in garbage), {type(o) for o in garbage}
    if not tied:
        assert garbage == []


def test_a_run_leaves_the_collector_off_if_it_was():
    gc.disable()
    try:
        simulate([SlotSpec("s0")], [JobSpec(JobId("a", 0, 0), "a", 0.0, 10.0)], PoolSettings(),
                 SHARES)
        assert not gc.isenabled()
    finally:
        gc.enable()

"""The simulated pool, checked against timelines worked out by hand.

The small case used throughout: two slots, owners a and b with one slot each. a submits two 1000 s
jobs at t=0 and takes both slots; b submits one 100 s job at t=100. Negotiation and enforcement run
every 60 s, a vacate takes 10 s. Enforcement at 120 vacates a.0 (equal wall clocks: lowest id) and
reserves slot1 for b; slot1 is free at 130, b.0 starts at the 180 negotiation and ends at 280; a.0
goes back on slot1 at the 300 negotiation.
"""

from __future__ import annotations

import pytest

from builders import jid, name
from osep.core.plan import Target
from osep.core.policy import PolicySettings
from osep.core.resources import Unit
from osep.core.shares import ShareTable
from osep.measure.records import compute
from osep.sim.driver import simulate
from osep.sim.specs import Checkpointing, JobSpec, Order, PoolSettings, SlotSpec

SLOTS = [SlotSpec("slot1"), SlotSpec("slot2")]
JOBS = [JobSpec(jid("a.0"), "a", 0, 1000), JobSpec(jid("a.1"), "a", 0, 1000), JobSpec(jid("b.0"), "b", 100, 100)]
SHARES = {"a": 1.0, "b": 1.0}
POLICY = PolicySettings(ShareTable(SHARES))


def run(policy=POLICY, jobs=JOBS, interval=60, **pool):
    settings = PoolSettings(**{"negotiation_interval": 60, "vacate_delay": 10, **pool})
    result = simulate(SLOTS, jobs, settings, SHARES, policy=policy, interval=interval)
    return result, {name(r.id): r for r in result.jobs}


def spans(record):
    return [(r.slot, r.start, r.end, r.vacated) for r in record.runs]


def test_without_enforcement_b_waits_for_a():
    result, jobs = run(policy=None)
    assert spans(jobs["a.0"]) == [("slot1", 0, 1000, False)]
    # Free at 1000, matched at the next negotiation (1020).
    assert spans(jobs["b.0"]) == [("slot1", 1020, 1120, False)]
    assert result.vacates == 0 and result.cycles == 0


def test_enforcement_timeline():
    result, jobs = run()
    assert spans(jobs["a.0"]) == [("slot1", 0, 130, True), ("slot1", 300, 1300, False)]
    assert jobs["a.0"].runs[0].vacate_sent == 120 and jobs["a.0"].runs[0].useful == 0
    assert spans(jobs["a.1"]) == [("slot2", 0, 1000, False)]
    assert spans(jobs["b.0"]) == [("slot1", 180, 280, False)]
    assert (jobs["a.0"].finish, jobs["b.0"].finish) == (1300, 280)
    assert result.vacates == 1
    assert result.end == 1300


@pytest.mark.parametrize(
    "mode, interval, finish, useful",
    [
        (Checkpointing.NONE, 0, 1300, 0),
        (Checkpointing.ON_VACATE, 0, 1180, 120),  # keeps the 120 s done before the signal
        (Checkpointing.PERIODIC, 50, 1200, 100),  # keeps up to the last 50 s checkpoint
    ],
)
def test_checkpointing_keeps_work(mode, interval, finish, useful):
    _, jobs = run(checkpointing=mode, checkpoint_interval=interval)
    assert jobs["a.0"].finish == finish
    assert jobs["a.0"].runs[0].useful == useful


def test_reservation_beats_greedy_order():
    """a.0 (submitted at 0) is older than b.0: a FIFO negotiator would hand the freed slot straight
    back to it. The reservation makes it go to b."""
    _, jobs = run(order=Order.GREEDY)
    assert jobs["b.0"].runs[0].start == 180


def test_a_lapsed_reservation_is_renewed_by_the_next_claim():
    """The reservation lapses (5 s) before the slot is free; the enforcement cycle at 180 sees a
    free slot and an owner below target, claims it again, and b still starts at 180."""
    result, jobs = run(order=Order.GREEDY, reservation_timeout=5)
    assert result.vacates == 1
    assert jobs["b.0"].runs[0].start == 180


def test_without_reservation_or_hold_the_loop_thrashes():
    """Enforcement every 90 s, negotiation every 60 s, reservations lapsing after 5 s and a pool
    that ignores holds: the slot is negotiated with nothing kept for b, a FIFO negotiator hands it
    back to the older a.0, and the next cycle vacates again. This is the failure reservations and
    holds exist to prevent."""
    result, jobs = run(interval=90, order=Order.GREEDY, reservation_timeout=5, holds=False)
    assert result.vacates >= 5
    assert jobs["b.0"].runs[0].start > 500


def test_a_hold_alone_stops_the_thrash():
    """The same, but the pool honours holds: a is held at what it runs while b waits, so the slot
    can only go to b, lapsed reservation or not."""
    result, jobs = run(interval=90, order=Order.GREEDY, reservation_timeout=5)
    assert result.vacates == 1
    assert jobs["b.0"].runs[0].start == 240  # vacate at 180, free at 190, next negotiation 240


def test_negotiation_latency():
    _, jobs = run(policy=None, jobs=[JobSpec(jid("x.0"), "x", 30, 10)])
    assert spans(jobs["x.0"]) == [("slot1", 60, 70, False)]


def test_fairshare_order_prefers_the_light_user():
    settings = PoolSettings(order=Order.FAIRSHARE, initial_usage={"a": 1e6})
    jobs = [JobSpec(jid("a.0"), "a", 0, 100), JobSpec(jid("b.0"), "b", 0, 100)]
    result = simulate([SlotSpec("only")], jobs, settings, SHARES)
    starts = {name(r.id): r.runs[0].start for r in result.jobs}
    assert starts == {"b.0": 0, "a.0": 120}  # b.0 ends at 100, a.0 waits for the 120 negotiation


def test_greedy_order_is_submit_order_across_owners():
    jobs = [JobSpec(jid("b.0"), "b", 5, 100), JobSpec(jid("a.0"), "a", 0, 100)]
    result = simulate([SlotSpec("only")], jobs, PoolSettings(), SHARES)
    starts = {name(r.id): r.runs[0].start for r in result.jobs}
    # Arrivals at an instant are seen before its negotiation: a.0 starts at once, b.0 at 120.
    assert starts == {"a.0": 0, "b.0": 120}


def test_jobs_only_run_where_they_fit():
    slots = [SlotSpec("small", cpus=1, memory=1000), SlotSpec("big", cpus=8, memory=16000)]
    jobs = [JobSpec(jid("x.0"), "x", 0, 100, cpus=4), JobSpec(jid("x.1"), "x", 0, 100, memory=20000)]
    result = simulate(slots, jobs, PoolSettings(horizon=1000), {})
    by_id = {name(r.id): r for r in result.jobs}
    assert by_id["x.0"].runs[0].slot == "big"
    assert by_id["x.1"].finish is None and by_id["x.1"].runs == ()  # fits nowhere


def test_horizon_stops_the_clock():
    result, jobs = run(policy=None, horizon=500)
    assert jobs["a.0"].finish is None and result.end <= 500


def test_feasible_target_runs_in_the_simulator_too():
    policy = PolicySettings(ShareTable({"a": 0, "b": 0}), target=Target.FEASIBLE,
                            max_vacates=2)
    result, jobs = run(policy=policy)
    assert result.vacates == 1 and jobs["b.0"].runs[0].start == 180


def test_metrics_of_the_timeline():
    result, _ = run()
    m = compute(result.jobs, result.capacity, SHARES)
    # b is owed one slot from 100 until it starts at 180 (80), and once b is done at 280, a is owed
    # its second slot until a.0 is matched at the 300 negotiation (20).
    assert m.violation == pytest.approx(100)
    assert m.capacity_loss == pytest.approx(50)  # slot1 idle from 130 to 180
    assert m.cost == pytest.approx(130)  # 120 s of lost work + 10 s of vacating
    assert (m.lost_work, m.vacate_time, m.vacates) == (120, 10, 1)
    a = next(o for o in m.owners if o.owner == "a")
    assert a.satisfaction == pytest.approx((100 + 100 * 1000 / 1300) / 2)


def test_a_held_owner_still_gets_the_slots_nobody_waiting_wants():
    """Six slots. a (share 2) runs 2 jobs, b (share 2) runs 1; 3 slots are free. At 30 b queues one
    more job and a three. The cycle at 50 holds a while b waits, but b can use only 1 of the 3 free
    slots: a may still take the other 2, so the 60 negotiation fills the pool instead of leaving 2
    slots idle until the hold is lifted."""
    slots = [SlotSpec(f"slot{k}") for k in range(1, 7)]
    jobs = [JobSpec(jid("a.0"), "a", 0, 1000), JobSpec(jid("a.1"), "a", 0, 1000), JobSpec(jid("b.0"), "b", 0, 1000),
            JobSpec(jid("b.1"), "b", 30, 1000)] + [JobSpec(jid(f"a.{k}"), "a", 30, 1000) for k in (2, 3, 4)]
    shares = {"a": 2.0, "b": 2.0}
    settings = PoolSettings(negotiation_interval=60, vacate_delay=10, order=Order.GREEDY)
    result = simulate(slots, jobs, settings, shares,
                      policy=PolicySettings(ShareTable(shares)), interval=50)
    starts = sorted((r.runs[0].start, name(r.id)) for r in result.jobs)
    assert starts[3:6] == [(60, "a.2"), (60, "a.3"), (60, "b.1")]
    assert result.vacates == 0


MACHINES = [SlotSpec(f"m{k}", cpus=5, memory=5120, gpus=1, partitionable=True) for k in range(4)]


def machine_run(policy, jobs, **pool):
    settings = PoolSettings(**{"negotiation_interval": 60, "vacate_delay": 10, **pool})
    result = simulate(MACHINES, jobs, settings, {"a": 10.0, "b": 10.0}, policy=policy, interval=60)
    return result, {name(r.id): r for r in result.jobs}


def test_partitionable_machines_carve_a_dynamic_slot_per_job_and_get_it_back():
    jobs = [JobSpec(jid(f"a.{k}"), "a", 0, 1000, 1, 512) for k in range(20)]
    jobs.append(JobSpec(jid("b.0"), "b", 100, 100, 4, 1024))
    result, records = machine_run(None, jobs)
    assert result.capacity == 20
    assert all(records[f"a.{k}"].runs[0].start == 0 for k in range(20))  # 20 cores, 20 jobs
    # Without enforcement b's 4-core job waits for four cores on one machine: the first jobs end at
    # 1000 on every machine at once, and it starts at the next negotiation.
    assert [(r.start, r.slot.split("_")[0]) for r in records["b.0"].runs] == [(1020, "m0")]
    assert result.vacates == 0


def test_osep_makes_room_for_a_multi_core_job_on_one_machine():
    jobs = [JobSpec(jid(f"a.{k}"), "a", 0, 1000, 1, 512) for k in range(20)]
    jobs.append(JobSpec(jid("b.0"), "b", 100, 100, 4, 1024))
    shares = ShareTable({"a": {"cpus": 10}, "b": {"cpus": 10}})
    result, records = machine_run(PolicySettings(shares, unit=Unit.CPUS), jobs)
    vacated = [(n, r.slot) for n, rec in records.items() for r in rec.runs if r.vacated]
    assert len(vacated) == 4 == result.vacates
    assert len({slot.split("_")[0] for _, slot in vacated}) == 1  # all on one machine
    machine = vacated[0][1].split("_")[0]
    b = records["b.0"].runs
    # Enforcement at 120 vacates four; they are gone at 130; b's job starts at the 180 negotiation
    # in the room kept for it, and a is held meanwhile.
    assert [(r.start, r.slot.split("_")[0]) for r in b] == [(180, machine)]
    assert records["b.0"].finish == 280


def test_a_job_bigger_than_its_owner_s_gap_gets_its_room_and_the_pool_is_not_stuck():
    """One machine of 8 cores. s1 and s2 (no share) fill it with one-core jobs of staggered run
    times and queue more; b (2 cores of 8) wants one 8-core job. Once p = 4 vacates can make room
    (at most 4 jobs left running) they are planned, and s1 and s2 are held with no allowance: the
    free cores are part of b's room. Given them as allowances (b's gap is only 2), they restarted
    jobs there at every cycle, b's room was never whole, and the same vacates came again every
    300 s for ever (the NASA iPSC trace at --compress 2 stuck this way)."""
    machine = [SlotSpec("m0", cpus=8, memory=8192, partitionable=True)]
    jobs = [JobSpec(jid("s1.0"), "s1", 0, 3600, 1, 512), JobSpec(jid("b.0"), "b", 1, 600, 8, 2048)]
    jobs += [JobSpec(jid(f"s{k % 2 + 1}.{k + 1}"), f"s{k % 2 + 1}", 2, 600 + 500 * k, 1, 512)
             for k in range(7)]
    jobs += [JobSpec(jid(f"s{o}.{k}"), f"s{o}", 3, 1000, 1, 512) for o in (1, 2) for k in range(10, 20)]
    shares = ShareTable({"b": {"cpus": 2}, "c": {"cpus": 6}})
    settings = PoolSettings(negotiation_interval=4, vacate_delay=10, horizon=20_000)
    result = simulate(machine, jobs, settings, {"b": 2.0, "c": 6.0}, interval=300,
                      policy=PolicySettings(shares, max_vacates=4, unit=Unit.CPUS))
    assert result.unfinished == 0
    b = {name(r.id): r for r in result.jobs}["b.0"]
    # The cycle at 3600 finds 4 jobs on the machine and vacates them; gone at 3610 (one ended at
    # 3604 first), b starts at the next negotiation, in the room kept for it, and runs once.
    assert [(r.start, r.vacated) for r in b.runs] == [(3612, False)]
    assert result.vacates == 3


def test_a_gpu_share_is_reclaimed_in_the_simulator():
    gpu = [JobSpec(jid(f"a.{k}"), "a", 0, 1000, 1, 512, 1) for k in range(4)]
    cpu = [JobSpec(jid(f"a.{k + 4}"), "a", 0, 1000, 1, 512) for k in range(4)]
    bob = [JobSpec(jid(f"b.{k}"), "b", 100, 100, 1, 512, 1) for k in range(2)]
    shares = ShareTable({"a": {"cpus": 10, "gpus": 2}, "b": {"cpus": 10, "gpus": 2}})
    _, records = machine_run(PolicySettings(shares, unit=Unit.DOMINANT), gpu + cpu + bob)
    vacated = sorted(n for n, rec in records.items() if any(r.vacated for r in rec.runs))
    assert len(vacated) == 2 and all(n in {f"a.{k}" for k in range(4)} for n in vacated)
    assert [r.start for k in range(2) for r in records[f"b.{k}"].runs] == [180, 180]


def test_disk_decides_where_jobs_fit_and_a_disk_share_is_reclaimed():
    gib = 1024 * 1024  # KiB
    disks = [SlotSpec(f"m{k}", cpus=5, memory=5120, disk=100 * gib, partitionable=True)
             for k in range(2)]
    # a fills both machines' disks with 4 jobs of 50 GiB, leaving 6 cores free; b owns 60 GiB.
    a = [JobSpec(jid(f"a.{k}"), "a", 0, 1000, 1, 512, 0, 50 * gib) for k in range(4)]
    b = [JobSpec(jid("b.0"), "b", 100, 100, 1, 512, 0, 40 * gib)]
    settings = PoolSettings(negotiation_interval=60, vacate_delay=10)
    greedy = simulate(disks, a + b, settings, {})
    # Without enforcement b's job waits for a's first to end, cores free all the while.
    assert [r.start for r in next(x for x in greedy.jobs if name(x.id) == "b.0").runs] == [1020]
    shares = ShareTable({"a": {"disk": 140 * gib}, "b": {"disk": 60 * gib}})
    result = simulate(disks, a + b, settings, shares, policy=PolicySettings(shares, unit=Unit.DISK),
                      interval=60)
    records = {name(r.id): r for r in result.jobs}
    assert result.vacates == 1 and [r.start for r in records["b.0"].runs] == [180]


def test_a_scenario_in_cores_is_measured_in_core_seconds():
    from pathlib import Path

    from osep.config.scenario import load_scenario
    from osep.experiment.runs import comparison, run_scenario

    scenario = load_scenario(Path(__file__).parents[2] / "osep" / "data" / "scenarios" / "machines.toml")
    outcomes = run_scenario(scenario, ("greedy", "osep"), records=True)
    greedy, osep = outcomes["greedy"], outcomes["osep"]
    assert greedy.resource == "cpus" and greedy.capacity == 20 and greedy.shares == {"owner1": 10, "owner2": 10}
    # Without osep owner2's two 4-core jobs (8 of its 10 cores) wait from 300 s until owner1's jobs
    # end at 3600 s: 8 cores short for 3300 s.
    assert greedy.metrics.violation == 8 * 3300
    assert osep.metrics.violation < 1000 and osep.metrics.vacates == 8
    # Work redone: eight one-core jobs vacated after their first minutes, in core-seconds.
    assert osep.metrics.lost_work == sum(
        r.vacate_sent - r.start for rec in osep.records for r in rec.runs if r.vacated)
    doc = comparison(scenario, outcomes)
    assert doc["units"]["PV"] == "core-seconds" and doc["scenario"]["measured_in"] == "cpus"
    # p as the decision had it: the largest owner's 10 of 20 cores, in slots of one core each.
    assert doc["policies"]["osep"]["settings"]["max_vacates"] == 10


def test_with_dominant_shares_pv_is_in_share_seconds(tmp_path):
    from osep.config.scenario import load_scenario
    from osep.experiment.runs import comparison, run_scenario
    from osep.ui.render import as_table

    path = tmp_path / "gpus.toml"
    path.write_text(
        "[pool]\nnegotiation_interval = 60\nvacate_delay = 10\n"
        "[[pool.slots]]\ncount = 4\ncpus = 5\nmemory = 5120\ngpus = 1\npartitionable = true\n"
        '[policy]\nunit = "dominant"\ninterval = 60\n'
        '[owners]\na = { cpus = 10, gpus = 2 }\nb = { cpus = 10, gpus = 2 }\n'
        '[[submit]]\nowner = "a"\ncount = 4\nruntime = 1000\nmemory = 512\ngpus = 1\n'
        '[[submit]]\nowner = "b"\ntime = 100\ncount = 2\nruntime = 100\nmemory = 512\ngpus = 1\n')
    scenario = load_scenario(path)
    outcomes = run_scenario(scenario, ("greedy", "osep"))
    b = {name: next(o for o in out.metrics.owners if o.owner == "b") for name, out in outcomes.items()}
    # b's two GPU jobs are its whole GPU share (position 1.0) from 100 s: without osep they start
    # when a's end (1000 s, negotiated at 1020); with osep at 180 (see the 4-core case above).
    assert b["greedy"].violation == pytest.approx(920.0)
    assert b["osep"].violation == pytest.approx(80.0)
    # a holds twice its GPU share until then: it is owed nothing.
    assert all(next(o for o in out.metrics.owners if o.owner == "a").violation == 0
               for out in outcomes.values())
    table = as_table(comparison(scenario, outcomes))
    assert "PV (share-s)" in table and "PC (core-s)" in table


@pytest.mark.parametrize("least, sent", [(0, 300.0), (300, 300.0), (301, 360.0), (400, 420.0), (4000, None)])
def test_a_minimum_run_time_puts_off_the_vacates_of_younger_jobs(tmp_path, least, sent):
    """paper-job-size: owner1's ten 3600 s jobs start at 0, owner2 asks for its half at 300 s, and
    enforcement runs every 60 s. A vacate of a job that has run less than the scenario's
    min_run_time is not sent; the next cycle decides again, and sends it once the job is old
    enough. Older than any job of owner1 gets, it stops every vacate."""
    from pathlib import Path

    from osep.config.scenario import load_scenario
    from osep.experiment.runs import outcome_column, run_policy, totals

    text = (Path(__file__).parents[2] / "osep" / "data" / "scenarios" / "paper-job-size.toml").read_text()
    path = tmp_path / "minimum.toml"
    path.write_text(text.replace('victim_order = "wallclock"\n',
                                 f'victim_order = "wallclock"\nmin_run_time = {least}\n', 1))
    scenario = load_scenario(path)
    assert scenario.min_run_time == least
    out = run_policy(scenario, "osep", records=True)
    times = sorted(r.vacate_sent for rec in out.records for r in rec.runs if r.vacated)
    assert out.metrics.vacates == out.result.vacates == len(times)
    if sent is None:
        assert out.metrics.vacates == 0
    else:
        assert times == [sent] * 5  # p = 5, all in the first cycle the jobs are old enough for
    assert outcome_column(out, totals(scenario))["settings"]["min_run_time"] == least
    # The option's min run time replaces the scenario's; a policy that does not enforce has none.
    assert run_policy(scenario, "osep", min_run_time=0).metrics.vacates == 5
    assert outcome_column(run_policy(scenario, "greedy"), totals(scenario))["settings"] is None

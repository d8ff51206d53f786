#!/usr/bin/env python3
"""The live cycle at scale, on the real test pool (scripts/testpool.py): where a cycle's time goes
with 100,000 queued jobs.

Starts the test pool with two schedds (20 one-core slots; the schedds told to accept submissions of
that size: MAX_JOBS_PER_SUBMISSION and MAX_JOBS_PER_OWNER, whose defaults are 20,000 and 100,000),
fills the slots with running jobs of two owners, queues ``--idle`` idle jobs in the first schedd from
three owners with stock submit files (``queue N`` of a short sleep, no request lines, so RequestMemory
and RequestDisk are the expressions condor_submit writes), and ``--second`` in the second schedd. Then
runs ``--cycles`` enforcement cycles of the daemon's own loop (LivePool and Enforcer, dry run) and
prints, per phase, the median wall and CPU seconds, the queries per daemon, and osep's own share of
the cycle: translate + decide + act (what the policy's issue counts as osep's work; the rest is
HTCondor's queries); then the re-check of victims before acting, as one look and as a query per job,
and the first schedd's queue read as osep reads it (idle jobs grouped by the schedd) and one ad per
job, in the same run. The pool is stopped at the end, whatever happens.

    sudo scripts/testpool.py isolate -- .venv/bin/python scripts/bench_live.py \
        [--idle 100000] [--second 2000] [--cycles 5]

Needs root (the test pool is a chroot) and a network namespace of its own (``isolate``: the pool
starts nowhere else); OSEP_TESTPOOL_SUITE picks the pool's HTCondor (trixie: 23.9, forky: 25.x).
``decide`` is the policy as it is, on the pool view the cycle's snapshot carries.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _env  # scripts/_env.py: one line and exit 2 on a Python without the project's dependencies

_env.check()

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from testpool import PoolError, TestPool  # noqa: E402

LIMITS = "MAX_JOBS_PER_SUBMISSION = 1000000\nMAX_JOBS_PER_OWNER = 1000000\n"
SLOTS = 20
# Who queues what in the first schedd (shares of --idle) and the second (of --second).
FIRST = {"carol": 0.5, "alice": 0.25, "bob": 0.25}
SECOND = {"carol": 0.5, "alice": 0.5}
SHARES = {"alice": 1, "bob": 1, "carol": 2}
OWN = ("translate", "decide", "act")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=100_000, help="idle jobs in the first schedd")
    parser.add_argument("--second", type=int, default=2_000, help="idle jobs in the second schedd")
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_live: needs root (the test pool is a chroot)", file=sys.stderr)
        return 1
    began = time.monotonic()
    pool = TestPool()
    try:
        return bench(pool, args.idle, args.second, args.cycles, began)
    except PoolError as exc:
        print(f"bench_live: {exc}", file=sys.stderr)
        return 1
    finally:
        pool.stop()


def bench(pool: TestPool, idle: int, second: int, cycles: int, began: float) -> int:
    pool.start("static", SLOTS, extra_config=LIMITS, schedds=2)
    os.environ.update(pool.env())
    other = next(n for n in pool.schedd_names() if n.startswith("schedd2@"))
    for owner in ("alice", "bob"):
        pool.submit(owner, SLOTS // 2, seconds=36_000, stock=True)
    wait_running(pool, SLOTS)
    submitted = time.monotonic()
    for owner, part in FIRST.items():
        pool.submit(owner, round(idle * part), seconds=60, stock=True)
    took = time.monotonic() - submitted
    print(f"queued {idle:,} idle jobs in the first schedd in {took:.0f} s "
          f"({idle / took:,.0f} jobs/s, condor_submit of stock submit files)")
    submitted = time.monotonic()
    for owner, part in SECOND.items():
        pool.submit(owner, round(second * part), seconds=60, stock=True, schedd=other)
    print(f"queued {second:,} in the second schedd in {time.monotonic() - submitted:.0f} s")
    return measure(cycles, idle + second, schedd_pids(pool))


def wait_running(pool: TestPool, count: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        out = pool.condor(["condor_q", "-global", "-allusers", "-constraint", "JobStatus == 2", "-af", "ClusterId"])
        if len(out.split()) >= count:
            return
        if time.monotonic() > deadline:
            raise PoolError(f"the {count} running jobs did not start in {timeout:.0f} s")
        time.sleep(1)


def schedd_pids(pool: TestPool) -> dict[str, int]:
    """The test pool's condor_schedd processes: "first" and "second" (``-local-name schedd2``)."""
    root = str(pool.root.resolve())
    out: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "root") != root:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"condor_schedd"):
            out["second" if b"schedd2" in argv else "first"] = int(entry.name)
    return out


def cpu_of(pid: int) -> float:
    """CPU seconds of a process and of its children it has reaped (a schedd may fork a query)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def measure(cycles: int, queued: int, pids: dict[str, int]) -> int:
    # The bindings read the pool's address and token from the environment set above.
    from osep import log
    from osep.act.actuator import Actuator, Limits
    from osep.act.cycle import Enforcer
    from osep.config.livepool import LiveSettings
    from osep.core.policy import PolicySettings
    from osep.core.shares import ShareTable
    from osep.htcondor.live import LivePool
    from osep.timing import Clocks, Phases

    with tempfile.TemporaryDirectory() as work:
        logfile = (Path(work) / "osep.log").open("w", encoding="utf-8")
        log.configure("info", logfile)  # the daemon's own logging, part of the cycle's cost
        live = LivePool(LiveSettings(pool="127.0.0.1:9618"))
        clocks = Clocks()
        enforcer = Enforcer(PolicySettings(ShareTable(SHARES)), Actuator(live, Limits(dry_run=True)),
                            clocks=clocks)
        # What each schedd's query cost the schedd itself, in CPU (its process, and any it forked).
        served: dict[str, float] = {}
        query_jobs = live._query_jobs

        def sampled(name: str, schedd_ad: Any) -> tuple[list[Any], list[Any]]:
            pid = pids["second" if name.startswith("schedd2@") else "first"]
            before = cpu_of(pid)
            try:
                return query_jobs(name, schedd_ad)
            finally:
                served[f"schedd {name}"] = cpu_of(pid) - before

        live._query_jobs = sampled  # type: ignore[method-assign]
        rows: list[dict[str, dict[str, float]]] = []
        for k in range(cycles):
            phases = Phases(clocks)
            served.clear()
            report = enforcer.run_cycle(live, phases)
            fields = phases.fields()
            fields["schedd_cpu"] = dict(served)
            rows.append(fields)
            jobs = sum(v.running + v.idle for v in report.plan.owners)
            print(f"cycle {k + 1}: {fields['seconds']['cycle']:.2f} s wall, "
                  f"{fields['cpu_seconds']['cycle']:.2f} s CPU, {jobs:,} jobs read, "
                  f"{len(report.plan.vacates)} vacates planned (dry run)", flush=True)
        logfile.close()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        report_table(rows, queued)
        print(f"peak memory of this process (pool start, submissions and {cycles} cycles): {peak:.0f} MiB")
        compare_recheck(live, [v.job for v in report.plan.vacates], pids)
        compare_reading(pids, enforcer.settings)
    return 0


def compare_recheck(live: Any, victims: list[Any], pids: dict[str, int]) -> None:
    """The re-check of victims before acting, as the actuator does it (one look: a query per
    schedd) and as it did before (a query per victim), for the last plan's victims and for every
    running job (what a plan with p = 20 re-checks here): wall seconds and the first schedd's own
    CPU, medians of three, in the same run."""
    import htcondor2

    from osep.core.model import JobId
    from osep.htcondor.job_ads import JOB_ATTRS

    located = {str(a["Name"]): a for a in
               htcondor2.Collector("127.0.0.1:9618").locateAll(htcondor2.DaemonType.Schedd)}
    running = [JobId(name, int(ad["ClusterId"]), int(ad["ProcId"]))
               for name, schedd_ad in located.items()
               for ad in htcondor2.Schedd(schedd_ad).query(constraint="JobStatus == 2",
                                                          projection=["ClusterId", "ProcId"])]

    def one_each(ids: list[Any]) -> None:
        for job_id in ids:
            schedd = htcondor2.Schedd(located[job_id.schedd])
            schedd.query(constraint=f"ClusterId == {job_id.cluster} && ProcId == {job_id.proc}",
                         projection=JOB_ATTRS)

    def timed(run: Any) -> tuple[float, float]:
        walls, served = [], []
        for _ in range(3):
            before, began = cpu_of(pids["first"]), time.monotonic()
            run()
            walls.append(time.monotonic() - began)
            served.append(cpu_of(pids["first"]) - before)
        return statistics.median(walls), statistics.median(served)

    for what, ids in (("the last plan's victims", victims), ("every running job", running)):
        if not ids:
            continue
        look = timed(lambda ids=ids: live.look(ids))
        each = timed(lambda ids=ids: one_each(ids))
        print(f"re-checking {what} ({len(ids)}): one look {look[0]:.3f} s wall, first schedd's CPU "
              f"{look[1]:.3f} s; a query per job {each[0]:.3f} s wall, first schedd's CPU {each[1]:.3f} s "
              f"({each[0] / max(look[0], 1e-9):.1f}x the look's wall time)")


def compare_reading(pids: dict[str, int], settings: Any) -> None:
    """The first schedd's queue read both ways, in the same run: as osep reads it (idle jobs
    grouped by the schedd, the jobs that hold a slot one ad each) and one ad per job, each through
    to_job (what osep did before, less the templates its reader kept for the procs of one
    submission), and decide on that snapshot, which builds its pool view from every job. Per way,
    medians of three: osep's CPU in the queries, the schedd's CPU serving them, osep's CPU
    translating and deciding, and osep's share of all that CPU; both plans must be the same."""
    import htcondor2

    from osep.core.model import Slot, Snapshot
    from osep.core.policy import decide
    from osep.htcondor.ads import BadAd
    from osep.htcondor.job_ads import (
        HOLDING_CONSTRAINT,
        IDLE_ATTRS,
        IDLE_CONSTRAINT,
        JOB_ATTRS,
        JOB_CONSTRAINT,
        AdTally,
        to_idle,
        to_job,
    )
    from osep.htcondor.slot_ads import SLOT_ATTRS, to_slots

    collector = htcondor2.Collector("127.0.0.1:9618")
    first = next(a for a in collector.locateAll(htcondor2.DaemonType.Schedd)
                 if not str(a.get("Name", "")).startswith("schedd2@"))
    name, schedd = str(first["Name"]), htcondor2.Schedd(first)
    slots = tuple(s for s in to_slots(collector.query(htcondor2.AdTypes.Startd, projection=SLOT_ATTRS))
                  if isinstance(s, Slot))
    now = float(int(time.time()))  # both ways decide at the same time

    def every_ad() -> tuple[Any, int]:
        ads = schedd.query(constraint=JOB_CONSTRAINT, projection=JOB_ATTRS)
        return ads, len(ads)

    def read_every(answer: Any) -> Any:
        tally, jobs = AdTally(), []
        for ad in answer:
            try:
                entry = to_job(name, ad, tally)
            except BadAd:
                continue
            if entry is not None:
                jobs.append(entry.job)
        return Snapshot(time=now, slots=slots, jobs=tuple(jobs))

    def grouped() -> tuple[Any, int]:
        groups = schedd.query(constraint=IDLE_CONSTRAINT, projection=IDLE_ATTRS,
                              opts=htcondor2.QueryOpt.GroupBy)
        ads = schedd.query(constraint=HOLDING_CONSTRAINT, projection=JOB_ATTRS)
        return (groups, ads), len(groups) + len(ads)

    def read_grouped(answer: Any) -> Any:
        from osep.core.view import PoolView

        groups, ads = answer
        tally = AdTally()
        jobs = [e.job for e in (to_job(name, ad, tally) for ad in ads) if e is not None]
        view = PoolView.of(slots, jobs)
        for ad in groups:
            group = to_idle(name, ad, tally, int(now))
            if group is not None:
                view.put_idle(group.owner, group.shape, group.count, group.first)
        return view.snapshot(now)

    results = {}
    for way, query, read in (("one ad per job, ad by ad", every_ad, read_every),
                             ("idle jobs grouped (now)", grouped, read_grouped)):
        rows = []
        for _ in range(3):
            served, began = cpu_of(pids["first"]), time.process_time()
            answer, ads = query()
            asked, served = time.process_time() - began, cpu_of(pids["first"]) - served
            began = time.process_time()
            snapshot = read(answer)
            translated = time.process_time() - began
            began = time.process_time()
            plan = decide(snapshot, settings)
            decided = time.process_time() - began
            del answer, snapshot
            rows.append((asked, served, translated, decided, ads))
        asked, served, translated, decided = (statistics.median(r[k] for r in rows) for k in range(4))
        own = (translated + decided) / (asked + served + translated + decided)
        results[way] = plan
        print(f"reading the first schedd, {way}: {rows[0][4]:,} ads; osep's CPU in the queries "
              f"{asked:.3f} s, the schedd's {served:.3f} s; translating {translated:.3f} s, deciding "
              f"{decided:.3f} s; osep's own work {own:.1%} of that CPU")
    every, grouped_plan = results.values()
    if every != grouped_plan:
        raise SystemExit("bench_live: the two ways of reading gave different plans: a bug")
    print("both ways gave the same plan")


def median(rows: list[dict[str, dict[str, float]]], kind: str, key: str) -> float:
    return statistics.median(r[kind].get(key, 0.0) for r in rows)


def report_table(rows: list[dict[str, dict[str, float]]], queued: int) -> None:
    print(f"\nmedian of {len(rows)} cycles, {queued:,} queued jobs + {SLOTS} running, 2 schedds:")
    print(f"{'phase':<22}{'wall s':>10}{'CPU s':>10}")
    for phase in ("query", "translate", "decide", "act", "other", "cycle"):
        print(f"{phase:<22}{median(rows, 'seconds', phase):>10.3f}{median(rows, 'cpu_seconds', phase):>10.3f}")
    for daemon in rows[0]["query_seconds"]:
        print(f"  query {daemon:<14}{median(rows, 'query_seconds', daemon):>10.3f}")
    own = [sum(r["seconds"].get(p, 0.0) for p in OWN) / r["seconds"]["cycle"] for r in rows]
    queries = [r["seconds"]["query"] / r["seconds"]["cycle"] for r in rows]
    own_cpu = [sum(r["cpu_seconds"].get(p, 0.0) for p in OWN) / r["seconds"]["cycle"] for r in rows]
    print(f"osep's own work (translate + decide + act), share of the cycle's wall time: "
          f"median {statistics.median(own):.1%} (range {min(own):.1%} to {max(own):.1%}); "
          f"its CPU seconds: {statistics.median(own_cpu):.1%} of the cycle")
    print(f"HTCondor's queries, share of the cycle's wall time: median {statistics.median(queries):.1%}")
    for daemon in rows[0]["schedd_cpu"]:
        print(f"  CPU of the {daemon} process serving its query: "
              f"median {median(rows, 'schedd_cpu', daemon):.3f} s")
    # In CPU seconds, which the machine's load does not inflate: osep's own work against all the
    # CPU the cycle took (osep's process, and the schedds serving its queries). On a machine of its
    # own, where nothing waits for a core, this is about the wall-time share.
    share = [sum(r["cpu_seconds"].get(p, 0.0) for p in OWN)
             / (r["cpu_seconds"]["cycle"] + sum(r["schedd_cpu"].values())) for r in rows]
    print(f"osep's own work, share of the CPU the cycle took (osep and the schedds): median "
          f"{statistics.median(share):.1%} (range {min(share):.1%} to {max(share):.1%})")


if __name__ == "__main__":
    sys.exit(main())

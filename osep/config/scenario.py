"""Scenario files: a simulated pool, its workload, and the policy settings to run it under, read into
a :class:`Scenario`. Every key is checked and an unknown one is an error naming the file and the
key; the keys and their meaning are listed in the docs' "Scenario files" (docs/simulate.md).
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from osep import bounds as B
from osep.config.joblist import JobListError, read_job_list
from osep.config.policy import PolicyFile, parse_policy
from osep.config.toml import Table, bound_text, check_name, check_number, escape, parse_choice, read_toml, show
from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.core.resources import Shape, fits
from osep.core.tree import ShareTree
from osep.errors import ConfigError
from osep.fairshare import cambridge
from osep.sim import swf
from osep.sim.horizon import BOUND, Horizon, bound_reason, simulation_limit
from osep.sim.specs import Checkpointing, JobSpec, ModelParams, Order, PoolSettings, SlotSpec
from osep.sim.swf import Workload
from osep.sim.variants import DEFAULT_NAMES
from osep.sim.variants import NAMES as POLICY_NAMES


@dataclass(frozen=True, slots=True)
class Scenario:
    path: str
    name: str
    description: str
    policies: tuple[str, ...]
    slots: tuple[SlotSpec, ...]
    jobs: tuple[JobSpec, ...]
    pool: PoolSettings  # its negotiator order is set by each policy variant
    policy: PolicySettings
    interval: float  # t, seconds between enforcement cycles
    excess: Order = Order.FAIRSHARE  # the negotiator the enforcing variants run over
    min_run_time: float = 0.0  # the enforcing variants vacate no job that has run less (s)
    # Lines of a workload log left out, per reason, and the first few of them.
    skipped: Mapping[str, int] = field(default_factory=dict)
    examples: tuple[str, ...] = ()
    # When its runs stop at the latest, and why (None: at their last job, however late).
    horizon: Horizon | None = None

    @property
    def capacity(self) -> int:
        """In slots: one per static slot, one per core of a partitionable machine."""
        return sum(s.as_slot().slots for s in self.slots)


def check_policy_names(
    names: list[Any] | tuple[str, ...], fail: Callable[[str], ConfigError]
) -> tuple[str, ...]:
    """The names, validated and without repeats; a typo gets a suggestion."""
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or name not in POLICY_NAMES:
            close = difflib.get_close_matches(name, POLICY_NAMES, n=1) if isinstance(name, str) else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise fail(f"unknown policy {show(name)}{hint}; known: {', '.join(POLICY_NAMES)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def _slots(pool: Table) -> tuple[SlotSpec, ...]:
    if not pool.has("slots"):
        raise pool.error("slots", "missing")
    if not isinstance(pool.data["slots"], list):
        count = pool.number("slots", integer=True, positive=True, maximum=B.MAX_SLOTS)
        return tuple(SlotSpec(f"slot{k + 1}") for k in range(count))
    specs: list[SlotSpec] = []
    for group in pool.tables("slots", limit=B.MAX_SLOT_GROUPS):
        count = group.number("count", 1, integer=True, positive=True, maximum=B.MAX_SLOTS)
        cpus = group.number("cpus", 1, integer=True, positive=True, maximum=B.MAX_SLOT_CPUS)
        memory = group.number("memory", None, integer=True, positive=True, maximum=B.MAX_SLOT_MEMORY)
        gpus = group.number("gpus", 0, integer=True, minimum=0, maximum=B.MAX_SLOT_GPUS)
        disk = group.number("disk", None, integer=True, positive=True, maximum=B.MAX_SLOT_DISK)
        partitionable = group.raw("partitionable", False)
        if not isinstance(partitionable, bool):
            raise group.error("partitionable", f"expected true or false, got {show(partitionable)}")
        group.finish()
        if len(specs) + count > B.MAX_SLOTS:
            raise group.error("count", f"the pool would have more than {B.MAX_SLOTS:,} slots")
        for _ in range(count):
            specs.append(SlotSpec(f"slot{len(specs) + 1}", cpus, memory, gpus, disk, partitionable))
    if not specs:
        raise pool.error("slots", "the pool has no slots")
    return tuple(specs)


def _workload(top: Table, path: Path | str) -> Workload | None:
    if not top.has("workload"):
        return None
    table = top.table("workload")
    given = [k for k in ("swf", "csv") if table.has(k)]
    if len(given) != 1:
        raise table.error(None if not given else "csv", "give a workload log (swf = \"...\") or a job list "
                          "(csv = \"...\")" + (", not both" if given else ""))
    name = table.string(given[0], limit=B.MAX_PATH, printable=True)
    owners = table.choice("owners", _Owners, _Owners.USER).value if given == ["swf"] else None
    since = float(table.number("since", 0.0, minimum=0, maximum=B.MAX_TRACE_SECONDS))
    until = table.number("until", None, positive=True, maximum=B.MAX_TRACE_SECONDS)
    limit = table.number("limit", None, integer=True, positive=True, maximum=B.MAX_JOBS)
    compress = float(table.number("compress", 1.0, positive=True, minimum=B.MIN_COMPRESS,
                                  maximum=B.MAX_COMPRESS))
    table.finish()
    if until is not None and until <= since:
        raise table.error("until", f"must be after since ({since:g}), got {show(until)}")
    source = Path(path).parent / name
    # One job more than a scenario may have, at most: enough to tell that there are too many.
    most = limit if limit is not None else B.MAX_JOBS + 1
    if owners is None:
        try:
            workload = read_job_list(source, since, float(until) if until is not None else None, most)
        except JobListError as exc:
            raise table.error("csv", f"{escape(source.name, 60)}: {exc.reason}") from None
    else:
        try:
            workload = swf.read(source, owners, since, float(until) if until is not None else None, most,
                                longest=B.MAX_SECONDS)
        except swf.TraceError as exc:
            raise table.error("swf", f"{escape(exc.path.name, 60)}: {escape(exc.reason, 200)}") from None
    where = table.failing(given[0])
    if not workload.jobs:
        raise where(f"no jobs in the {'log' if owners else 'job list'} (within since and until)")
    if len(workload.jobs) > B.MAX_JOBS:
        raise where(f"more than {B.MAX_JOBS:,} jobs in the {'log' if owners else 'job list'} (within since "
                    "and until): give a limit")
    compress_times(workload, compress, lambda job: where(
        f"job {job.id.proc} of {job.owner} is submitted at {job.submit:g} s and runs {job.runtime:g} s: "
        f"times are at most {bound_text(B.MAX_SECONDS)} s"))
    return workload


def compress_times(workload: Workload, compress: float, fail: Callable[[JobSpec], ConfigError]) -> None:
    """Submit times divided by ``compress``; every time within MAX_SECONDS (else ``fail``)."""
    if compress != 1.0:
        workload.jobs = [replace(j, submit=j.submit / compress) for j in workload.jobs]
    for job in workload.jobs:
        if job.submit > B.MAX_SECONDS or job.runtime > B.MAX_SECONDS:
            raise fail(job)


class _Owners(enum.Enum):
    USER = "user"
    GROUP = "group"
    GROUP_USER = "group.user"


# Where the jobs came from, for errors about them: (dotted key, latest end, a shape, its jobs' owner).
_Origin = tuple[str, float, Shape, str]


def _jobs(top: Table, workload: Workload | None = None, source: str = "workload"
          ) -> tuple[tuple[JobSpec, ...], list[_Origin]]:
    jobs: list[JobSpec] = list(workload.jobs) if workload is not None else []
    latest: dict[Shape, tuple[float, str]] = {}  # per shape of the workload's jobs: the latest end, an owner
    for j in jobs:
        end = j.submit + j.runtime
        if end > latest.get(j.shape, (-1.0, ""))[0]:
            latest[j.shape] = (end, j.owner)
    origins: list[_Origin] = [(source, end, shape, owner) for shape, (end, owner) in latest.items()]
    numbering: dict[str, int] = {}  # each owner's jobs are numbered as if by a schedd of its own
    for job in jobs:
        numbering[job.owner] = max(numbering.get(job.owner, 0), job.id.proc + 1)
    groups = top.tables("submit", limit=B.MAX_SUBMITS)
    if not groups and not jobs:
        raise top.error("submit", "no [[submit]] entries: the scenario has no jobs")
    for group in groups:
        owner = check_name(group.raw("owner"), group.failing("owner"))
        time = group.number("time", 0.0, minimum=0, maximum=B.MAX_SECONDS)
        cpus = group.number("cpus", 1, integer=True, positive=True, maximum=B.MAX_SLOT_CPUS)
        memory = group.number("memory", 0, integer=True, minimum=0, maximum=B.MAX_SLOT_MEMORY)
        gpus = group.number("gpus", 0, integer=True, minimum=0, maximum=B.MAX_SLOT_GPUS)
        disk = group.number("disk", 0, integer=True, minimum=0, maximum=B.MAX_SLOT_DISK)
        if group.has("runtimes"):
            if group.has("runtime"):
                raise group.error("runtime", "give either runtime or runtimes, not both")
            runtimes = group.raw("runtimes")
            if not isinstance(runtimes, list) or not runtimes:
                raise group.error("runtimes", "expected a non-empty array of run times")
            if len(runtimes) > B.MAX_JOBS:
                raise group.error("runtimes", f"at most {B.MAX_JOBS:,} run times, got {len(runtimes):,}")
            for k, r in enumerate(runtimes):
                check_number(r, group.failing("runtimes", k),
                             positive=True, maximum=B.MAX_SECONDS)
            if group.has("count"):
                count = group.number("count", integer=True, positive=True, maximum=B.MAX_JOBS)
                if count != len(runtimes):
                    raise group.error("count", f"is {count} but runtimes has {len(runtimes)} values")
        else:
            count = group.number("count", 1, integer=True, positive=True, maximum=B.MAX_JOBS)
            runtime = group.number("runtime", positive=True, maximum=B.MAX_SECONDS)
            runtimes = [runtime] * count
        group.finish()
        if len(jobs) + len(runtimes) > B.MAX_JOBS:
            raise group.error(None, f"the scenario would have more than {B.MAX_JOBS:,} jobs")
        origins.append((group.prefix, time + max(runtimes), (cpus, memory, gpus, disk), owner))
        for r in runtimes:
            n = numbering.get(owner, 0)
            numbering[owner] = n + 1
            jobs.append(JobSpec(JobId(owner, 0, n), owner, float(time), float(r), cpus, memory, gpus,
                                disk))
    return tuple(jobs), origins


def _check_fit(path: Path | str, slots: tuple[SlotSpec, ...], origins: list[_Origin]) -> None:
    """Every job fits some slot (or machine) of the pool empty: one that never could would keep the
    simulation going until its horizon for nothing. (The one fit check,
    :func:`osep.core.resources.fits`: a slot without memory or disk fits any.)"""
    rooms = {s.room for s in slots}
    checked: set[Shape] = set()
    for key, _, shape, owner in origins:
        if shape in checked:
            continue
        if not any(fits(shape, room) for room in rooms):
            cpus, memory, gpus, disk = shape
            raise ConfigError(path, key, f"a job of {show(owner)} asks for {cpus} cores, {memory} MiB, "
                                         f"{gpus} GPUs and {disk} KiB of disk: no slot of the pool has "
                                         "that much, so it would never run")
        checked.add(shape)


def _horizon(path: Path | str, meta: Table, horizon: float | None, negotiation: float, interval: float,
             slots: int, jobs: int, owners: int, origins: list[_Origin], given_t: bool, source: str) -> Horizon:
    """When the simulation stops at the latest: the file's (or --horizon's) horizon, or the latest
    the bounds allow (a file whose jobs cannot all end by then, even on an idle pool, is refused)."""
    limit = simulation_limit(negotiation, interval, slots, jobs, owners)
    why = (f"with a negotiation cycle every {negotiation:g} s and an enforcement cycle every {interval:g} s"
           f"{' (-t)' if given_t else ''} over {slots:,} slots, {jobs:,} jobs and {owners:,} owners, a "
           f"simulation stops by {limit:,.0f} s (at most {B.MAX_CYCLES:,} cycles, and {B.MAX_WORK:,} "
           f"enforcement cycles x (slots + jobs / {B.JOBS_PER_UNIT} + {B.OWNER_WORK} x owners) plus "
           "negotiation cycles x owners)")
    trace = source == "--trace"
    lift = ("give a longer --negotiation-interval or -t, or fewer jobs (--limit, --days)" if trace else
            "give a longer pool.negotiation_interval or -t, or fewer jobs")
    reason = bound_reason(negotiation, interval, slots, jobs, owners)
    if horizon is not None:
        if horizon > limit:
            raise meta.error("horizon", f"must be at most {limit:,.0f} s: {why}")
        return Horizon(float(horizon), "--horizon" if trace else "scenario.horizon", limit, reason, lift)
    key, end, _, _ = max(origins, key=lambda origin: origin[1])
    if end > limit:
        raise ConfigError(path, key, f"a job cannot end before {end:,.0f} s but {why}: use longer cycles, "
                                     "fewer or shorter jobs, or a horizon")
    return Horizon(limit, BOUND, limit, reason, lift)


def load_scenario(path: Path | str, interval: float | None = None,
                  data: Mapping[str, Any] | None = None) -> Scenario:
    """Read and validate a scenario file (``interval``: t as the command line replaces it, which the
    simulation's bounds depend on; ``data``: the file's TOML, if the caller has read it already)."""
    return build(Table(path, read_toml(path) if data is None else data), path, interval)


def build(top: Table, path: Path | str, interval: float | None, *, policy: PolicyFile | None = None,
           workload: Workload | None = None, source: str = "workload") -> Scenario:
    """A scenario from its TOML tables; ``policy`` and ``workload``, where given, stand for the
    [policy] and [owners] tables and for the [workload] table (an ``osep simulate --trace`` run)."""
    meta = top.table("scenario")
    name = meta.string("name", escape(Path(path).stem, B.MAX_NAME), printable=True)
    if not name:
        raise meta.error("name", "must not be empty")
    description = meta.string("description", "", limit=B.MAX_TEXT)
    policies = meta.raw("policies", list(DEFAULT_NAMES))
    if not isinstance(policies, list) or not policies:
        raise meta.error("policies", "expected a non-empty array of policy names")
    policies = check_policy_names(policies, lambda r: meta.error("policies", r))
    horizon = meta.number("horizon", None, positive=True, maximum=B.MAX_SECONDS)
    meta.finish()

    pool = top.table("pool", required=True)
    slots = _slots(pool)
    negotiation = float(pool.number("negotiation_interval", 60.0, minimum=B.MIN_INTERVAL,
                                    maximum=B.MAX_INTERVAL))
    vacate_delay = float(pool.number("vacate_delay", 10.0, minimum=0, maximum=B.MAX_INTERVAL))
    timeout = pool.number("reservation_timeout", None, minimum=B.MIN_INTERVAL, maximum=B.MAX_INTERVAL)
    pool.finish()

    ckpt = top.table("checkpoint")
    mode = parse_choice(
        ckpt.raw("mode", "on-vacate"), Checkpointing, lambda r: ckpt.error("mode", r)
    )
    every = float(ckpt.number("interval", 0.0, minimum=0, maximum=B.MAX_SECONDS))
    if mode is Checkpointing.PERIODIC and every <= 0:
        raise ckpt.error("interval", "periodic checkpointing needs an interval greater than 0")
    if 0 < every < B.MIN_INTERVAL:
        raise ckpt.error("interval", f"must be 0 or at least {bound_text(B.MIN_INTERVAL)} s, got {every!r}")
    ckpt.finish()

    fs = top.table("fairshare")
    half_life = float(fs.number("half_life", 86400.0, minimum=B.MIN_INTERVAL, maximum=B.MAX_SECONDS))
    usage_table = fs.table("usage")
    if len(usage_table.data) > B.MAX_OWNERS:
        raise usage_table.error(None, f"at most {B.MAX_OWNERS:,} owners, got {len(usage_table.data):,}")
    usage = {}
    for owner in usage_table.data:
        check_name(owner, usage_table.failing(owner))
        usage[owner] = float(usage_table.number(owner, minimum=0, maximum=B.MAX_USAGE))
    models = _models(fs)
    fs.finish()

    if policy is None:
        policy = parse_policy(top.table("policy"), top.table("owners", required=True))
    if workload is None:
        workload = _workload(top, path)
    jobs, origins = _jobs(top, workload, source)
    top.finish()
    _check_fit(path, slots, origins)
    t = interval if interval is not None else policy.interval
    shares = policy.settings.shares
    named = shares.nodes if isinstance(shares, ShareTree) else shares.shares
    owners = len({*named, *usage, *(job.owner for job in jobs)})
    stop = _horizon(path, meta, horizon, negotiation, t, len(slots), len(jobs), owners, origins,
                    interval is not None, source)
    return Scenario(
        path=str(path),
        name=name,
        description=description,
        policies=policies,
        slots=slots,
        jobs=jobs,
        pool=PoolSettings(
            negotiation_interval=negotiation,
            vacate_delay=vacate_delay,
            reservation_timeout=float(timeout) if timeout is not None else None,
            half_life=half_life,
            initial_usage=usage,
            models=models,
            checkpointing=mode,
            checkpoint_interval=every,
            horizon=stop.seconds,
        ),
        policy=policy.settings,
        interval=policy.interval,
        excess=policy.excess,
        min_run_time=policy.min_run_time,
        skipped=dict(workload.skipped) if workload is not None else {},
        examples=tuple(workload.examples) if workload is not None else (),
        horizon=stop,
    )


def _models(fs: Table) -> ModelParams:
    """The fair-share models' parameters from a scenario's [fairshare] table."""
    d = ModelParams()
    dampening = float(fs.number("dampening", d.dampening, minimum=1e-6, maximum=1e6))
    k5 = float(fs.number("k5", d.k5, minimum=1.0, maximum=1e6))
    tolerance = float(fs.number("k6_tolerance", d.k6_tolerance, minimum=0.0, maximum=1.0))
    cam = fs.table("cambridge")
    unit = float(cam.number("unit", d.unit, minimum=1e-6, maximum=B.MAX_SECONDS))
    limit = cam.number("price_limit", None, minimum=cambridge.MIN_PRICE, maximum=cambridge.MAX_PRICE)
    deferral = float(cam.number("deferral", d.deferral, minimum=0.0, maximum=B.MAX_SECONDS))
    half_life = float(cam.number("half_life", d.cambridge_half_life, minimum=B.MIN_INTERVAL,
                                 maximum=B.MAX_SECONDS))
    cam.finish()
    return ModelParams(dampening=dampening, k5=k5, k6_tolerance=tolerance, cambridge_half_life=half_life,
                       unit=unit, price_limit=float(limit) if limit is not None else None, deferral=deferral)

"""Scenario files: a simulated pool, its workload, and the policy settings to run it under.

Layout (every key is checked; unknown keys are errors)::

    [scenario]
    name = "..."
    description = "..."
    policies = ["none", "fairshare", "osep", "osep-ckpt"]   # default: all four
    horizon = 100000            # optional: stop the simulation here

    [pool]
    slots = 10                  # or [[pool.slots]] tables with count, cpus, memory (MiB), gpus,
                                # disk (KiB) and partitionable = true for machines carved into
                                # dynamic slots
    negotiation_interval = 60
    vacate_delay = 10
    reservation_timeout = 130   # optional; default vacate_delay + 2 negotiation intervals

    [checkpoint]                # how jobs checkpoint under the checkpointing policy variants
    mode = "on-vacate"          # or "periodic" (with interval) or "none"
    interval = 600

    [fairshare]
    half_life = 86400
    usage = { owner1 = 0.0 }    # decayed usage (slot-seconds) each owner starts with

    [policy]                    # as in a policy file
    [owners]                    # as in a policy file

    [workload]                  # optional: jobs from a log in the Standard Workload Format
    swf = "../traces/NASA-iPSC-1993-3.1-cln.swf.gz"   # relative to this file; .gz or plain
    owners = "user"             # or "group": who owns each job (user<N> / group<N>)
    since = 0                   # submit times in [since, until) only, counted from since
    until = 604800
    limit = 5000                # at most this many jobs
    compress = 2.5              # submit times divided by this (a higher load from the same jobs)

    [[submit]]                  # one or more (optional with a workload)
    owner = "owner1"
    time = 0
    count = 10
    runtime = 3600              # or runtimes = [..] (one per job)
    cpus = 1
    memory = 0                  # MiB
    gpus = 0
    disk = 0                    # KiB
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from osep.config.policy import parse_policy
from osep.config.toml import Table, parse_choice, read_toml
from osep.core.model import JobId
from osep.core.policy import PolicySettings
from osep.errors import ConfigError
from osep.sim import swf
from osep.sim.specs import Checkpointing, JobSpec, PoolSettings, SlotSpec
from osep.sim.swf import Workload
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
    # Lines of a workload log left out, per reason, and the first few of them.
    skipped: Mapping[str, int] = field(default_factory=dict)
    examples: tuple[str, ...] = ()

    @property
    def capacity(self) -> int:
        """In slots: one per static slot, one per core of a partitionable machine."""
        return sum(s.as_slot().slots for s in self.slots)


def check_policy_names(
    names: list[str] | tuple[str, ...], fail: Callable[[str], ConfigError]
) -> tuple[str, ...]:
    """The names, validated and without repeats; a typo gets a suggestion."""
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or name not in POLICY_NAMES:
            close = difflib.get_close_matches(str(name), POLICY_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise fail(f"unknown policy {name!r}{hint}; known: {', '.join(POLICY_NAMES)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def _slots(pool: Table) -> tuple[SlotSpec, ...]:
    if not pool.has("slots"):
        raise pool.error("slots", "missing")
    value = pool.data["slots"]
    if isinstance(value, int) and not isinstance(value, bool):
        count = pool.number("slots", integer=True, positive=True)
        return tuple(SlotSpec(f"slot{k + 1}") for k in range(count))
    specs: list[SlotSpec] = []
    for group in pool.tables("slots"):
        count = group.number("count", 1, integer=True, positive=True)
        cpus = group.number("cpus", 1, integer=True, positive=True)
        memory = group.number("memory", None, integer=True, positive=True)
        gpus = group.number("gpus", 0, integer=True, minimum=0)
        disk = group.number("disk", None, integer=True, positive=True)
        partitionable = group.raw("partitionable", False)
        if not isinstance(partitionable, bool):
            raise group.error("partitionable", f"expected true or false, got {partitionable!r}")
        group.finish()
        for _ in range(count):
            specs.append(SlotSpec(f"slot{len(specs) + 1}", cpus, memory, gpus, disk, partitionable))
    if not specs:
        raise pool.error("slots", "the pool has no slots")
    return tuple(specs)


def _workload(top: Table, path: Path | str) -> Workload | None:
    if not top.has("workload"):
        return None
    table = top.table("workload")
    name = table.string("swf")
    owners = table.choice("owners", _Owners, _Owners.USER).value
    since = float(table.number("since", 0.0, minimum=0))
    until = table.number("until", None, positive=True)
    limit = table.number("limit", None, integer=True, positive=True)
    compress = float(table.number("compress", 1.0, positive=True))
    table.finish()
    if until is not None and until <= since:
        raise table.error("until", f"must be after since ({since:g}), got {until}")
    try:
        workload = swf.read(Path(path).parent / name, owners, since,
                            float(until) if until is not None else None, limit)
    except swf.TraceError as exc:
        raise table.error("swf", str(exc)) from None
    if not workload.jobs:
        raise table.error("swf", "no jobs in the log (within since and until)")
    if compress != 1.0:
        workload.jobs = [replace(j, submit=j.submit / compress) for j in workload.jobs]
    return workload


class _Owners(enum.Enum):
    USER = "user"
    GROUP = "group"


def _jobs(top: Table, workload: Workload | None = None) -> tuple[JobSpec, ...]:
    jobs: list[JobSpec] = list(workload.jobs) if workload is not None else []
    numbering: dict[str, int] = {}  # each owner's jobs are numbered as if by a schedd of its own
    for job in jobs:
        numbering[job.owner] = max(numbering.get(job.owner, 0), job.id.proc + 1)
    groups = top.tables("submit")
    if not groups and not jobs:
        raise top.error("submit", "no [[submit]] entries: the scenario has no jobs")
    for group in groups:
        owner = group.string("owner")
        if not owner:
            raise group.error("owner", "must not be empty")
        time = group.number("time", 0.0, minimum=0)
        cpus = group.number("cpus", 1, integer=True, positive=True)
        memory = group.number("memory", 0, integer=True, minimum=0)
        gpus = group.number("gpus", 0, integer=True, minimum=0)
        disk = group.number("disk", 0, integer=True, minimum=0)
        if group.has("runtimes"):
            if group.has("runtime"):
                raise group.error("runtime", "give either runtime or runtimes, not both")
            runtimes = group.raw("runtimes")
            if not isinstance(runtimes, list) or not runtimes:
                raise group.error("runtimes", "expected a non-empty array of run times")
            for k, r in enumerate(runtimes):
                if isinstance(r, bool) or not isinstance(r, (int, float)) or r <= 0:
                    raise group.error(f"runtimes[{k}]", f"a run time must be a positive number, got {r!r}")
            if group.has("count"):
                count = group.number("count", integer=True, positive=True)
                if count != len(runtimes):
                    raise group.error("count", f"is {count} but runtimes has {len(runtimes)} values")
        else:
            count = group.number("count", 1, integer=True, positive=True)
            runtime = group.number("runtime", positive=True)
            runtimes = [runtime] * count
        group.finish()
        for r in runtimes:
            n = numbering.get(owner, 0)
            numbering[owner] = n + 1
            jobs.append(JobSpec(JobId(owner, 0, n), owner, float(time), float(r), cpus, memory, gpus,
                                disk))
    return tuple(jobs)


def load_scenario(path: Path | str) -> Scenario:
    """Read and validate a scenario file."""
    top = Table(path, read_toml(path))
    meta = top.table("scenario")
    name = meta.string("name", Path(path).stem)
    description = meta.string("description", "")
    policies = meta.raw("policies", list(POLICY_NAMES))
    if not isinstance(policies, list) or not policies:
        raise meta.error("policies", "expected a non-empty array of policy names")
    policies = check_policy_names(policies, lambda r: meta.error("policies", r))
    horizon = meta.number("horizon", None, positive=True)
    meta.finish()

    pool = top.table("pool", required=True)
    slots = _slots(pool)
    negotiation = float(pool.number("negotiation_interval", 60.0, positive=True))
    vacate_delay = float(pool.number("vacate_delay", 10.0, minimum=0))
    timeout = pool.number("reservation_timeout", None, positive=True)
    pool.finish()

    ckpt = top.table("checkpoint")
    mode = parse_choice(
        ckpt.raw("mode", "on-vacate"), Checkpointing, lambda r: ckpt.error("mode", r)
    )
    interval = float(ckpt.number("interval", 0.0, minimum=0))
    if mode is Checkpointing.PERIODIC and interval <= 0:
        raise ckpt.error("interval", "periodic checkpointing needs an interval greater than 0")
    ckpt.finish()

    fs = top.table("fairshare")
    half_life = float(fs.number("half_life", 86400.0, positive=True))
    usage_table = fs.table("usage")
    usage = {o: float(usage_table.number(o, minimum=0)) for o in usage_table.data}
    fs.finish()

    policy = parse_policy(top.table("policy"), top.table("owners", required=True))
    workload = _workload(top, path)
    jobs = _jobs(top, workload)
    top.finish()
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
            checkpointing=mode,
            checkpoint_interval=interval,
            horizon=float(horizon) if horizon is not None else None,
        ),
        policy=policy.settings,
        interval=policy.interval,
        skipped=dict(workload.skipped) if workload is not None else {},
        examples=tuple(workload.examples) if workload is not None else (),
    )


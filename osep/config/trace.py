"""The scenario ``osep simulate --trace`` makes from a workload log and its options, with no file:
the log read once, the pool sized from it (or from the options), and owner shares in proportion to
each owner's core-seconds in the window (or a policy file's). The scenario itself is built and
checked by :func:`osep.config.scenario.build`, as a file's is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osep import bounds as B
from osep.config.policy import parse_policy
from osep.config.scenario import Scenario, build, compress_times
from osep.config.toml import Table, bound_text, escape
from osep.errors import ConfigError
from osep.sim import swf
from osep.sim.swf import Workload


@dataclass(frozen=True, slots=True)
class TraceOptions:
    """What ``osep simulate --trace`` was given (docs/simulate.md, "Workload logs without a scenario")."""

    path: Path
    owners: str = "user"  # one of swf.NAMINGS
    since: float = 0.0
    until: float | None = None
    limit: int | None = None
    compress: float = 1.0
    slots: int | None = None  # cores in the pool (default: the log's MaxProcs, else its peak)
    cores_per_machine: int | None = None  # None: one-core static slots
    least: float = 0.01  # owners (groups) below this fraction of the work get no share
    policy_file: Path | None = None
    negotiation_interval: float = 60.0
    horizon: float | None = None


@dataclass(frozen=True, slots=True)
class TraceScenario:
    scenario: Scenario
    resolved: dict[str, Any]  # the run as resolved from the log and the options (JSON-ready)


# A key of the scenario a trace run makes, as the option that sets it.
_OPTION_KEYS = {"scenario.horizon": "--horizon", "pool.slots": "--cores", "pool.slots[0].count": "--cores",
                "pool.negotiation_interval": "--negotiation-interval"}


def trace_scenario(options: TraceOptions, interval: float | None = None) -> TraceScenario:
    """The scenario ``osep simulate --trace`` runs: the log read once, the pool and the shares
    resolved from it and the options (``interval``: -t, which the simulation's bounds depend on)."""
    from osep.config.policy import load_policy

    path = options.path
    most = options.limit if options.limit is not None else B.MAX_JOBS + 1
    work = swf.read(path, options.owners, options.since, options.until, most, longest=B.MAX_SECONDS)
    window = f"[{options.since:g}, {'the end' if options.until is None else f'{options.until:g}'})"
    if not work.jobs:
        left, lines = sum(work.skipped.values()), work.records
        if not lines:
            why = ": it has no data lines (is it a log in the Standard Workload Format?)"
        elif left == lines:
            why = (f": all {lines:,} of its data lines were left out ({'; '.join(work.examples)}; is "
                   "it a log in the Standard Workload Format?)")
        else:
            why = f": of its {lines:,} data lines, {left:,} were left out and the others are outside it"
        raise ConfigError(path, None, f"no jobs in the log submitted in {window} s{why}")
    if len(work.jobs) > B.MAX_JOBS:
        raise ConfigError(path, None, f"more than {B.MAX_JOBS:,} jobs submitted in {window} s: give "
                                      "--limit, or a shorter window (--until-second, --days)")
    compress_times(work, options.compress, lambda job: ConfigError(
        path, None, f"job {job.id.proc} of {job.owner} is submitted at {job.submit:g} s (after --from-second and "
                    f"--compress): times are at most {bound_text(B.MAX_SECONDS)} s; give --until-second or --days"))
    pool, slot_tables = _trace_pool(options, work)
    if options.policy_file is not None:
        policy = load_policy(options.policy_file)
        shares: dict[str, Any] = {"from": str(options.policy_file)}
    else:
        owners, unit = _proportional(work, options.owners, options.least), pool["unit"]
        top = Table(path, {"policy": {"unit": unit}, "owners": owners})
        policy = parse_policy(top.table("policy"), top.table("owners"))
        shares = {"from": f"core-seconds in the window; owners under {options.least:.2%} of them have none",
                  "unit": unit, "owners": owners}
    meta: dict[str, Any] = {
        "name": escape(path.name, B.MAX_NAME),
        "description": f"{escape(path.name, 200)}: jobs submitted in {window} s, owners by {options.owners}",
    }
    if options.horizon is not None:
        meta["horizon"] = options.horizon
    data = {"scenario": meta, "pool": {"slots": slot_tables,
                                       "negotiation_interval": options.negotiation_interval}}
    try:
        scenario = build(Table(path, data), path, interval, policy=policy, workload=work, source="--trace")
    except ConfigError as exc:
        if exc.key not in _OPTION_KEYS and exc.key != "--trace":
            raise
        raise ConfigError(path, _OPTION_KEYS.get(exc.key, exc.key), exc.reason) from None
    owned = policy.settings.shares.shares
    jobs_by_owner: dict[str, int] = {}
    for job in work.jobs:
        jobs_by_owner[job.owner] = jobs_by_owner.get(job.owner, 0) + 1
    resolved = {
        "trace": str(path),
        "header": {k: v for k, v in work.header.items() if k in _HEADER_KEYS},
        "owners_by": options.owners,
        "window": {"since": options.since, "until": options.until, "limit": options.limit,
                   "compress": options.compress},
        "records": work.records,
        "jobs": len(work.jobs),
        "skipped": dict(work.skipped),
        "outside_window": work.records - len(work.jobs) - sum(work.skipped.values()),
        "owners": len(jobs_by_owner),
        "owners_without_share": sum(1 for o in jobs_by_owner if not _has_share(o, owned)),
        "pool": pool,
        "shares": shares,
        "negotiation_interval": options.negotiation_interval,
        "horizon": scenario.pool.horizon,
    }
    return TraceScenario(scenario, resolved)


_HEADER_KEYS = ("Computer", "Installation", "Acknowledge", "StartTime", "EndTime", "MaxJobs", "MaxRecords",
                "MaxProcs", "MaxNodes", "UnixStartTime")


def _has_share(owner: str, owned: Mapping[str, Any]) -> bool:
    """Whether an owner (or, for group.user, the group it is in) is in the policy's shares."""
    return owner in owned or owner.partition(".")[0] in owned


def _trace_pool(options: TraceOptions, work: Workload) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The pool a trace runs on (as resolved, for the record) and its [[pool.slots]] tables."""
    biggest = max(job.cpus for job in work.jobs)
    if options.slots is not None:
        cores, origin = options.slots, "--cores"
    else:
        header = work.header_number("MaxProcs") or work.header_number("MaxNodes")
        if header is not None:
            cores, origin = header, "the log's MaxProcs header" if work.header_number("MaxProcs") else \
                "the log's MaxNodes header"
        else:
            cores, origin = swf.peak_cores(work), "the most cores the log's jobs held at once"
    per = options.cores_per_machine
    path = options.path
    if per is None:
        if biggest > 1:
            raise ConfigError(path, "--cores-per-machine", f"the log has jobs of up to {biggest:,} processors, "
                                                           "which one-core slots could never run: give "
                                                           f"--cores-per-machine {biggest} or more")
        if cores > B.MAX_SLOTS:
            raise ConfigError(path, "--cores", f"{origin} gives {cores:,} cores, more one-core slots than "
                                               f"{B.MAX_SLOTS:,}: give fewer --cores, or --cores-per-machine "
                                               "to make them machines")
        return ({"cores": cores, "from": origin, "machines": cores, "cores_per_machine": 1,
                 "partitionable": False, "unit": "slots"}, [{"count": cores}])
    if biggest > per:
        raise ConfigError(path, "--cores-per-machine", f"the log has jobs of up to {biggest:,} processors, "
                                                       f"more than a machine of {per:,} cores has")
    # Whole machines of ``per`` cores, and the cores left over as one smaller machine.
    whole, rest = divmod(cores, per)
    machines = whole + (1 if rest else 0)
    if machines > B.MAX_SLOTS:
        raise ConfigError(path, "--cores-per-machine", f"{cores:,} cores ({origin}) make {machines:,} machines "
                                                       f"of {per:,} cores, more than {B.MAX_SLOTS:,}: give "
                                                       "more --cores-per-machine or fewer --cores")
    if not whole and biggest > rest:
        raise ConfigError(path, "--cores", f"the log has jobs of up to {biggest:,} processors, more than the "
                                           f"pool's {cores:,} cores ({origin})")
    tables = [{"count": whole, "cpus": per, "partitionable": True}] if whole else []
    if rest:
        tables.append({"count": 1, "cpus": rest, "partitionable": True})
    return ({"cores": cores, "from": origin, "machines": machines, "cores_per_machine": per,
             "last_machine_cores": rest or per, "partitionable": True, "unit": "cpus"}, tables)


def _proportional(work: Workload, naming: str, least: float) -> dict[str, Any]:
    """An [owners] table: each owner's share in proportion to its core-seconds in the window, none
    for those under ``least`` of them; with group.user, groups so, and each group's members in
    proportion to theirs within it."""
    used: dict[str, float] = {}
    for job in work.jobs:
        used[job.owner] = used.get(job.owner, 0.0) + job.cpus * job.runtime
    if naming != "group.user":
        return _percentages(used, least)
    groups: dict[str, dict[str, float]] = {}
    for owner, amount in used.items():
        group, _, user = owner.partition(".")
        groups.setdefault(group, {})[user] = amount
    tops = _percentages({g: sum(m.values()) for g, m in groups.items()}, least, keep=True)
    return {g: {"share": tops[g], **{u: {"share": s} for u, s in _percentages(groups[g], 0.0).items()}}
            for g in tops}


def _percentages(used: Mapping[str, float], least: float, keep: bool = False) -> dict[str, str]:
    """Shares as "x%" text in proportion to ``used``, floored to 10^-4 % (they never sum past 100%),
    the largest first; those under ``least`` of the total get none (left out, or "0%" if ``keep``)."""
    total = sum(used.values())
    owning = {o: a for o, a in used.items() if a >= least * total}
    owned = sum(owning.values())
    if not owning:
        raise ConfigError(None, "--least", f"no owner did {least:.2%} of the work: give a smaller --least")
    out: dict[str, str] = {}
    for owner in sorted(used, key=lambda o: (-used[o], o)):
        if owner in owning:
            out[owner] = f"{int(1e6 * used[owner] / owned) / 1e4:.4f}%"
        elif keep:
            out[owner] = "0%"
    return out

"""Builders shared by the tests: small snapshots written the way one would sketch them on paper."""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from osep.bounds import MAX_NAME, MAX_OWNERS, share_maximum
from osep.config.policy import MAX_DEPTH, RESERVED
from osep.core.model import Job, JobId, JobState, Kept, Shape, Slot, Snapshot
from osep.htcondor.quota_shares import PoolSize, Translation, translate


def snap(
    now: float = 10_000.0,
    *,
    running: Mapping[str, Sequence[float]] | None = None,
    idle: Mapping[str, int] | None = None,
    free: int = 0,
    slot_cpus: int = 1,
    idle_cpus: int = 1,
) -> Snapshot:
    """A snapshot with one slot per running job (``owner -> start times``), ``free`` empty slots,
    and ``idle`` queued jobs per owner. Running job k of an owner is ``owner#0.k`` (see :func:`name`),
    its idle job k ``owner#1.k``; the slot of running job number n (in the order given) is ``s{n}``."""
    slots: list[Slot] = []
    jobs: list[Job] = []
    for owner, starts in (running or {}).items():
        for k, start in enumerate(starts):
            name = f"s{len(slots)}"
            slots.append(Slot(name, cpus=slot_cpus))
            jobs.append(Job(JobId(owner, 0, k), owner, JobState.RUNNING, 0.0, slot=name,
                            start_time=start))
    for _ in range(free):
        slots.append(Slot(f"s{len(slots)}", cpus=slot_cpus))
    for owner, count in (idle or {}).items():
        for k in range(count):
            jobs.append(Job(JobId(owner, 1, k), owner, JobState.IDLE, 1.0, cpus=idle_cpus))
    return Snapshot(now, tuple(slots), tuple(jobs))


def jid(name: str) -> JobId:
    """A job id from a short name: ``a.3`` is owner a's running job 3, ``a.i3`` its idle job 3."""
    owner, _, rest = name.partition(".")
    if rest.startswith("i"):
        return JobId(owner, 1, int(rest[1:]))
    return JobId(owner, 0, int(rest))


def name(job: JobId) -> str:
    """The short name of a job id made by :func:`jid` or :func:`snap`."""
    return f"{job.schedd}.{'i' if job.cluster == 1 else ''}{job.proc}"


Sketch = tuple[int, ...]  # (cpus, memory MiB, gpus[, disk KiB]): disk 0 (a job) or None (a machine)


def shape(sketch: Sketch) -> Shape:
    """A job's shape from a sketch: disk is not asked for unless given."""
    cpus, memory, gpus, *disk = sketch
    return (cpus, memory, gpus, disk[0] if disk else 0)


def machines(
    layout: Mapping[str, Sketch],
    running: Sequence[tuple[str, str, Sketch, float]],
    idle: Sequence[tuple[str, Sketch]] = (),
    now: float = 10_000.0,
    kept: Sequence[tuple[str, str, Sketch]] = (),
) -> Snapshot:
    """A pool of partitionable slots: ``layout`` names each with its (cpus, memory MiB, gpus[, disk
    KiB]); ``running`` lists (owner, partitionable slot, shape, start) for the jobs in its dynamic
    slots (named ``<slot>_<n>``); ``idle`` lists (owner, shape). Running job n of an owner is
    ``owner#0.n``, its idle job n ``owner#1.n``. Disk is not modelled where a machine does not give
    it, and not asked for where a job does not."""
    used = {name: [0, 0, 0, 0] for name in layout}
    slots: list[Slot] = []
    jobs: list[Job] = []
    counts: dict[str, int] = {}
    for k, (owner, machine, sketch, start) in enumerate(running):
        name = f"{machine}_{k}"
        cpus, memory, gpus, disk = shape(sketch)
        slots.append(Slot(name, cpus, memory, gpus, disk if len(layout[machine]) > 3 else None,
                          parent=machine))
        for i, amount in enumerate((cpus, memory, gpus, disk)):
            used[machine][i] += amount
        n = counts.get(owner, 0)
        counts[owner] = n + 1
        jobs.append(Job(JobId(owner, 0, n), owner, JobState.RUNNING, 0.0, slot=name, start_time=start,
                        cpus=cpus, memory=memory, gpus=gpus, disk=disk))
    for machine, (cpus, memory, gpus, *disk) in layout.items():
        u = used[machine]
        slots.append(Slot(machine, cpus - u[0], memory - u[1], gpus - u[2],
                          disk[0] - u[3] if disk else None, partitionable=True))
    idle_counts: dict[str, int] = {}
    for owner, sketch in idle:
        n = idle_counts.get(owner, 0)
        idle_counts[owner] = n + 1
        cpus, memory, gpus, disk = shape(sketch)
        jobs.append(Job(JobId(owner, 1, n), owner, JobState.IDLE, 1.0, cpus=cpus, memory=memory,
                        gpus=gpus, disk=disk))
    return Snapshot(now, tuple(slots), tuple(jobs),
                    tuple(Kept(o, p, shape(s)) for o, p, s in kept))


# A two-level owner tree: physics (6, split evenly between cms and atlas) and chem (4).
TWO_LEVELS = """
[policy]
target = "owner"
[owners.physics]
share = 6
[owners.physics.cms]
share = "50%"
[owners.physics.atlas]
share = "50%"
[owners.chem]
share = 4
"""


def policy_from(text: str, path: str = "policy.toml"):
    """The policy settings a policy file's text gives (owner trees included)."""
    import tomllib

    from osep.config.policy import parse_policy
    from osep.config.toml import Table

    top = Table(path, tomllib.loads(text))
    return parse_policy(top.table("policy"), top.table("owners", required=True)).settings


def job_of(spec: Any) -> Job:
    """The :class:`Job` the simulated pool makes of a :class:`osep.sim.specs.JobSpec` when it arrives
    (osep.sim.pool): what a reader's job must be fit to become (a ValueError if it is not)."""
    return Job(spec.id, spec.owner, JobState.IDLE, spec.submit, None, None, None, spec.cpus, spec.memory,
               spec.gpus, spec.disk)

# -- owner trees written as policy text (osep.htcondor.quota_shares) --------------------------------


def nodes(doc: Mapping[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every node of a parsed policy's owner tree: dotted name -> its share."""
    out = {}
    for key, value in doc.items():
        if isinstance(value, Mapping):
            out[".".join((*path, key))] = value.get("share")
            out.update(nodes(value, (*path, key)))
    return out


def check_osep_rules(text: str) -> dict[str, Any]:
    """What osep's policy files ask of an owner tree, checked on ``text``: valid TOML; a unit; each
    node a table with a share; siblings all amounts or all percentages, percentages at most 100% in
    all, amounts within bounds; names 1 to MAX_NAME printable characters, none reserved; at most
    MAX_DEPTH levels and MAX_OWNERS nodes. Returns the parsed document."""
    doc = tomllib.loads(text)
    assert set(doc) == {"policy", "owners"}
    unit = doc["policy"]["unit"]
    assert unit in ("slots", "cpus", "memory", "gpus", "disk")
    count = 0

    def level(table: Mapping[str, Any], depth: int) -> None:
        nonlocal count
        kinds, percent = set(), 0.0
        for name, node in table.items():
            count += 1
            assert isinstance(node, Mapping), name
            assert 1 <= len(name) <= MAX_NAME and name.isprintable() and name not in RESERVED, name
            assert depth <= MAX_DEPTH
            assert set(node) - {"share"} == {k for k, v in node.items() if isinstance(v, Mapping)}
            share = node["share"]
            if isinstance(share, str):
                assert share.endswith("%") and 0 <= float(share[:-1]) <= 100 and len(share) <= 64
                kinds.add("percent")
                percent += float(share[:-1])
            else:
                assert not isinstance(share, bool) and 0 <= share <= share_maximum(unit)
                kinds.add("amount")
            level({k: v for k, v in node.items() if k != "share"}, depth + 1)
        assert len(kinds) <= 1, f"siblings of both kinds: {sorted(table)}"
        assert percent <= 100 + 1e-9

    level(doc["owners"], 1)
    assert count <= MAX_OWNERS
    return doc


def shares_of(result: Translation) -> dict[str, Any]:
    """The shares a translation writes: dotted name -> share."""
    return nodes(tomllib.loads(result.text)["owners"])


def comments(result: Translation, node: str) -> str:
    """The comments written on ``node`` (the lines between its table's header and its share), joined
    into one line of text."""
    lines = result.text.splitlines()
    header = f"[owners.{node}]"
    start = lines.index(header)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("share = "))
    return " ".join(line.lstrip("#").strip() for line in lines[start + 1:end])


def header(result: Translation) -> str:
    """The comments at the top of a translation, before its ``[policy]`` table, as one line."""
    lines = result.text.split("\n[policy]")[0].splitlines()
    return " ".join(line.lstrip("#").strip() for line in lines)


def translated(knobs: Mapping[str, str], pool_size: PoolSize = PoolSize(), **options: Any) -> Translation:
    """The negotiator's ``knobs`` translated, checked against osep's rules, its problems counted in
    the text."""
    result = translate(knobs, pool_size, **options)
    check_osep_rules(result.text)
    assert f"{len(result.problems):,} problem" in result.text or not result.problems
    return result


def places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a parsed document (JSON or TOML): each key's value, each item of a list, as the
    path of keys and indices that leads to it; what the hostile-file tests mutate."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from places(item, (*path, key))
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield (*path, k)
            yield from places(item, (*path, k))


Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


def metric_samples(text: str) -> Samples:
    """A Prometheus scrape's text as a scraper reads it (prometheus_client's own parser): sample
    name -> its label sets (sorted (label, value) pairs) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def scrape(port: int, host: str = "127.0.0.1") -> Samples:
    """osep's metrics endpoint scraped over HTTP, as Prometheus would (no proxy from the environment
    stands between a test and it)."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://{host}:{port}/metrics", timeout=10) as answer:
        assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/plain")
        return metric_samples(answer.read().decode())


def by_owner(samples: Samples, name: str) -> dict[str, float]:
    """A per-owner metric's values, by owner."""
    return {dict(labels)["owner"]: value for labels, value in samples.get(name, {}).items()}


def total(samples: Samples, name: str) -> float:
    """A metric's values added up over its label sets (0 for one with none)."""
    return sum(samples.get(name, {}).values())


def cli_runner() -> CliRunner:
    """click's test runner, with what a command writes to stdout and to stderr kept apart on every
    click osep runs on: ``result.stdout`` is stdout alone, ``result.stderr`` stderr alone.

    click 8.2 and later always keep them apart; click 8.1 (Debian trixie's) mixes stderr into stdout
    unless asked not to (``mix_stderr=False``), and without it has no ``result.stderr`` at all. What
    ``result.output`` holds differs all the same (stdout on 8.1, both streams on 8.2 and later), so
    the tests read ``stdout`` and ``stderr`` by name."""
    if "mix_stderr" in inspect.signature(CliRunner).parameters:
        return CliRunner(mix_stderr=False)
    return CliRunner()


SWF_LINE = "{n} {t} -1 {r} 1 -1 -1 -1 -1 -1 1 {u} {g} -1 1 1 -1 -1\n"
# A policy file for contended_log's groups, 2 cores each.
TUNE_POLICY = """\
[policy]
interval = 60
[owners]
group1 = 2
group2 = 2
"""


def contended_log(path: Path, days: int = 2) -> Path:
    """Each day, group 1 fills the 4 cores with long jobs, and group 2 comes back an hour later."""
    lines, n = ["; MaxProcs: 4\n"], 0
    for day in range(days):
        start = day * 86400
        for k in range(8):
            n += 1
            lines.append(SWF_LINE.format(n=n, t=start + k, r=7200 + 600 * k, u=1, g=1))
        for k in range(4):
            n += 1
            lines.append(SWF_LINE.format(n=n, t=start + 3600 + k, r=1800, u=2, g=2))
    path.write_text("".join(lines))
    return path

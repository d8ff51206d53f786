"""Job ads (one per job, or one per group of idle jobs alike) to the project's types: pure translation,
no pool and no state. HTCondor's job states and attribute names map to :mod:`osep.core.model` through
the tables here; what could not be read as it stands is counted in an :class:`AdTally`, for one log
line per cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import classad2

from osep.core.model import Job, JobId, JobState
from osep.core.resources import Shape
from osep.htcondor.ads import LARGEST, LARGEST_DISK, Ad, BadAd, evaluate, integer, number, show

# JobStatus -> the project's states. Transferring output (6) and suspended (7) still hold their slot,
# but are never victims: the one is about to finish, the other does no work a vacate would free.
JOB_STATES: dict[int, JobState] = {
    1: JobState.IDLE,
    2: JobState.RUNNING,
    3: JobState.REMOVED,
    4: JobState.COMPLETED,
    5: JobState.HELD,
    6: JobState.RUNNING,
    7: JobState.RUNNING,
}
VACATABLE = {2}  # the statuses of jobs a vacate may take the slot from

JOB_ATTRS = [
    "ClusterId", "ProcId", "Owner", "User", "AcctGroup", "AccountingGroup", "JobStatus",
    "JobUniverse", "QDate", "JobCurrentStartDate", "LastCkptTime", "RequestCpus", "RequestMemory",
    "RequestGPUs", "RequestDisk", "RemoteHost", "ServerTime",
    # What the request expressions of a stock submit file refer to (RequestMemory is
    # ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024), RequestDisk
    # is DiskUsage).
    "MemoryUsage", "ImageSize", "ResidentSetSize", "DiskUsage",
]
# Jobs of these universes run on the submit machine (scheduler: DAGMan; local) or at another site
# (grid): they occupy no execute slot, so they are neither demand nor usage.
OFF_SLOT_UNIVERSES = {7: "scheduler", 9: "grid", 12: "local"}
_ON_SLOTS = " && ".join(f"JobUniverse =!= {u}" for u in sorted(OFF_SLOT_UNIVERSES))
# Only jobs that are demand or hold a slot are read: the idle ones as counts (IDLE_CONSTRAINT,
# grouped by the schedd), the others one ad each (HOLDING_CONSTRAINT).
JOB_CONSTRAINT = f"(JobStatus == 1 || JobStatus == 2 || JobStatus == 6 || JobStatus == 7) && {_ON_SLOTS}"
IDLE_CONSTRAINT = f"JobStatus == 1 && {_ON_SLOTS}"
HOLDING_CONSTRAINT = f"(JobStatus == 2 || JobStatus == 6 || JobStatus == 7) && {_ON_SLOTS}"
# What an idle job is read by (to_job reads no more of one): the schedd groups the idle jobs by
# these attributes' values as written, and the attributes their expressions refer to (a stock
# RequestMemory refers to MemoryUsage and ImageSize), and answers one ad per group.
IDLE_ATTRS = [a for a in JOB_ATTRS if a not in (
    "ClusterId", "ProcId", "JobCurrentStartDate", "LastCkptTime", "RemoteHost", "ServerTime")]
# What a group's ad says of the group, beside its attributes.
GROUP_ATTRS = ("Id", "JobIds", "JobCount")

# What an attribute that evaluates to undefined or error (or to something that is not a number in
# range) is taken to be. docs/operating.md's "Reading job and machine ads" lists the same.
DEFAULTS: dict[str, float] = {
    "RequestCpus": 1,  # the negotiator's own default for a job that asks for nothing
    "RequestMemory": 0,  # unknown: the job is taken to fit any slot's memory
    "RequestGPUs": 0,  # a job that asks for no GPUs (undefined is the normal case, not counted)
    "RequestDisk": 0,  # unknown: the job is taken to fit any slot's disk
    "QDate": 0,  # unknown: the oldest
    "LastCkptTime": 0,  # no checkpoint
}
# Attributes whose absence is normal: undefined takes the default without being counted.
QUIET_DEFAULTS = {"LastCkptTime", "RequestGPUs"}
# Shown in the odd_ads examples for what has no number to stand in for it.
DEFAULT_TEXT = {"JobCurrentStartDate": "unknown: never a victim", "LastCkptTime": "no checkpoint"}
# How far a time in an ad may lie ahead of the schedd's clock (ServerTime) before it is taken as
# wrong: a start or checkpoint in the future would make a job look like the cheapest victim.
SKEW = 300.0
# Times: none may lie more than SKEW ahead of the schedd's clock.
TIMES = {"QDate", "JobCurrentStartDate", "LastCkptTime"}
# Attributes read with a larger bound than LARGEST.
BOUNDS = {"RequestDisk": LARGEST_DISK, "Disk": LARGEST_DISK}


@dataclass(frozen=True, slots=True)
class JobAd:
    """A job, and the accounting name (submitter) the negotiator charges it to."""

    job: Job
    submitter: str


@dataclass(slots=True)
class AdTally:
    """What reading one snapshot's ads ran into: one log line per cycle, with counts and a few
    examples, whatever the number of ads."""

    examples_kept: int = 3
    defaulted: dict[str, int] = field(default_factory=dict)  # attribute -> ads it was defaulted in
    rejected: int = 0
    off_slots: int = 0  # jobs of universes that occupy no execute slot
    examples: list[str] = field(default_factory=list)

    def default(self, attr: str, where: str, value: Any) -> None:
        self.defaulted[attr] = self.defaulted.get(attr, 0) + 1
        taken = DEFAULT_TEXT.get(attr) or f"{DEFAULTS[attr]:g}"
        self._example(f"{where}: {attr} is {show(value)}, taken as {taken}")

    def reject(self, problem: str, jobs: int = 1) -> None:
        self.rejected += jobs
        self._example(problem)

    def add(self, other: AdTally, jobs: int) -> None:
        """What ``other`` counted reading one ad, for each of ``jobs`` jobs that ad stands for."""
        for attr, count in other.defaulted.items():
            self.defaulted[attr] = self.defaulted.get(attr, 0) + count * jobs
        self.rejected += other.rejected * jobs
        self.off_slots += other.off_slots * jobs
        for text in other.examples:
            self._example(text)

    def _example(self, text: str) -> None:
        if len(self.examples) < self.examples_kept:
            self.examples.append(text)

    def __bool__(self) -> bool:
        return bool(self.defaulted or self.rejected)


def owner_of(ad: Ad, group_alone: bool = False) -> str:
    """The owner a job counts for: the accounting identity the negotiator charges it to. That is its
    ``AccountingGroup`` where it has one: the group (``AcctGroup``) where the two agree
    (``group_physics.alice`` in ``group_physics``), else the accounting name as it stands, whoever
    submitted the job (a job that names ``carol`` is charged to carol, and counts for her). Without
    one, its ``Owner``: an ``AcctGroup`` alone changes nothing the negotiator charges, except with
    ``group_alone``, for event logs that record ``AcctGroup`` but not ``AccountingGroup``. KeyError
    if there is no owner at all."""
    accounting = evaluate(ad, "AccountingGroup")
    if isinstance(accounting, str) and accounting:
        group = evaluate(ad, "AcctGroup")
        if isinstance(group, str) and group and (accounting == group
                                                 or accounting.startswith(group + ".")):
            return group
        return accounting
    if group_alone:
        group = evaluate(ad, "AcctGroup")
        if isinstance(group, str) and group:
            return group
    return _owner(ad)


def account_of(ad: Ad) -> str:
    """The whole accounting name a job is charged to (``group_physics.cms.alice``): its
    ``AccountingGroup``, else its ``Owner``; what an owner tree places it by. KeyError if neither."""
    accounting = evaluate(ad, "AccountingGroup")
    if isinstance(accounting, str) and accounting:
        return accounting
    return _owner(ad)


def _owner(ad: Ad) -> str:
    owner = evaluate(ad, "Owner")
    if not isinstance(owner, str) or not owner:
        raise KeyError("Owner")
    return owner


def to_job(schedd: str, ad: Ad, tally: AdTally | None = None, pool: str = "",
           naming: Callable[[str], str] | None = None) -> JobAd | None:
    """One job ad; None for a job that occupies no execute slot (``OFF_SLOT_UNIVERSES``). A
    request that evaluates to undefined or error gets its default (``DEFAULTS``), counted in
    ``tally``, and so does a time more than ``SKEW`` after the ad's own ``ServerTime`` (the
    clock of the schedd that wrote it); an ad that cannot name or place the job raises
    :class:`BadAd`. ``naming``: the owner tree's placing of accounting names (else the owner is
    :func:`owner_of`)."""
    tally = tally if tally is not None else AdTally()

    def required(attr: str) -> float:
        value = number(evaluate(ad, attr))
        if value is None:
            raise BadAd(f"{attr} is {show(evaluate(ad, attr))}")
        return value

    now = number(evaluate(ad, "ServerTime"))
    latest = LARGEST if now is None else now + SKEW

    def optional(attr: str) -> float:
        raw = evaluate(ad, attr)
        value = number(raw, BOUNDS.get(attr, LARGEST))
        if value is not None and attr in TIMES and value > latest:
            value = None  # in the future: wrong, and a job must not gain by it
        if value is None:
            if raw is not classad2.Value.Undefined or attr not in QUIET_DEFAULTS:
                tally.default(attr, where(), raw)
            return DEFAULTS[attr]
        return value

    def where() -> str:  # the job, for a line about it (most ads need none)
        return f"{schedd}#{show(evaluate(ad, 'ClusterId'))}.{show(evaluate(ad, 'ProcId'))}"

    try:
        job_id = JobId(schedd, int(required("ClusterId")), int(required("ProcId")), pool)
        universe = number(evaluate(ad, "JobUniverse"))
        if universe is not None and int(universe) in OFF_SLOT_UNIVERSES:
            tally.off_slots += 1
            return None
        status = int(required("JobStatus"))
        if status not in JOB_STATES:
            raise BadAd(f"JobStatus is {status}")
        state = JOB_STATES[status]
        user = evaluate(ad, "User")
        if not isinstance(user, str) or not user:
            raise BadAd(f"User is {show(user)}")
        domain = user.rsplit("@", 1)[1] if "@" in user else ""
        owner = owner_of(ad) if naming is None else naming(account_of(ad))
        accounting = evaluate(ad, "AccountingGroup")
        submitter = f"{accounting}@{domain}" if isinstance(accounting, str) and accounting else user
        cpus = max(1, int(optional("RequestCpus")))
        memory = int(optional("RequestMemory"))
        gpus = int(optional("RequestGPUs"))
        disk = int(optional("RequestDisk"))
        submit = optional("QDate")
        slot = start = ckpt = None
        if state is JobState.RUNNING:
            host = evaluate(ad, "RemoteHost")
            if not isinstance(host, str) or not host:
                raise BadAd(f"RemoteHost is {show(host)}")
            slot = host
            # Unknown start: the job still holds its slot and counts, but what a vacate would
            # cost it is unknown, so it is never a victim (see osep.core.victims).
            raw_start = evaluate(ad, "JobCurrentStartDate")
            start = number(raw_start)
            if start is not None and start > latest:
                start = None
            if start is None:
                tally.default("JobCurrentStartDate", where(), raw_start)
            last = optional("LastCkptTime")
            ckpt = last if last > 0 else None
    except KeyError as exc:
        raise BadAd(f"{where()}: {exc.args[0] if exc.args else exc} is missing") from None
    except BadAd as exc:
        raise BadAd(f"{where()}: {exc}") from None
    job = Job(job_id, owner, state, submit, slot=slot, start_time=start, checkpoint_time=ckpt,
              cpus=cpus, memory=memory, gpus=gpus, disk=disk, vacatable=status in VACATABLE)
    return JobAd(job, submitter)


@dataclass(frozen=True, slots=True)
class IdleGroup:
    """Idle jobs of one owner that ask for the same: ``count`` of them, charged to ``submitter``,
    ``first`` the first of them in queue order (the smallest id)."""

    owner: str
    submitter: str
    shape: Shape
    count: int
    first: JobId


def to_idle(schedd: str, ad: Ad, tally: AdTally, server_time: float | None = None, pool: str = "",
            naming: Callable[[str], str] | None = None) -> IdleGroup | None:
    """One ad of a grouped query of idle jobs (``QueryOpt.GroupBy``, projection ``IDLE_ATTRS``):
    ``JobCount`` idle jobs written alike, the first of them in queue order first in ``JobIds``. Read
    as :func:`to_job` reads each of them (``JOB_ATTRS`` only, ``server_time`` standing for the
    ``ServerTime`` a group's ad lacks), what it counts in ``tally`` counted once per job. None for
    jobs that occupy no execute slot, and for a group that cannot be read (its jobs counted
    rejected in ``tally``)."""
    count = integer(evaluate(ad, "JobCount"))
    if count is None or not 1 <= count <= LARGEST:
        tally.reject(f"{schedd}: a group of idle jobs with JobCount {show(evaluate(ad, 'JobCount'))}")
        return None
    ids = evaluate(ad, "JobIds")
    first = _first_id(ids)
    if first is None:
        tally.reject(f"{schedd}: a group of {count} idle jobs with JobIds {show(ids)}", count)
        return None
    job_ad: Any = classad2.ClassAd() if isinstance(ad, classad2.ClassAd) else {}
    for attr in JOB_ATTRS:
        if attr in ad:
            job_ad[attr] = ad.lookup(attr) if isinstance(ad, classad2.ClassAd) else ad[attr]
    job_ad["ClusterId"], job_ad["ProcId"] = first
    if server_time is not None:
        job_ad["ServerTime"] = int(server_time)
    mine = AdTally(examples_kept=tally.examples_kept)
    try:
        entry = to_job(schedd, job_ad, mine, pool, naming)
    except BadAd as exc:
        mine.reject(f"{exc} (and {count - 1} more alike)" if count > 1 else str(exc))
        entry = None
    tally.add(mine, count)
    if entry is None:
        return None
    job = entry.job
    if job.state is not JobState.IDLE:  # the schedd's answer is data too
        tally.reject(f"{job.id}: a group of {count} idle jobs with JobStatus "
                     f"{show(evaluate(ad, 'JobStatus'))}", count)
        return None
    return IdleGroup(job.owner, entry.submitter, job.shape, count, job.id)


def _first_id(ids: Any) -> tuple[int, int] | None:
    """The first job a group's ``JobIds`` names (``cluster.proc``), or None."""
    if not isinstance(ids, str):
        return None
    cluster, dot, proc = ids.split(" ", 1)[0].partition(".")
    if not dot or not (cluster.isascii() and cluster.isdigit() and proc.isascii() and proc.isdigit()) \
            or len(cluster) > 10 or len(proc) > 10:
        return None
    numbers = int(cluster), int(proc)
    return numbers if max(numbers) <= LARGEST else None


@dataclass(slots=True)
class Accounts:
    """What one snapshot's jobs add up to per owner and per submitter: what the reservation book and
    the ceilings are kept by."""

    running: dict[str, int] = field(default_factory=dict)  # owner -> running jobs
    idle: dict[str, int] = field(default_factory=dict)  # owner -> idle jobs
    submitters: dict[str, set[str]] = field(default_factory=dict)  # owner -> accounting names
    charged: dict[str, set[str]] = field(default_factory=dict)  # accounting name -> owners
    # submitter -> what it holds, not vacating, in the negotiator's SlotWeight (cores by default)
    busy: dict[str, float] = field(default_factory=dict)
    # running job -> (owner, submitter, weight, start of its current run)
    placed: dict[JobId, tuple[str, str, float, float | None]] = field(default_factory=dict)
    # slot name -> its SlotWeight, as the slot ads give it (a job on a slot not named: its cores)
    weights: Mapping[str, float] = field(default_factory=dict)

    def add(self, entry: JobAd) -> None:
        job, submitter = entry.job, entry.submitter
        self.submitters.setdefault(job.owner, set()).add(submitter)
        self.charged.setdefault(submitter, set()).add(job.owner)
        if job.state is JobState.RUNNING:
            self.running[job.owner] = self.running.get(job.owner, 0) + 1
            weight = self.weights.get(job.slot or "", float(job.cpus))
            self.busy[submitter] = self.busy.get(submitter, 0.0) + weight
            self.placed[job.id] = (job.owner, submitter, weight, job.start_time)
        elif job.state is JobState.IDLE:
            self.idle[job.owner] = self.idle.get(job.owner, 0) + 1

    def add_idle(self, group: IdleGroup) -> None:
        """A group of idle jobs (read from a grouped query)."""
        self.submitters.setdefault(group.owner, set()).add(group.submitter)
        self.charged.setdefault(group.submitter, set()).add(group.owner)
        self.idle[group.owner] = self.idle.get(group.owner, 0) + group.count

    def after(self, leaving: Iterable[JobId]) -> Accounts:
        """These accounts as they will be once the running jobs ``leaving`` have left (a copy)."""
        busy = dict(self.busy)
        for job_id in leaving:
            placed = self.placed.get(job_id)
            if placed is not None:
                busy[placed[1]] = busy.get(placed[1], 0.0) - placed[2]
        return replace(self, busy=busy)

    def vacated(self, job_id: JobId) -> float | None:
        """The job was vacated: it no longer counts as running for its owner, nor as busy cores.
        Returns the start of the run it left (None if it was not seen running)."""
        placed = self.placed.pop(job_id, None)
        if placed is None:
            return None
        owner, submitter, cores, start = placed
        self.busy[submitter] = self.busy.get(submitter, 0.0) - cores
        self.running[owner] = self.running.get(owner, 1) - 1
        return start

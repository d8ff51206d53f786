"""ClassAds to the project's types: pure translation, no pool and no state.

HTCondor's states and attribute names map to :mod:`osep.core.model` through the tables here. A bad ad
raises :class:`BadAd` naming the problem; the caller decides whether to log and skip it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import classad2

from osep.core.model import Job, JobId, JobState, Slot
from osep.errors import PoolError

# JobStatus -> the project's states. Transferring output (6) and suspended (7) still hold their slot.
JOB_STATES: dict[int, JobState] = {
    1: JobState.IDLE,
    2: JobState.RUNNING,
    3: JobState.REMOVED,
    4: JobState.COMPLETED,
    5: JobState.HELD,
    6: JobState.RUNNING,
    7: JobState.RUNNING,
}

JOB_ATTRS = [
    "ClusterId", "ProcId", "Owner", "User", "AcctGroup", "AccountingGroup", "JobStatus",
    "QDate", "JobCurrentStartDate", "LastCkptTime", "RequestCpus", "RequestMemory",
    "RemoteHost", "ServerTime",
]
SLOT_ATTRS = ["Name", "Cpus", "Memory", "SlotType", "State"]
# Slots in these states cannot run a job for anyone, so they are not capacity.
UNAVAILABLE = {"Owner", "Drained", "Delete"}
# Only jobs that are demand or hold a slot are read.
JOB_CONSTRAINT = "JobStatus == 1 || JobStatus == 2 || JobStatus == 6 || JobStatus == 7"

Ad = Mapping[str, Any]  # a classad2.ClassAd, or anything that reads like one


class BadAd(ValueError):
    """An ad that cannot be translated; the message says why."""


@dataclass(frozen=True, slots=True)
class JobAd:
    """A job, and the accounting name (submitter) the negotiator charges it to."""

    job: Job
    submitter: str


def owner_of(ad: Ad) -> str:
    """The owner a job counts for: its accounting group if it has one, else its Owner (KeyError if
    neither is there)."""
    group = ad.get("AcctGroup")
    return str(group) if isinstance(group, str) and group else str(ad["Owner"])


def to_job(schedd: str, ad: Ad, pool: str = "") -> JobAd:
    try:
        job_id = JobId(schedd, int(ad["ClusterId"]), int(ad["ProcId"]), pool)
        state = JOB_STATES[int(ad["JobStatus"])]
        user = str(ad["User"])
        domain = user.rsplit("@", 1)[1] if "@" in user else ""
        owner = owner_of(ad)
        accounting = ad.get("AccountingGroup")
        submitter = f"{accounting}@{domain}" if isinstance(accounting, str) and accounting else user
        cpus = int(ad.get("RequestCpus", 1) or 1)
        memory = int(ad.get("RequestMemory", 0) or 0)
        submit = float(ad.get("QDate", 0) or 0)
        slot = start = ckpt = None
        if state is JobState.RUNNING:
            slot = str(ad["RemoteHost"])
            start = float(ad["JobCurrentStartDate"])
            last = ad.get("LastCkptTime")
            ckpt = float(last) if isinstance(last, (int, float)) and last > 0 else None
    except (KeyError, ValueError, TypeError, classad2.ClassAdException) as exc:
        raise BadAd(str(exc)) from None
    job = Job(job_id, owner, state, submit, slot=slot, start_time=start, checkpoint_time=ckpt,
              cpus=cpus, memory=memory)
    return JobAd(job, submitter)


def to_slots(ads: Iterable[Ad]) -> Iterator[Slot | BadAd]:
    """The slots the ads describe, in their order, with a :class:`BadAd` in place of each ad that
    cannot be read. Slots that cannot run a job for anyone (``UNAVAILABLE``) are left out."""
    for ad in ads:
        try:
            name = str(ad["Name"])
            state = str(ad.get("State", ""))
            cpus = int(ad["Cpus"])
            memory = int(ad["Memory"]) if "Memory" in ad else None
            kind = str(ad.get("SlotType", "Static"))
        except (KeyError, ValueError, TypeError, classad2.ClassAdException) as exc:
            yield BadAd(f"{ad_id(ad)}: {exc}")
            continue
        if state in UNAVAILABLE:
            continue
        if kind == "Partitionable":
            # Unclaimed cores of a partitionable slot: one single-core place each, sharing its
            # remaining memory, so that capacity counts what jobs could still start here.
            share = memory // cpus if memory is not None and cpus > 0 else None
            for k in range(cpus):
                yield Slot(f"{name}#{k}", 1, share)
        else:
            yield Slot(name, max(cpus, 1), memory)


def check_complete(slot_ads: Iterable[Ad], jobs: Iterable[Job], schedds: int) -> None:
    """Refuse a view that misses a schedd: slots claimed by jobs nobody can see would look free to
    the policy. A few claims may lead the job queues by an update interval; many may not."""
    ads = list(slot_ads)
    claimed = sum(1 for ad in ads if ad.get("State") == "Claimed")
    visible = sum(1 for j in jobs if j.state in (JobState.RUNNING, JobState.VACATING))
    tolerance = max(2, len(ads) // 20)
    if claimed - visible > tolerance:
        raise PoolError(
            f"incomplete view of the pool: {claimed} claimed slots but {visible} running jobs "
            f"in {schedds} schedd(s); a schedd is down or unreachable"
        )


@dataclass(slots=True)
class Accounts:
    """What one snapshot's jobs add up to per owner and per submitter: what the reservation book and
    the ceilings are kept by."""

    running: dict[str, int] = field(default_factory=dict)  # owner -> running jobs
    idle: dict[str, int] = field(default_factory=dict)  # owner -> idle jobs
    submitters: dict[str, set[str]] = field(default_factory=dict)  # owner -> accounting names
    busy: dict[str, float] = field(default_factory=dict)  # submitter -> cores held, not vacating
    # running job -> (owner, submitter, cores, start of its current run)
    placed: dict[JobId, tuple[str, str, float, float | None]] = field(default_factory=dict)

    def add(self, entry: JobAd) -> None:
        job, submitter = entry.job, entry.submitter
        self.submitters.setdefault(job.owner, set()).add(submitter)
        if job.state is JobState.RUNNING:
            self.running[job.owner] = self.running.get(job.owner, 0) + 1
            self.busy[submitter] = self.busy.get(submitter, 0.0) + job.cpus
            self.placed[job.id] = (job.owner, submitter, float(job.cpus), job.start_time)
        elif job.state is JobState.IDLE:
            self.idle[job.owner] = self.idle.get(job.owner, 0) + 1

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


def ad_id(ad: Ad) -> str:
    try:
        if "Name" in ad:
            return str(ad["Name"])
        return f"{ad.get('ClusterId', '?')}.{ad.get('ProcId', '?')}"
    except Exception:  # noqa: BLE001 - only for a log line about an ad that is already bad
        return "?"

"""The live HTCondor pool, and HTCondor's job event logs: the only module that imports the bindings.

It reads a snapshot from the collector (slot ads) and every schedd (job ads), acts on it (vacate), keeps
freed slots for the owners they were taken for, and publishes the daemon's own ad; for replay it reads
job event logs (:func:`read_event_log`). HTCondor's states, event types and attribute names are mapped to
the project's own types by the tables below; everything else in osep sees only :mod:`osep.model` and
:mod:`osep.events`.

Keeping a freed slot for its beneficiary: a vacate releases the claim and the slot goes back to
negotiation with no reservation, so an over-share owner with a better user priority would simply get it
back (and the loop would vacate again: thrashing). The plan's holds (:attr:`osep.model.Plan.holds`)
prevent that: every submitter of a held owner gets a negotiator ceiling equal to what it runs right
after the cycle's vacates (in SlotWeight, cores by default), plus the plan's allowance for it (the free
slots the owners below their share cannot use). It keeps every job it has and is matched no more than
that, so slots freed by vacates or by jobs ending go to the owners below their share.
Each cycle sets the holds anew; when nobody below target waits the plan holds nobody and every ceiling
goes back to what it was before osep touched it. Ceilings are also lifted when the daemon stops, and a
daemon that died without lifting them finds them in its state file at the next start.

Reservations (:meth:`LivePool.reserve`) only mark, in the following snapshots, the slots that are on
their way to an owner, so that the policy counts them as that owner's and does not vacate twice for
the same deficit.

Network and daemon errors are retried with backoff here (tenacity), and nowhere else; what still fails
becomes a :class:`osep.errors.PoolError` for the caller to log and survive.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import socket
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import classad2
import htcondor2 as htcondor
import structlog
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from osep.errors import LogError, PoolError
from osep.events import EventKind, LogEvent
from osep.model import Job, JobState, Slot, Snapshot

T = TypeVar("T")

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

NO_CEILING = -1
VACATE_TIMEOUT = 600.0  # after this a vacate that never took effect is forgotten (and logged)


@dataclass(frozen=True, slots=True)
class LiveSettings:
    pool: str | None = None  # collector HOST[:PORT]; None: the configured COLLECTOR_HOST
    vacate_fast: bool = False
    reservation_timeout: float = 600.0
    retries: int = 3
    retry_wait: float = 1.0
    state_file: Path | None = None
    name: str = field(default_factory=lambda: f"osep@{socket.getfqdn()}")


def knobs(names: Iterable[str]) -> dict[str, str]:
    """The values of HTCondor configuration knobs that are set (re-read after a reload)."""
    return {n: str(htcondor.param[n]) for n in names if n in htcondor.param}


def reload_config() -> None:
    htcondor.reload_config()


@dataclass(slots=True)
class _Reservation:
    owner: str
    slot: str
    expires: float
    # Fulfilled once the owner runs at least this many jobs.
    until_running: int


@dataclass(slots=True)
class _Seen:
    """What the last snapshot said, for the reservation and ceiling book-keeping."""

    running: dict[str, int] = field(default_factory=dict)  # owner -> running jobs
    idle: dict[str, int] = field(default_factory=dict)  # owner -> idle jobs
    submitters: dict[str, set[str]] = field(default_factory=dict)  # owner -> accounting names
    busy: dict[str, float] = field(default_factory=dict)  # submitter -> cores held, not vacating
    # running job -> (owner, submitter, cores, start of its current run)
    placed: dict[str, tuple[str, str, float, float | None]] = field(default_factory=dict)


class LivePool:
    """A :class:`osep.pool.Pool` backed by a real HTCondor pool."""

    def __init__(self, settings: LiveSettings = LiveSettings(), logger: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.log = logger if logger is not None else structlog.get_logger("osep")
        self.clock = clock
        self._vacating: dict[str, tuple[float | None, float]] = {}  # job -> (start, sent at)
        self._reservations: list[_Reservation] = []
        self._ceilings: dict[str, int] = {}  # submitter -> ceiling osep set (and has not lifted)
        self._original: dict[str, int] = {}  # submitter -> ceiling before osep
        self._seen = _Seen()
        self._cycle_reserved: dict[str, int] = defaultdict(int)
        self._holding: dict[str, int] = {}  # owner -> new slots (cores) it may still be given
        self._restore_state()

    # -- retries --------------------------------------------------------------------------------

    def _call(self, what: str, func: Callable[[], T]) -> T:
        retrying = Retrying(
            stop=stop_after_attempt(max(1, self.settings.retries)),
            wait=wait_exponential(multiplier=self.settings.retry_wait, max=30),
            retry=retry_if_exception_type((htcondor.HTCondorException, OSError)),
            reraise=False,
        )
        try:
            return retrying(func)
        except RetryError as exc:
            cause = exc.last_attempt.exception()
            raise PoolError(f"{what}: {cause}") from cause
        except (htcondor.HTCondorException, OSError, ValueError) as exc:
            raise PoolError(f"{what}: {exc}") from exc

    def _collector(self) -> Any:
        return htcondor.Collector(self.settings.pool) if self.settings.pool else htcondor.Collector()

    # -- reading the pool -----------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        collector = self._collector()
        schedds = self._call("locating schedds",
                             lambda: collector.locateAll(htcondor.DaemonType.Schedd))
        slot_ads = self._call(
            "querying slots",
            lambda: collector.query(htcondor.AdTypes.Startd, projection=SLOT_ATTRS),
        )
        job_ads: list[tuple[str, Any]] = []
        for schedd_ad in schedds:
            name = str(schedd_ad.get("Name", "schedd"))
            schedd = htcondor.Schedd(schedd_ad)
            ads = self._call(
                f"querying schedd {name}",
                lambda s=schedd: s.query(constraint=JOB_CONSTRAINT, projection=JOB_ATTRS),
            )
            job_ads.extend((name, ad) for ad in ads)
        now = self.clock()
        for _, ad in job_ads:
            server_time = ad.get("ServerTime")
            if isinstance(server_time, int):
                now = float(server_time)
                break
        jobs = []
        seen = _Seen()
        for schedd_name, ad in job_ads:
            job = self._to_job(schedd_name, ad, seen)
            if job is not None:
                jobs.append(job)
        slots = self._to_slots(slot_ads)
        self._check_complete(slot_ads, jobs, len(schedds))
        self._forget_finished_vacates(jobs, now)
        self._seen = seen
        self._cycle_reserved.clear()
        self._expire_reservations(now)
        slots = self._mark_reservations(slots, jobs)
        return Snapshot(time=now, slots=tuple(slots), jobs=tuple(jobs))

    def _check_complete(self, slot_ads: list[Any], jobs: list[Job], schedds: int) -> None:
        """Refuse a view that misses a schedd: slots claimed by jobs nobody can see would look free
        to the policy. A few claims may lead the job queues by an update interval; many may not."""
        claimed = sum(1 for ad in slot_ads if ad.get("State") == "Claimed")
        visible = sum(1 for j in jobs if j.state in (JobState.RUNNING, JobState.VACATING))
        tolerance = max(2, len(slot_ads) // 20)
        if claimed - visible > tolerance:
            raise PoolError(
                f"incomplete view of the pool: {claimed} claimed slots but {visible} running jobs "
                f"in {schedds} schedd(s); a schedd is down or unreachable"
            )

    def _to_job(self, schedd: str, ad: Any, seen: _Seen) -> Job | None:
        """One job ad to a Job; a bad ad is logged and skipped, never fatal."""
        try:
            cluster, proc = int(ad["ClusterId"]), int(ad["ProcId"])
            job_id = f"{schedd}#{cluster}.{proc}"
            status = int(ad["JobStatus"])
            state = JOB_STATES[status]
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
            self.log.warning("bad_job_ad", schedd=schedd, job=_ad_id(ad), problem=str(exc))
            return None
        seen.submitters.setdefault(owner, set()).add(submitter)
        if state is JobState.RUNNING:
            sent = self._vacating.get(job_id)
            if sent is not None and sent[0] == start:
                state = JobState.VACATING
            else:
                seen.running[owner] = seen.running.get(owner, 0) + 1
                seen.busy[submitter] = seen.busy.get(submitter, 0.0) + cpus
                seen.placed[job_id] = (owner, submitter, float(cpus), start)
        elif state is JobState.IDLE:
            seen.idle[owner] = seen.idle.get(owner, 0) + 1
        return Job(job_id, owner, state, submit, slot=slot, start_time=start,
                   checkpoint_time=ckpt, cpus=cpus, memory=memory)

    def _to_slots(self, ads: Iterable[Any]) -> list[Slot]:
        slots: list[Slot] = []
        for ad in ads:
            try:
                name = str(ad["Name"])
                state = str(ad.get("State", ""))
                cpus = int(ad["Cpus"])
                memory = int(ad["Memory"]) if "Memory" in ad else None
                kind = str(ad.get("SlotType", "Static"))
            except (KeyError, ValueError, TypeError, classad2.ClassAdException) as exc:
                self.log.warning("bad_slot_ad", slot=_ad_id(ad), problem=str(exc))
                continue
            if state in UNAVAILABLE:
                continue
            if kind == "Partitionable":
                # Unclaimed cores of a partitionable slot: one single-core place each, sharing its
                # remaining memory, so that capacity counts what jobs could still start here.
                share = memory // cpus if memory is not None and cpus > 0 else None
                slots.extend(Slot(f"{name}#{k}", 1, share) for k in range(cpus))
            else:
                slots.append(Slot(name, max(cpus, 1), memory))
        return slots

    def job(self, job_id: str) -> Job | None:
        schedd_name, cluster, proc = _split_id(job_id)
        collector = self._collector()
        ad = self._call(f"locating schedd {schedd_name}",
                        lambda: collector.locate(htcondor.DaemonType.Schedd, schedd_name))
        schedd = htcondor.Schedd(ad)
        ads = self._call(
            f"querying job {job_id}",
            lambda: schedd.query(constraint=f"ClusterId == {cluster} && ProcId == {proc}",
                                 projection=JOB_ATTRS),
        )
        if not ads:
            return None
        return self._to_job(schedd_name, ads[0], _Seen())

    # -- acting ---------------------------------------------------------------------------------

    def vacate(self, job_id: str) -> None:
        schedd_name, cluster, proc = _split_id(job_id)
        collector = self._collector()
        ad = self._call(f"locating schedd {schedd_name}",
                        lambda: collector.locate(htcondor.DaemonType.Schedd, schedd_name))
        schedd = htcondor.Schedd(ad)
        action = htcondor.JobAction.VacateFast if self.settings.vacate_fast else htcondor.JobAction.Vacate
        result = self._call(f"vacating {job_id}",
                            lambda: schedd.act(action, [f"{cluster}.{proc}"]))
        if int(result.get("TotalSuccess", 0)) != 1:
            raise PoolError(f"schedd {schedd_name} did not vacate {job_id}: {dict(result)}")
        # The job no longer counts for its owner: it will not be capped for it, nor counted running.
        owner, submitter, cores, start = self._seen.placed.pop(job_id, ("", "", 0.0, None))
        self._vacating[job_id] = (start, self.clock())
        if owner:
            self._seen.busy[submitter] = self._seen.busy.get(submitter, 0.0) - cores
            self._seen.running[owner] = self._seen.running.get(owner, 1) - 1


    def reserve(self, slot: str, owner: str) -> None:
        self._cycle_reserved[owner] += 1
        self._reservations.append(
            _Reservation(
                owner=owner,
                slot=slot,
                expires=self.clock() + self.settings.reservation_timeout,
                until_running=self._seen.running.get(owner, 0) + self._cycle_reserved[owner],
            )
        )

    def hold(self, holds: Mapping[str, int]) -> None:
        self._holding = dict(holds)
        self._sync_ceilings()

    @property
    def ceilings(self) -> dict[str, int]:
        """The ceilings osep has set and not lifted (submitter -> value)."""
        return dict(self._ceilings)

    def release(self, quick: bool = False) -> None:
        """Lift every ceiling osep set and forget all reservations (the loop is stopping).
        ``quick``: one attempt per call and no retries, for a stop that must not wait."""
        if quick:
            self.settings = replace(self.settings, retries=1)
        self._reservations.clear()
        self._holding = {}
        self._sync_ceilings()

    # -- reservations and ceilings -------------------------------------------------------------

    def _forget_finished_vacates(self, jobs: list[Job], now: float) -> None:
        still = {j.id for j in jobs if j.state is JobState.VACATING}
        for job_id, (_, sent) in list(self._vacating.items()):
            if job_id not in still:
                del self._vacating[job_id]
            elif now - sent > VACATE_TIMEOUT:
                self.log.warning("vacate_not_done", job=job_id, seconds=now - sent)
                del self._vacating[job_id]

    def _expire_reservations(self, now: float) -> None:
        # A reservation ends when it times out, when its owner's running count has grown past it
        # (so the oldest ones end first), or when its owner has no idle job left to put there.
        kept: list[_Reservation] = []
        for res in self._reservations:
            if res.expires < now:
                self.log.info("reservation_expired", owner=res.owner, slot=res.slot)
                continue
            fulfilled = self._seen.running.get(res.owner, 0) >= res.until_running
            if not fulfilled and self._seen.idle.get(res.owner, 0) > 0:
                kept.append(res)
        self._reservations = kept

    def _mark_reservations(self, slots: list[Slot], jobs: list[Job]) -> list[Slot]:
        """Show pending reservations on the snapshot's slots, so the policy counts them."""
        if not self._reservations:
            return slots
        occupied = {j.slot for j in jobs if j.state is JobState.RUNNING}
        by_name = {s.name: k for k, s in enumerate(slots)}
        marked: dict[int, str] = {}
        pending = []
        for res in self._reservations:
            k = by_name.get(res.slot)
            if k is not None and k not in marked and slots[k].name not in occupied:
                marked[k] = res.owner
            else:
                pending.append(res)
        free = [k for k, s in enumerate(slots) if s.name not in occupied and k not in marked]
        for res, k in zip(pending, free):
            marked[k] = res.owner
        out = list(slots)
        for k, owner in marked.items():
            s = out[k]
            out[k] = Slot(s.name, s.cpus, s.memory, reserved_for=owner)
        return out

    def _desired_ceilings(self) -> dict[str, int]:
        out = {}
        for owner, allowance in self._holding.items():
            submitters = sorted(self._seen.submitters.get(owner, ()))
            for k, submitter in enumerate(submitters):
                # The owner's allowance, split over its submitters (the first take the remainder).
                extra = allowance // len(submitters) + (1 if k < allowance % len(submitters) else 0)
                cap = max(0, int(self._seen.busy.get(submitter, 0.0))) + extra
                before = self._original.get(submitter, NO_CEILING)
                # An administrator's own, lower ceiling is never raised.
                out[submitter] = cap if before < 0 else min(cap, before)
        return out

    def _sync_ceilings(self) -> None:
        want = self._desired_ceilings()
        if want == self._ceilings:
            return
        negotiator = self._negotiator()
        if any(s not in self._ceilings and s not in self._original for s in want):
            current = self._current_ceilings(negotiator)
            for s in want:
                if s not in self._ceilings and s not in self._original:
                    self._original[s] = current.get(s, NO_CEILING)
        for submitter, value in want.items():
            if self._ceilings.get(submitter) != value:
                self._set_ceiling(negotiator, submitter, value)
                self._ceilings[submitter] = value
                self.log.info("ceiling", submitter=submitter, ceiling=value)
        for submitter in [s for s in self._ceilings if s not in want]:
            value = self._original.pop(submitter, NO_CEILING)
            self._set_ceiling(negotiator, submitter, value)
            del self._ceilings[submitter]
            self.log.info("ceiling_lifted", submitter=submitter, ceiling=value)
        self._save_state()

    def _negotiator(self) -> Any:
        collector = self._collector()
        ad = self._call("locating the negotiator",
                        lambda: collector.locate(htcondor.DaemonType.Negotiator))
        return htcondor.Negotiator(ad)

    def _current_ceilings(self, negotiator: Any) -> dict[str, int]:
        ads = self._call("reading submitter ceilings", negotiator.getPriorities)
        out = {}
        for ad in ads:
            name, ceiling = ad.get("Name"), ad.get("Ceiling")
            if isinstance(name, str) and isinstance(ceiling, int):
                out[name] = ceiling
        return out

    def _set_ceiling(self, negotiator: Any, submitter: str, value: int) -> None:
        if value >= 0:
            self._call(f"setting the ceiling of {submitter}",
                       lambda: negotiator.setCeiling(submitter, value))
            return
        # "No ceiling" is -1 on the wire, which Negotiator.setCeiling refuses to send (it checks
        # for > -1); the negotiator itself accepts it, so send the command the method would send.
        from htcondor2 import _negotiator as wire

        self._call(
            f"lifting the ceiling of {submitter}",
            lambda: wire._negotiator_command_user_value(
                negotiator._addr, negotiator._SET_CEILING, submitter, NO_CEILING),
        )

    def _save_state(self) -> None:
        path = self.settings.state_file
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"ceilings": self._ceilings, "original": self._original}))
            os.replace(tmp, path)
        except OSError as exc:
            self.log.error("state_not_saved", path=str(path), problem=str(exc))

    def _restore_state(self) -> None:
        """Take over the ceilings an earlier run left in place: a ``--once`` run keeps its holds for
        the next one, and a run that died could not lift them. The first hold of this run sets them
        to what the pool needs now (lifting those no longer needed); :meth:`release` lifts them all."""
        path = self.settings.state_file
        if path is None or not path.exists():
            return
        try:
            data = json.loads(path.read_text())
            ceilings = {str(k): int(v) for k, v in data.get("ceilings", {}).items()}
            original = {str(k): int(v) for k, v in data.get("original", {}).items()}
        except (OSError, ValueError, AttributeError) as exc:
            self.log.error("state_unreadable", path=str(path), problem=str(exc))
            return
        if ceilings:
            self._ceilings, self._original = ceilings, original
            self.log.info("ceilings_taken_over", submitters=sorted(ceilings), path=str(path))

    # -- the daemon's own ad -------------------------------------------------------------------

    def publish(self, attrs: Mapping[str, Any]) -> None:
        """Advertise (or refresh) the daemon's ad: ``condor_status -any -constraint 'MyType ==
        "OSEP"'`` shows it."""
        ad = classad2.ClassAd()
        ad["MyType"] = "OSEP"
        ad["Name"] = self.settings.name
        ad["Machine"] = socket.getfqdn()
        for key, value in attrs.items():
            ad[key] = _to_classad_value(value)
        collector = self._collector()
        self._call("publishing the OSEP ad", lambda: collector.advertise([ad], "UPDATE_AD_GENERIC"))

    def withdraw(self) -> None:
        ad = classad2.ClassAd()
        ad["MyType"] = "Query"
        ad["TargetType"] = "OSEP"
        ad["Requirements"] = classad2.ExprTree(f'Name == "{self.settings.name}"')
        collector = self._collector()
        self._call("withdrawing the OSEP ad",
                   lambda: collector.advertise([ad], "INVALIDATE_ADS_GENERIC"))


def owner_of(ad: Any) -> str:
    """The owner a job counts for: its accounting group if it has one, else its Owner (KeyError if
    neither is there)."""
    group = ad.get("AcctGroup")
    return str(group) if isinstance(group, str) and group else str(ad["Owner"])


# -- job event logs ---------------------------------------------------------------------------------

# ULogEventNumber -> the project's event kinds. Every other known type (image size, file transfer,
# disconnect, ...) says nothing about slots or demand and is skipped silently.
EVENT_KINDS: dict[int, EventKind] = {
    0: EventKind.SUBMIT,
    1: EventKind.EXECUTE,
    4: EventKind.EVICT,
    5: EventKind.TERMINATE,
    7: EventKind.RUN_FAILED,  # shadow exception
    9: EventKind.ABORT,
    12: EventKind.HOLD,
    13: EventKind.RELEASE,
    24: EventKind.RUN_FAILED,  # reconnect failed: the run is lost
}
AD_INFORMATION = 28  # carries job attributes (Owner, AcctGroup) after the event it follows
KNOWN_EVENT_TYPES = frozenset(int(t) for t in htcondor.JobEventType)
EVENT_HEADER = re.compile(rb"\n\d{3} \(\d+\.\d+\.\d+\) ")


def read_event_log(path: Path, warn: Callable[[str], None]) -> Iterator[LogEvent]:
    """The events of one HTCondor job event log, in file order.

    A log written with ``EVENT_LOG_JOB_AD_INFORMATION_ATTRS`` (or the submit command
    ``job_ad_information_attrs``) including ``Owner`` names each job's owner: the attributes in an ad
    information event go onto the event just before it. Unknown event types, unparseable text and a
    cut-off last event are passed to ``warn`` (with the file and position) and skipped; a file that
    cannot be opened raises :class:`LogError`.
    """
    name = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb"):
            pass
    except OSError as exc:
        raise LogError(f"cannot read the event log {name}: {exc.strerror or exc}") from None
    try:
        reader = htcondor.JobEventLog(name)
    except (htcondor.HTCondorException, OSError, ValueError) as exc:
        raise LogError(f"cannot read the event log {name}: {exc}") from None
    position = 0
    held: LogEvent | None = None  # the last event, until we know no ad information follows it
    held_id: tuple[int, int] = (-1, -1)  # its (cluster, proc)
    stuck_at = -1
    while True:
        events = reader.events(0)
        while True:
            try:
                raw = next(events)
            except StopIteration:
                break
            except htcondor.HTCondorException:  # an event it began but could not parse
                _, offset = reader.__getstate__()
                if offset <= stuck_at:
                    break  # it did not move past the bad text: skip ahead below
                stuck_at = offset
                position += 1
                warn(f"{name}: event {position}, before byte {offset}: not a readable event, "
                     "skipped")
                continue
            position += 1
            number = int(raw["EventTypeNumber"])
            if number == AD_INFORMATION:
                if held is not None and (raw.cluster, raw.proc) == held_id:
                    try:
                        held = replace(held, owner=owner_of(raw))
                    except KeyError:
                        pass
                continue
            if held is not None:
                yield held
                held = None
            kind = EVENT_KINDS.get(number)
            if kind is None:
                if number not in KNOWN_EVENT_TYPES:
                    warn(f"{name}: event {position}: unknown event type {number}, skipped")
                continue
            try:
                held_id = (raw.cluster, raw.proc)
                held = LogEvent(
                    kind=kind,
                    job=f"{held_id[0]}.{held_id[1]}",
                    time=_event_time(str(raw["EventTime"])),
                    source=name,
                    position=position,
                    slot=_slot_name(raw) if kind is EventKind.EXECUTE else None,
                    checkpointed=bool(raw.get("Checkpointed", False)) if kind is EventKind.EVICT
                    else False,
                )
            except (KeyError, ValueError, TypeError) as exc:
                warn(f"{name}: event {position}: unreadable {kind.value} event ({exc}), skipped")
        # The reader stops at the end of the file, or at text it cannot parse (silently or not).
        state, offset = reader.__getstate__()  # its pickling support exposes the byte offset
        if offset >= size:
            break
        resume = _next_header(path, offset + 1)
        if resume is None:
            warn(f"{name}: byte {offset}: the last {size - offset} bytes are not a complete event "
                 "(cut off?), ignored")
            break
        warn(f"{name}: near byte {offset}: text that is not an event, skipped to byte {resume}")
        reader = htcondor.JobEventLog.__new__(htcondor.JobEventLog)
        reader.__setstate__((state, resume))
    if held is not None:
        yield held
    reader.close()


def _event_time(text: str) -> float:
    """Seconds since the epoch. Logs are written in local time unless told to use UTC (a trailing Z);
    sub-second times keep their fraction."""
    when = datetime.datetime.fromisoformat(text)
    return when.timestamp()


def _slot_name(raw: Any) -> str:
    for key in ("SlotName", "ExecuteHost"):
        if key in raw:
            return str(raw[key])
    return "?"


def _next_header(path: Path, start: int) -> int | None:
    """Byte offset of the next line that begins an event, at or after ``start`` (>= 1)."""
    with path.open("rb") as handle:
        handle.seek(start - 1)  # from the byte before, so that a header right at start is found
        base, text = start - 1, b""
        while True:
            data = handle.read(1 << 20)
            if not data:
                return None
            text += data
            found = EVENT_HEADER.search(text)
            if found is not None:
                return base + found.start() + 1
            keep = text[-40:]
            base += len(text) - len(keep)
            text = keep


def _to_classad_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        inner = classad2.ClassAd()
        for k, v in value.items():
            inner[k] = _to_classad_value(v)
        return inner
    if isinstance(value, (list, tuple)):
        return [_to_classad_value(v) for v in value]
    return value


def _split_id(job_id: str) -> tuple[str, int, int]:
    try:
        schedd, rest = job_id.rsplit("#", 1)
        cluster, proc = rest.split(".")
        return schedd, int(cluster), int(proc)
    except ValueError:
        raise PoolError(f"not a live job id: {job_id!r}") from None


def _ad_id(ad: Any) -> str:
    try:
        if "Name" in ad:
            return str(ad["Name"])
        return f"{ad.get('ClusterId', '?')}.{ad.get('ProcId', '?')}"
    except Exception:  # noqa: BLE001 - only for a log line about an ad that is already bad
        return "?"

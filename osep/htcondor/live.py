"""The live HTCondor pool behind the :class:`osep.core.pool.Pool` face: the only stateful part of the
adapter, and with :mod:`osep.htcondor.eventlog` and :mod:`osep.htcondor.probe` (the probes of osep's
rights) the only code that imports ``htcondor2`` (the ClassAd library, ``classad2``, is translation's
too). A command that fails names the right it needed (:func:`osep.htcondor.rights.needs`): a refusal
and a daemon that does not answer look alike to the bindings.

It reads a snapshot from the collector (slot ads) and every schedd (job ads), the answers read into
the snapshot's parts by :mod:`osep.htcondor.reading` (each ad by :mod:`osep.htcondor.ads`); vacates
jobs on the schedd that holds them; keeps freed slots for the owners they were taken for in the
reservation book every pool keeps (:mod:`osep.core.reservations`); turns holds into negotiator
ceilings (:mod:`osep.htcondor.ceilings`); and publishes the daemon's own ad.

One clock: the pool's time is the schedd's ``ServerTime`` of the last snapshot (the local clock only
when no job ad carries it), and reservations, vacate times and their timeouts are all measured on it.

Network and daemon errors are retried with backoff here (tenacity), and nowhere else; what still fails
becomes a :class:`osep.errors.PoolError` for the caller to log and survive.
"""

from __future__ import annotations

import math
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
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

from osep.config.livepool import LiveSettings
from osep.core import view as kept
from osep.core.model import Job, JobId, JobState, Snapshot
from osep.core.pool import Look
from osep.core.reservations import ReservationBook
from osep.core.resources import Shape
from osep.errors import PoolError, UnknownOutcome
from osep.htcondor import reading
from osep.htcondor.ads import (
    HOLDING_CONSTRAINT,
    IDLE_ATTRS,
    IDLE_CONSTRAINT,
    JOB_ATTRS,
    OSEP_ATTRS,
    SLOT_ATTRS,
    Accounts,
    BadAd,
    OsepAd,
    check_complete,
    integer,
    to_job,
    to_osep_ad,
)
from osep.htcondor.ceilings import NO_CEILING, Ceilings
from osep.htcondor.pinging import ping
from osep.htcondor.quota_shares import PoolSize
from osep.htcondor.reading import NOT_DEFINED, SLOT_FACTS, Reading
from osep.htcondor.rights import LEASE_CEILING, PUBLISH, READ_CEILINGS, SET_CEILING, SUPER, VACATE, WITHDRAW, needs
from osep.htcondor.state import MAX_ENTRIES, SavedState, StateError, StateFile
from osep.replay.damage import MAX_JOB_NUMBER
from osep.timing import QUERY, TRANSLATE, Phases

T = TypeVar("T")

MANAGE_CEILING = 532  # the negotiator's command for ceiling leases (HTCondor's MANAGE_CEILING)
LEASES_SINCE = (25, 11)  # the first HTCondor version whose negotiator takes it
VACATE_TIMEOUT = 600.0  # after this a vacate that never took effect is forgotten (and logged)
RECHECK_CHUNK = 100  # jobs per re-check query (a constraint of about 4 KiB)
HOUR = 3600.0  # how far back the vacates of each job are kept (OSEP_MAX_VACATES_PER_JOB_PER_HOUR)


class Vacates:
    """The vacates this pool sent and that have not taken effect yet: such a job still runs in the
    schedd's eyes, but the policy must see it VACATING (its slot is on its way to the beneficiary,
    and it is no victim twice). A job that restarted (another start) is running again."""

    def __init__(self, saved: Iterable[tuple[JobId, float | None, float]] = ()) -> None:
        # job -> (start of its run, sent at)
        self._sent: dict[JobId, tuple[float | None, float]] = {j: (start, at) for j, start, at in saved}

    def sent(self, job_id: JobId, start: float | None, at: float) -> None:
        self._sent[job_id] = (start, at)

    def forget(self, job_id: JobId) -> None:
        """The vacate was refused: the job stays what it is."""
        self._sent.pop(job_id, None)

    def entries(self) -> list[tuple[JobId, float | None, float]]:
        """What the state file keeps, for a ``--once`` run to hand to the next one."""
        return [(j, start, at) for j, (start, at) in self._sent.items()]

    def state(self, job: Job) -> JobState:
        sent = self._sent.get(job.id)
        if job.state is JobState.RUNNING and sent is not None and sent[0] == job.start_time:
            return JobState.VACATING
        return job.state

    def settle(self, jobs: Iterable[Job], now: float) -> list[tuple[JobId, float]]:
        """Forget vacates whose job no longer runs that run; returns those given up on after
        ``VACATE_TIMEOUT``, with the seconds since each was sent."""
        still = {j.id for j in jobs if j.state is JobState.VACATING}
        late = []
        for job_id, (_, at) in list(self._sent.items()):
            if job_id not in still:
                del self._sent[job_id]
            elif now - at > VACATE_TIMEOUT:
                late.append((job_id, now - at))
                del self._sent[job_id]
        return late


class KeptBook(ReservationBook):
    """The reservation book, as the state file keeps it between ``--once`` runs
    (:meth:`ReservationBook.entries` and :meth:`ReservationBook.restore`)."""


def _call(settings: LiveSettings, what: str, func: Callable[[], T], attempts: int | None = None) -> T:
    """:meth:`LivePool.call`, for a reader that keeps no pool."""
    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts or settings.retries)),
        wait=wait_exponential(multiplier=settings.retry_wait, max=30),
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
    except Exception as exc:  # the edge: anything else is the bindings' fault
        raise PoolError(f"{what}: {type(exc).__name__}: {exc}") from exc


def job_constraints(pairs: Iterable[tuple[int, int]], chunk: int = RECHECK_CHUNK) -> list[tuple[str, int]]:
    """Schedd constraints that select the jobs ``pairs`` names (cluster, proc), at most ``chunk`` jobs
    each, with how many jobs each names (the most it can match: the query's limit, so that the
    schedd may stop once it has found them). Built from integers only: a pair that is not two job
    numbers HTCondor could give (0 to 2^31 - 1) names no job in any queue and is left out."""
    numbers = sorted({(int(c), int(p)) for c, p in pairs if _job_number(c) and _job_number(p)})
    step = max(1, chunk)
    out = []
    for at in range(0, len(numbers), step):
        part = numbers[at:at + step]
        out.append((" || ".join(f"(ClusterId == {c:d} && ProcId == {p:d})" for c, p in part), len(part)))
    return out


def _job_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_JOB_NUMBER


def knobs(names: Iterable[str]) -> dict[str, str]:
    """The values of HTCondor configuration knobs that are set (re-read after a reload)."""
    return {n: str(htcondor.param[n]) for n in names if n in htcondor.param}


def reload_config() -> None:
    htcondor.reload_config()


def collector_address(pool: str | None) -> str:
    """Where osep asks for the pool's collector: ``pool`` (``--pool``, the knob ``OSEP_POOL``), else the
    HTCondor configuration's ``COLLECTOR_HOST`` ("" if neither is set)."""
    if pool:
        return pool
    return str(htcondor.param["COLLECTOR_HOST"]) if "COLLECTOR_HOST" in htcondor.param else ""


def the_collector(pool: str | None) -> str:
    """The collector as a message names it, with the address it was asked at: every message about a
    daemon osep could not reach says what it tried to reach."""
    where = collector_address(pool)
    return f"the collector at {where}" if where else "the collector (no --pool, OSEP_POOL or COLLECTOR_HOST set)"


def address_of(ad: Any) -> str:
    """A daemon's host and port, from its ad's ``MyAddress`` (``<127.0.0.1:9618?addrs=...>`` gives
    ``127.0.0.1:9618``); "?" if it has none."""
    where = ad.get("MyAddress") if ad is not None else None
    if not isinstance(where, str) or not where.strip("<>"):
        return "?"
    return where.strip().lstrip("<").rstrip(">").split("?", 1)[0]


def collector_of(pool: str | None) -> Any:
    """The bindings' collector of ``pool`` (``--pool``, the knob ``OSEP_POOL``), else the HTCondor
    configuration's own."""
    return htcondor.Collector(pool) if pool else htcondor.Collector()


class _Negotiator:
    """The :class:`osep.htcondor.ceilings.NegotiatorLink` of a real negotiator."""

    def __init__(self, pool: LivePool, ad: Any) -> None:
        self._pool = pool
        self._daemon = htcondor.Negotiator(ad)
        self.name = str(ad.get("Name", ""))
        self.leases = takes_leases(ad.get("CondorVersion"))
        self._ad = ad
        self._granted = False  # asked once per round of ceilings (osep.htcondor.pinging)

    def ceilings(self) -> dict[str, int]:
        ads = self._pool.call(f"reading submitter ceilings ({needs(READ_CEILINGS, self.name)})",
                              self._daemon.getPriorities)
        out = {}
        for ad in ads:
            name, ceiling = ad.get("Name"), ad.get("Ceiling")
            value = integer(ceiling)
            if isinstance(name, str) and value is not None:
                out[name] = value
        return out

    def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
        negotiator = self._daemon
        if not self._granted:  # SET_CEILING has no answer: a refusal would go unseen
            answer = ping(self._ad, SET_CEILING.command)
            if not answer.granted:
                raise PoolError(f"setting the ceiling of {submitter} ({needs(SET_CEILING, self.name)}): the "
                                f"negotiator does not grant it (or stopped answering): {answer.problem}")
            self._granted = True
        if self.leases:
            # A lease in force takes no other ceiling (one sent would be undone when it ends): it
            # is ended first, whether osep set it or not (none in force: refused, harmlessly).
            self._manage(submitter, {"Action": "cancel"}, check=False)
            if lease is not None and value >= 0:
                self._manage(submitter, {"Action": "set", "Ceiling": value,
                                         "Duration": max(1, math.ceil(lease))})
                return
        if value >= 0:
            self._pool.call(f"setting the ceiling of {submitter} ({needs(SET_CEILING, self.name)})",
                            lambda: negotiator.setCeiling(submitter, value))
            return
        # "No ceiling" is -1 on the wire, which Negotiator.setCeiling refuses to send (it checks
        # for > -1); the negotiator itself accepts it, so send the command the method would send.
        from htcondor2 import _negotiator as wire

        self._pool.call(
            f"lifting the ceiling of {submitter} ({needs(SET_CEILING, self.name)})",
            lambda: wire._negotiator_command_user_value(
                negotiator._addr, negotiator._SET_CEILING, submitter, NO_CEILING),
        )


    def _manage(self, submitter: str, what: Mapping[str, Any], check: bool = True) -> None:
        """The negotiator's ceiling-management command (HTCondor 25.11 and later): one ad out, one
        back saying whether it was done. The bindings have no call for it but the command that sends
        an ad and reads one back."""
        from htcondor2 import htcondor2_impl as wire

        request = classad2.ClassAd({"Submitter": submitter, **what})
        doing = f"{what['Action']} the ceiling lease of {submitter} ({needs(LEASE_CEILING, self.name)})"
        reply = self._pool.call(doing, lambda: wire._send_generic_payload_command(
            self._daemon._addr, MANAGE_CEILING, request._handle), attempts=1 if not check else None)
        answer = reply[0] if isinstance(reply, tuple) and reply else reply
        if check and not (hasattr(answer, "get") and answer.get("Success") is True):
            said = answer.get("ErrorString") if hasattr(answer, "get") else answer
            raise PoolError(f"{doing}: the negotiator refused: {said}")


def takes_leases(version: object) -> bool:
    """Whether a daemon of this ``CondorVersion`` ("$CondorVersion: 25.14.1 2026-10-16 ... $") takes
    time-limited ceilings: HTCondor 25.11 and later."""
    found = re.search(r"\$CondorVersion:\s*(\d+)\.(\d+)\.", version) if isinstance(version, str) else None
    return found is not None and (int(found[1]), int(found[2])) >= LEASES_SINCE


class LivePool:
    """A :class:`osep.core.pool.Pool` backed by a real HTCondor pool.

    With a state file it takes the file's lock and reads it first (:class:`StateError` if either
    fails: another osep runs, or the file is damaged); what it keeps (ceilings, vacates in
    progress, reservations, each job's recent vacates) is saved there. :meth:`close` lets the lock
    go (so does the end of the process, however it ends)."""

    def __init__(self, settings: LiveSettings = LiveSettings(), logger: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.log = logger if logger is not None else structlog.get_logger("osep")
        self.clock = clock
        self.now = clock()
        self._state = StateFile(settings.state_file) if settings.state_file is not None else None
        self._unsaved: str | None = None  # why the last save after acting failed
        saved = self._state.open() if self._state is not None else SavedState()
        self.book = KeptBook(settings.reservation_timeout)
        self.book.restore(saved.reservations)
        self.vacates = Vacates(saved.vacates)
        # job -> when osep vacated it (the actuator's per-job hourly cap counts these)
        self.recent: dict[JobId, deque[float]] = {j: deque(t) for j, t in saved.recent.items()}
        self._schedds: dict[str, Any] = {}  # name -> the schedd's ad, from the last snapshot
        self._accounts = Accounts()
        self._located: Any = None  # the negotiator's ad, as the collector last gave it
        self.ceilings = Ceilings(saved.ceilings, self.log,
                                 self._persist if self._state is not None else None)

    @property
    def charged(self) -> Mapping[str, set[str]]:
        """Accounting name -> the owners whose jobs are charged to it, as the last snapshot found."""
        return self._accounts.charged

    def reconfigure(self, settings: LiveSettings) -> None:
        """New settings after a reload; what the pool keeps (reservations, ceilings) stays, and so
        does its state file (it cannot change while osep runs)."""
        self.settings = replace(settings, state_file=self.settings.state_file)
        self.book.lifetime = settings.reservation_timeout

    def close(self) -> None:
        """Let the state file's lock go (the run is over)."""
        if self._state is not None:
            self._state.close()

    # -- the state file -------------------------------------------------------------------------

    def keep_state(self) -> str | None:
        """Save what the next run needs now; why it could not be saved, or None. Without a state
        file there is nowhere to keep a ceiling, so that is a reason too."""
        if self._state is None:
            return "no state file (OSEP_STATE_FILE)"
        try:
            self._persist()
        except StateError as exc:
            return str(exc)
        return None

    def _persist(self) -> None:
        assert self._state is not None
        for job_id in list(self.recent)[:-MAX_ENTRIES]:  # the actuator shares this dict: kept in place
            del self.recent[job_id]
        self._state.save(SavedState(ceilings=self.ceilings.records(), vacates=self.vacates.entries(),
                                    reservations=self.book.entries(),
                                    recent={j: list(t) for j, t in self.recent.items()}))

    def _save(self) -> None:
        """Save after acting; a failure is logged once, not every cycle (the daemon's
        ``state_unwritable`` line says it every cycle)."""
        if self._state is None:
            return
        problem = self.keep_state()
        if problem is not None and problem != self._unsaved:
            self.log.error("state_not_saved", problem=problem)
        self._unsaved = problem

    # -- retries --------------------------------------------------------------------------------

    def call(self, what: str, func: Callable[[], T], attempts: int | None = None) -> T:
        """``func()``, retried with backoff on network and daemon errors; a PoolError if it fails,
        whatever the bindings raised (a SystemError from a value they cannot send, say): nothing
        from the pool's edge may stop a cycle, or the daemon."""
        return _call(self.settings, what, func, attempts)

    def _collector(self) -> Any:
        return collector_of(self.settings.pool)

    def _at_collector(self) -> str:
        return the_collector(self.settings.pool)

    # -- reading the pool -----------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return self.timed_snapshot(Phases())

    def timed_snapshot(self, phases: Phases) -> Snapshot:
        """The snapshot, its time spent in ``phases``: querying (per daemon) and translating.

        Each schedd is asked twice: for its idle jobs grouped (``QueryOpt.GroupBy``: one ad per
        owner and request, with how many jobs and the first of them in queue order; a queue of
        100,000 idle jobs from a few submissions is a few ads) and then for the jobs that hold a
        slot, one ad each. The snapshot carries the pool view its decision reads, the idle jobs in
        it as counts per owner and shape (:meth:`osep.core.view.PoolView.put_idle`); its ``jobs``
        are the jobs that hold a slot."""
        with phases.timing(QUERY, "collector"):
            collector = self._collector()
            schedds = self.call(f"asking {self._at_collector()} for the schedds",
                                lambda: collector.locateAll(htcondor.DaemonType.Schedd))
            slot_ads = self.call(
                f"asking {self._at_collector()} for the slots",
                lambda: collector.query(htcondor.AdTypes.Startd, projection=SLOT_ATTRS),
            )
        located: dict[str, Any] = {}
        with phases.timing(TRANSLATE):
            read = Reading(slot_ads, self.vacates.state, self.settings.naming)
        for schedd_ad in schedds:
            name = str(schedd_ad.get("Name", "schedd"))
            located[name] = schedd_ad
            with phases.timing(QUERY, f"schedd {name}"):
                grouped, ads = self._query_jobs(name, schedd_ad)
                clock = next((t for t in map(reading.server_time, ads) if t is not None), None)
                if clock is None and grouped:
                    clock = self._server_time(name, schedd_ad)
            with phases.timing(TRANSLATE):
                read.schedd(name, grouped, ads, clock)
        with phases.timing(TRANSLATE):
            now = float(read.pool_time) if read.pool_time is not None else self.clock()
            snapshot = self._settle(read, located, len(schedds), now)
        return snapshot

    def _settle(self, read: Reading, located: dict[str, Any], schedds: int, now: float) -> Snapshot:
        """The snapshot of the jobs and idle groups read, on the slots the ads describe; what the
        pool keeps (vacates in progress, reservations, recent vacates) brought up to ``now``."""
        jobs, accounts, tally = read.jobs, read.accounts, read.tally
        slots = read.slots()
        if tally:
            # One line per cycle, however many ads were odd: a pool has 100,000 jobs.
            self.log.warning("odd_ads", rejected=tally.rejected, defaulted=tally.defaulted,
                             examples=tally.examples)
        check_complete(read.slot_ads, jobs, schedds)
        self.now = now
        self._schedds = located
        for job_id, seconds in self.vacates.settle(jobs, now):
            self.log.warning("vacate_not_done", job=str(job_id), seconds=seconds)
        self._accounts = accounts
        for res in self.book.expire(now, accounts.running, accounts.idle):
            self.log.info("reservation_expired", owner=res.owner, slot=res.slot)
        # Vacates older than an hour count for no cap (the actuator shares this dict: pruned in place).
        for job_id, times in list(self.recent.items()):
            while times and times[0] <= now - HOUR:
                times.popleft()
            if not times:
                del self.recent[job_id]
        view = kept.PoolView.of(slots, jobs)
        for group in read.idle:
            view.put_idle(group.owner, group.shape, group.count, group.first)
        standing, lost = self.book.mark(view)
        for res in lost:
            # Its room was taken by another job, or its machine left: the owner's deficit is
            # planned again in this cycle.
            self.log.warning("reservation_lost", owner=res.owner, slot=res.slot,
                             shape=list(res.shape), cause="its room is no longer free")
        return view.snapshot(now, standing)

    def _query_jobs(self, name: str, schedd_ad: Any) -> tuple[list[Any], list[Any]]:
        """Schedd ``name``'s idle jobs, grouped, and then its jobs that hold a slot. Asked in that
        order: a job that starts between the two is seen idle and running (one idle job too many
        for a cycle) rather than neither (a claimed slot with no job in it)."""
        schedd = htcondor.Schedd(schedd_ad)
        at = address_of(schedd_ad)
        groups: list[Any] = self.call(
            f"querying schedd {name} at {at} (idle jobs)",
            lambda: schedd.query(constraint=IDLE_CONSTRAINT, projection=IDLE_ATTRS,
                                 opts=htcondor.QueryOpt.GroupBy),
        )
        ads: list[Any] = self.call(
            f"querying schedd {name} at {at}",
            lambda: schedd.query(constraint=HOLDING_CONSTRAINT, projection=JOB_ATTRS),
        )
        return groups, ads

    def _server_time(self, name: str, schedd_ad: Any) -> int | None:
        """The schedd's clock, from one idle job's ad (a schedd with no job on a slot; the ads of
        a grouped query carry no ``ServerTime``)."""
        schedd = htcondor.Schedd(schedd_ad)
        ads = self.call(f"querying schedd {name} at {address_of(schedd_ad)} (its clock)",
                        lambda: schedd.query(constraint=IDLE_CONSTRAINT, projection=["ServerTime"], limit=1))
        return next((t for t in map(reading.server_time, ads) if t is not None), None)

    def _schedd(self, job_id: JobId) -> Any:
        """The schedd that holds ``job_id``, from the ad the last snapshot located it by (never by a
        name given to the collector as a constraint)."""
        ad = self._schedds.get(job_id.schedd)
        if ad is None:
            raise PoolError(f"schedd {job_id.schedd!r} was not in the last snapshot")
        return htcondor.Schedd(ad)

    def look(self, job_ids: Iterable[JobId]) -> Look:
        """The jobs as their schedds have them now: one query per schedd (per ``RECHECK_CHUNK`` jobs),
        retried; a schedd that cannot be asked is its own jobs' failure, the others are still looked
        at. A job whose ad cannot be read is that job's failure."""
        by_schedd: dict[str, dict[tuple[int, int], JobId]] = {}
        for job_id in job_ids:
            by_schedd.setdefault(job_id.schedd, {})[(job_id.cluster, job_id.proc)] = job_id
        found: dict[JobId, Job] = {}
        failed: dict[JobId, str] = {}
        for name, wanted in by_schedd.items():
            try:
                ads = self._look_up(name, wanted)
            except PoolError as exc:
                failed.update(dict.fromkeys(wanted.values(), str(exc)))
                continue
            for ad in ads:
                cluster, proc = integer(ad.get("ClusterId")), integer(ad.get("ProcId"))
                asked = wanted.get((cluster, proc)) if cluster is not None and proc is not None else None
                if asked is None:  # not asked for (the schedd's answer is data too)
                    continue
                try:
                    entry = to_job(name, ad, naming=self.settings.naming)
                except BadAd as exc:
                    failed[asked] = f"its ad cannot be read: {exc}"
                    continue
                if entry is not None:
                    found[asked] = reading.as_seen(entry, self.vacates.state).job
        return Look(found, failed)

    def _look_up(self, name: str, wanted: Mapping[tuple[int, int], JobId]) -> list[Any]:
        """The ads of the jobs ``wanted`` (cluster, proc) in the queue of schedd ``name``."""
        ad = self._schedds.get(name)
        if ad is None:
            raise PoolError(f"schedd {name!r} was not in the last snapshot")
        schedd = htcondor.Schedd(ad)
        ads: list[Any] = []
        for constraint, jobs in job_constraints(wanted):
            ads.extend(self.call(f"re-checking jobs on schedd {name}",
                                 partial(schedd.query, constraint=constraint, projection=JOB_ATTRS,
                                         limit=jobs)))
        return ads

    # -- acting ---------------------------------------------------------------------------------

    def vacate(self, job_id: JobId) -> None:
        """Sent once, never retried: a command whose reply is lost may have been carried out, and a
        second vacate of a job already leaving is not for osep to send. Such a vacate is taken as
        possibly done (:class:`UnknownOutcome`): the job shows as vacating until the schedd shows
        it has left or restarted, or ``VACATE_TIMEOUT`` passes.

        With a state file, each vacate is on record there before it is sent: a run killed just
        after sending it leaves the next one knowing the job is on its way out, so that neither
        it nor another job is vacated again for the same room. Not sent if it cannot be recorded."""
        schedd = self._schedd(job_id)
        action = htcondor.JobAction.VacateFast if self.settings.vacate_fast else htcondor.JobAction.Vacate
        placed = self._accounts.placed.get(job_id)
        self.vacates.sent(job_id, placed[3] if placed is not None else None, self.now)
        if self._state is not None:
            problem = self.keep_state()
            if problem is not None:
                self.vacates.forget(job_id)
                raise PoolError(f"not sent, as it could not be recorded first: {problem}")
        try:
            result = self.call(f"vacating {job_id} ({needs(VACATE, job_id.schedd)})",
                               lambda: schedd.act(action, [job_id.local]), attempts=1)
        except PoolError as exc:
            self._accounts.vacated(job_id)
            raise UnknownOutcome(f"{exc}; it may have been carried out") from exc
        if integer(result.get("TotalSuccess", 0)) != 1:
            self.vacates.forget(job_id)  # refused: on record until the next save, harmlessly
            denied = integer(result.get("TotalPermissionDenied", 0)) or 0
            why = f" (permission denied: {needs(SUPER, job_id.schedd)})" if denied > 0 else ""
            raise PoolError(f"schedd {job_id.schedd} did not vacate {job_id}{why}: {dict(result)}")
        # The job no longer counts for its owner: it will not be capped for it, nor counted running.
        self._accounts.vacated(job_id)

    def reserve(self, slot: str, owner: str, shape: Shape) -> None:
        self.book.reserve(slot, owner, self.now, self._accounts.running.get(owner, 0), shape)

    def hold(self, holds: Mapping[str, int], leaving: Collection[JobId] = ()) -> None:
        """The cycle's holds as negotiator ceilings, each held submitter's set at what it will run
        once ``leaving`` (the vacates about to be sent) have left; saved with the rest of the state."""
        self.book.hold(holds)
        try:
            self._sync_ceilings(leaving)
        finally:
            self._save()

    def release(self, quick: bool = False) -> None:
        """Lift every ceiling osep set and forget all reservations (the loop is stopping).
        ``quick``: one attempt per call and no retries, for a stop that must not wait."""
        if quick:
            self.settings = replace(self.settings, retries=1)
        self.book.clear()
        try:
            self._sync_ceilings()
        finally:
            self._save()

    def _sync_ceilings(self, leaving: Collection[JobId] = ()) -> None:
        holding = self.book.holds
        accounts = self._accounts.after(leaving) if leaving else self._accounts
        if self.ceilings.unchanged(holding, accounts):
            return  # nothing to change: the negotiator is not even located
        self.ceilings.sync(_Negotiator(self, self._negotiator()), holding, accounts, self.now,
                           self.settings.lease)

    def _negotiator(self) -> Any:
        """The negotiator's ad, as the collector has it; where the collector cannot say (restarted, it
        knows of the negotiator only once that advertises again, minutes later), the ad it last
        gave: the negotiator osep set its ceilings on is most likely still there, at that address."""
        collector = self._collector()
        try:
            ad = self.call(f"asking {self._at_collector()} for the negotiator",
                           lambda: collector.locate(htcondor.DaemonType.Negotiator))
        except PoolError as exc:
            if self._located is None:
                raise
            self.log.warning("negotiator_not_located", problem=str(exc),
                             using=str(self._located.get("MyAddress", "")),
                             meaning="the negotiator is reached at the address the collector last gave")
            return self._located
        self._located = ad
        return ad

    def ceilings_left(self) -> dict[str, dict[str, int]]:
        """The ceilings osep set and has not lifted: negotiator -> submitter -> value."""
        return self.ceilings.by_negotiator()

    def lapse(self) -> float | None:
        """Seconds by which every ceiling osep has left will have lapsed by itself (leases), or None
        if any of them lasts until it is lifted."""
        return self.ceilings.lapse(self.clock())

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
        self.call(f"publishing the OSEP ad at {self._at_collector()} ({needs(PUBLISH)})",
                  lambda: collector.advertise([ad], "UPDATE_AD_GENERIC"))

    def others(self) -> list[OsepAd]:
        """Every osep ad in the collector that says who published it (this process's own too)."""
        collector = self._collector()
        # Of type Any: the collector files ads sent with UPDATE_AD_GENERIC where a query for
        # Generic ads does not find them (HTCondor 23.9).
        ads = self.call(f"asking {self._at_collector()} for the OSEP ads", lambda: collector.query(
            htcondor.AdTypes.Any, constraint='MyType == "OSEP"', projection=OSEP_ATTRS))
        return [a for a in map(to_osep_ad, ads) if a is not None]

    def withdraw(self) -> None:
        ad = classad2.ClassAd()
        ad["MyType"] = "Query"
        ad["TargetType"] = "OSEP"
        # Quoted: a name is data, and one with a quote or a backslash must still name only itself.
        ad["Requirements"] = classad2.ExprTree(f"Name == {classad2.quote(self.settings.name)}")
        collector = self._collector()
        self.call(f"withdrawing the OSEP ad at {self._at_collector()} ({needs(WITHDRAW)})",
                  lambda: collector.advertise([ad], "INVALIDATE_ADS_GENERIC"))


def _to_classad_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        inner = classad2.ClassAd()
        for k, v in value.items():
            inner[k] = _to_classad_value(v)
        return inner
    if isinstance(value, (list, tuple)):
        return [_to_classad_value(v) for v in value]
    return value


# -- the negotiator's group quotas (osep shares --from-pool) -----------------------------------------


@dataclass(frozen=True, slots=True)
class GroupKnobs:
    """What :func:`osep.htcondor.quota_shares.translate` needs, read from a pool."""

    knobs: dict[str, str]  # every GROUP_* knob and each of quota_knobs.GLOBAL_KNOBS that is set
    pool_size: PoolSize  # the pool's size as the negotiator counts it for quotas, and where the knobs were read


def read_group_quotas(settings: LiveSettings = LiveSettings(), remote: bool = True) -> GroupKnobs:
    """The group-quota knobs as the negotiator has them, and the pool's size as it counts it.

    ``remote`` (the default): the running negotiator's own configuration, asked of it over the
    network (what ``condor_config_val -negotiator`` shows): it holds ``NEGOTIATOR.``-prefixed knobs
    and what the negotiator last loaded, wherever osep runs. Else this machine's configuration, as
    this process reads it (no subsystem prefix applies). A PoolError if the negotiator cannot be
    located or asked; the pool's size is counted where it can be (``pool_size.problem`` says why not)."""
    collector = collector_of(settings.pool)
    if remote:
        ad = _call(settings, f"asking {the_collector(settings.pool)} for the negotiator",
                   lambda: collector.locate(htcondor.DaemonType.Negotiator))
        config = _call(settings, f"asking the negotiator at {address_of(ad)} for its configuration",
                       lambda: htcondor.RemoteParam(ad))
        names = list(config)
        source = f"the negotiator {ad.get('Name', '?')}'s own configuration"

        def value(key: str) -> str | None:
            found = str(_call(settings, f"reading {key} from the negotiator", lambda: config[key]))
            return None if found == NOT_DEFINED else found
    else:
        names = list(htcondor.param)
        source = "this machine's configuration (not asked of the negotiator)"

        def value(key: str) -> str | None:
            return str(htcondor.param[key]) if key in htcondor.param else None

    found = {base: text for base, key in reading.negotiator_keys(names).items() if (text := value(key)) is not None}
    return GroupKnobs(found, replace(_count_pool(settings, collector, found), source=source))


def _count_pool(settings: LiveSettings, collector: Any, knobs: Mapping[str, str]) -> PoolSize:
    """The pool's size as the negotiator counts it for quotas (:func:`osep.htcondor.reading.pool_size`),
    or why it could not be counted."""
    constraint = reading.sizing_constraint(knobs)
    try:
        ads = _call(settings, f"counting the pool's slots at {the_collector(settings.pool)}",
                    lambda: collector.query(htcondor.AdTypes.Startd, constraint=constraint, projection=SLOT_FACTS))
    except PoolError as exc:
        return PoolSize(problem=str(exc))
    return reading.pool_size(ads, knobs)

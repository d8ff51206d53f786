"""The live HTCondor pool behind the :class:`osep.core.pool.Pool` face: the only stateful part of the
adapter. A command that fails names the right it needed (:func:`osep.htcondor.rights.needs`): a
refusal and a daemon that does not answer look alike to the bindings.

It reads a snapshot from the collector (slot ads) and every schedd (job ads), the answers read into
the snapshot's parts by :mod:`osep.htcondor.reading`; vacates jobs on the schedd that holds them;
keeps freed slots for the owners they were taken for in the reservation book every pool keeps
(:mod:`osep.core.reservations`); turns holds into negotiator ceilings (:mod:`osep.htcondor.ceilings`,
through :mod:`osep.htcondor.negotiator`); and publishes the daemon's own ad. Every call to a daemon
goes through :func:`osep.htcondor.reach.call`, retried there and nowhere else.

One clock: the pool's time is the schedd's ``ServerTime`` of the last snapshot (the local clock only
when no job ad carries it), and reservations, vacate times and their timeouts are all measured on it.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

import classad2
import htcondor2 as htcondor
import structlog

from osep.config.livepool import LiveSettings
from osep.core import view as kept
from osep.core.model import Job, JobId, Snapshot
from osep.core.pool import Look
from osep.core.resources import Shape
from osep.errors import PoolError, UnknownOutcome
from osep.htcondor import reading
from osep.htcondor.ads import OSEP_ATTRS, BadAd, OsepAd, integer, to_osep_ad
from osep.htcondor.ceilings import Ceilings
from osep.htcondor.job_ads import HOLDING_CONSTRAINT, IDLE_ATTRS, IDLE_CONSTRAINT, JOB_ATTRS, Accounts, to_job
from osep.htcondor.negotiator import LiveNegotiator
from osep.htcondor.reach import address_of, call, collector_of, the_collector
from osep.htcondor.reading import Reading
from osep.htcondor.recheck import job_constraints
from osep.htcondor.rights import PUBLISH, SUPER, VACATE, WITHDRAW, needs
from osep.htcondor.slot_ads import SLOT_ATTRS, check_complete
from osep.htcondor.state import StateFile
from osep.htcondor.state_format import MAX_ENTRIES, SavedState, StateError
from osep.htcondor.vacates import KeptBook, Vacates
from osep.timing import QUERY, TRANSLATE, Phases

T = TypeVar("T")

HOUR = 3600.0  # how far back the vacates of each job are kept (OSEP_MAX_VACATES_PER_JOB_PER_HOUR)


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
        """:func:`osep.htcondor.reach.call` with this pool's settings as they are now (a quick
        :meth:`release` lowers its retries)."""
        return call(self.settings, what, func, attempts)

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
        self.ceilings.sync(LiveNegotiator(self, self._negotiator()), holding, accounts, self.now,
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


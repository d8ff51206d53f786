"""The enforcement daemon: the loop every ``t`` seconds against one pool, and its signals.

It runs under condor_master, or from cron with ``--once``. docs/operating.md gives what SIGHUP,
SIGTERM and SIGQUIT do, the lease that keeps one osep per pool, and how dry run stands aside. A cycle
that fails is logged and skipped; the loop goes on, and with ``--once`` the exit status says whether
the one cycle succeeded. The non-obvious choices: ``--once`` keeps its holds when it exits (given a
state file to hand them on), as lifting them would free the held owners exactly while the slots just
vacated are negotiated. A real cycle whose state file cannot be saved stands aside as a dry run
does, because a vacate without the hold that keeps its slot is work thrown away, and a ceiling osep
could not record might be left behind.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from osep.act.actuator import Actuator
from osep.act.cycle import CycleReport, Enforcer
from osep.act.records import Recorder
from osep.config.knobs import RunSettings
from osep.config.livepool import LiveSettings
from osep.core.model import JobId
from osep.core.pool import Pool
from osep.errors import OsepError, PoolError
from osep.htcondor.ads import OsepAd
from osep.timing import PHASES, QUERY, STATE, Clocks, Phases

if TYPE_CHECKING:  # (prometheus_client is imported only where an endpoint is asked for)
    from osep.enforce.exporter import Exporter

# An OSEP ad not heard from for this many of its intervals, and STALE_GRACE seconds more, belongs to
# an osep that is gone (its lease has lapsed).
STALE_INTERVALS = 3
STALE_GRACE = 60.0
# Seconds between tries to lift the ceilings at a stop (OSEP_RELEASE_TIMEOUT bounds the tries).
RELEASE_RETRY = 5.0


class LiveLike(Pool, Protocol):
    """What the daemon needs of a pool beyond :class:`osep.core.pool.Pool`."""

    # job -> when osep vacated it: kept with the pool's state, for the per-job hourly cap
    recent: dict[JobId, deque[float]]

    def reconfigure(self, settings: LiveSettings) -> None: ...
    def release(self, quick: bool = False) -> None: ...
    def ceilings_left(self) -> dict[str, dict[str, int]]:
        """The ceilings osep set and has not lifted: negotiator -> submitter -> value."""
        ...
    def lapse(self) -> float | None:
        """Seconds by which the ceilings left will have ended by themselves, or None."""
        ...
    def publish(self, attrs: Mapping[str, Any]) -> None: ...
    def withdraw(self) -> None: ...
    def others(self) -> list[OsepAd]:
        """Every OSEP ad in the collector that says who published it."""
    def keep_state(self) -> str | None:
        """Save the state file now; why it could not be, or None."""
        ...


def _process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user's counts too; a zombie,
    dead and not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read(4096).rpartition(b")")[2].split()[:1]
    except OSError:
        return True  # no /proc to ask: the process is there
    return state != [b"Z"]


class _Quit(BaseException):
    """Raised from the SIGQUIT handler to leave whatever the loop is doing (not an Exception, so
    that no handler of errors takes it for one)."""


class Daemon:
    def __init__(
        self,
        load: Callable[[], RunSettings],
        pool: LiveLike,
        logger: Any = None,
        wait: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        initial: RunSettings | None = None,
        wall: Callable[[], float] | None = None,
        instance: str | None = None,
        cpu: Callable[[], float] = time.process_time,
        alive: Callable[[int], bool] | None = None,
        exporter: Exporter | None = None,
    ) -> None:
        self._load = load
        self.loaded = initial if initial is not None else load()
        self.pool = pool
        self.log = logger if logger is not None else structlog.get_logger("osep")
        self.record = Recorder(self.log)
        # Each cycle is timed on ``clock`` (wall) and ``cpu`` (this process's CPU): see osep.timing.
        self.enforcer = Enforcer(self.loaded.policy, Actuator(pool, self.loaded.limits, pool.recent),
                                 self.log, Clocks(clock, cpu))
        self._wake = threading.Event()
        self._wait = wait if wait is not None else self._sleep
        self._clock = clock
        self._stop = threading.Event()  # SIGTERM
        self.reload_requested = False
        self.last_ok: bool | None = None
        self.published = False  # this process's ad is in the collector
        # Who this is, for the lease (see the module's text): host and process, and when it began.
        # The collector's clock, as near as this machine's can be.
        self._wall = wall if wall is not None else time.time
        self.instance = instance if instance is not None else f"{socket.getfqdn()}:{os.getpid()}"
        self.began = float(int(self._wall()))  # as its ad says it, whole seconds
        self.rival: str | None = None  # the other osep this one stood aside for, last cycle
        # Set by a stop that could not lift every ceiling osep set: which, and how to lift them.
        self.left_behind: str | None = None
        self._predecessors: set[str] = set()  # instances whose ads were found to be a dead predecessor's
        self._alive = alive if alive is not None else _process_alive
        self.exporter = exporter  # the Prometheus endpoint, given the figures of every cycle

    # -- signals --------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGHUP, self._on_hup)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGQUIT, self._on_quit)

    def _on_hup(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True
        self._wake.set()

    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self._stop.set()
        self._wake.set()

    def _on_quit(self, signum: int, frame: FrameType | None) -> None:
        raise _Quit()

    def _sleep(self, seconds: float) -> None:
        self._wake.wait(max(0.0, seconds))
        self._wake.clear()

    # -- the loop -------------------------------------------------------------------------------

    def reload(self) -> bool:
        """Swap in the new configuration, or keep the old one if the new one is bad."""
        self.reload_requested = False
        try:
            loaded = self._load()
        except OsepError as exc:
            self.log.error("reload_rejected", problem=str(exc), kept="previous configuration")
            return False
        if loaded.daemon.state_file != self.loaded.daemon.state_file:
            self.log.error("reload_rejected", kept="previous configuration",
                           problem="OSEP_STATE_FILE cannot change while osep runs; restart it")
            return False
        self.loaded = loaded
        self.enforcer.reconfigure(loaded.policy, loaded.limits)
        self.pool.reconfigure(loaded.live)
        self.log.info("reloaded", policy_file=str(loaded.daemon.policy_file),
                      interval=loaded.interval, dry_run=loaded.daemon.dry_run)
        self._note_excess()
        return True

    def _note_excess(self) -> None:
        """A policy file's ``excess`` orders a simulated negotiator; say once per load that a live
        pool's spare capacity goes as its own negotiator orders it."""
        if self.loaded.excess != "fairshare":
            self.log.warning("excess_not_live", excess=self.loaded.excess,
                             meaning="what owners leave unused goes as HTCondor's negotiator orders it; "
                                     "the policy's excess only changes simulations")

    def cycle(self) -> CycleReport | None:
        limits = self.loaded.limits
        phases = Phases(self.enforcer.clocks)
        self.rival = None if limits.dry_run else self._rival(phases)
        problem = self.rival
        if problem is not None:
            self.log.error("another_osep", problem=problem,
                           consequence="this cycle sends no vacate and sets no ceiling")
        else:
            if not limits.dry_run:
                with phases.timing(STATE):
                    problem = self.pool.keep_state()
            if problem is not None:
                self.log.error("state_unwritable", problem=problem,
                               consequence="this cycle sends no vacate and sets no ceiling")
        actuator = self.enforcer.actuator
        actuator.limits = replace(limits, dry_run=True) if problem is not None else limits
        try:
            report = self.enforcer.run_cycle(self.pool, phases)
        except PoolError as exc:
            self.last_ok = False
            self.record.cycle_failed(self.enforcer.cycles, str(exc))
            report = None
        except Exception as exc:  # a fault of osep's own: this cycle, not the daemon
            self.last_ok = False
            self.log.error("internal_error", cycle=self.enforcer.cycles, exc_info=True)
            self.record.cycle_failed(self.enforcer.cycles,
                                     f"internal error: {type(exc).__name__}: {exc}")
            report = None
        else:
            self.last_ok = problem is None
        finally:
            actuator.limits = limits
        if limits.dry_run or problem is not None:
            self._lift()
        return report

    def _rival(self, phases: Phases) -> str | None:
        """Another osep that holds the lease on this pool: one that started before this one, is not
        a dry run, and was heard from lately. Who, in a line; None if there is none (or the
        collector cannot say: then the cycle fails on its own)."""
        if not self.loaded.daemon.publish:
            return None
        try:
            with phases.timing(QUERY, "collector"):
                ads = self.pool.others()
        except PoolError:
            return None
        now = self._wall()
        for ad in sorted(ads, key=lambda a: (a.started, a.instance)):
            if ad.instance == self.instance or ad.dry_run:
                continue
            if self._predecessor(ad):
                if ad.instance not in self._predecessors:
                    self._predecessors.add(ad.instance)
                    self.log.info("predecessor_ad", instance=ad.instance,
                                  meaning="the ad of an osep that ran on this state file and is gone; "
                                          "this one's replaces it")
                continue
            if now - ad.heard > STALE_INTERVALS * ad.interval + STALE_GRACE:
                continue  # its lease has lapsed: that osep is gone
            if (ad.started, ad.instance) < (self.began, self.instance):
                return (f"another osep enforces this pool: {ad.name!r} ({ad.instance}, started "
                        f"{now - ad.started:.0f} s ago, heard from {now - ad.heard:.0f} s ago)")
        return None

    def _state_path(self) -> str:
        """The state file as this osep's ad names it (absolute, so that another osep can compare)."""
        state = self.loaded.daemon.state_file
        return os.path.abspath(state) if state is not None else ""

    def _predecessor(self, ad: OsepAd) -> bool:
        """Whether ``ad`` is provably this osep's own dead predecessor's: the same name, host and
        state file (whose lock this process holds, so no osep that is alive uses it), and its
        process gone. Such an ad blocks nothing: this osep's own replaces it."""
        host, _, pid = ad.instance.rpartition(":")
        mine, _, _ = self.instance.rpartition(":")
        if not (ad.state_file and ad.state_file == self._state_path() and ad.name == self.loaded.live.name
                and host == mine and pid.isascii() and pid.isdigit() and len(pid) <= 7):
            return False
        return int(pid) > 0 and not self._alive(int(pid))

    def _lift(self) -> None:
        """Lift every ceiling osep set (a dry run's, or a cycle's that stands aside): no hold."""
        try:
            self.pool.hold({})
        except PoolError as exc:
            self.log.error("lift_failed", problem=str(exc))

    def publish(self, report: CycleReport | None) -> None:
        if self.loaded.daemon.dry_run or not self.loaded.daemon.publish or self.rival is not None:
            # A SIGHUP into dry run (or to stop publishing), or another osep's lease: withdrawn.
            if self.published:
                self._withdraw()
            return
        metrics = self.enforcer.metrics
        attrs: dict[str, Any] = {
            "OSEPInstance": self.instance,
            "OSEPStarted": int(self.began),
            "OSEPState": "ok" if self.last_ok else "failing",
            "OSEPDryRun": self.loaded.daemon.dry_run,
            "OSEPCycles": self.enforcer.cycles,
            "OSEPInterval": self.loaded.interval,
            "OSEPStateFile": self._state_path(),
            "OSEPVacatesTotal": metrics.vacates,
            "OSEPPolicyViolation": metrics.violation,
            "OSEPLossOfCapacity": metrics.capacity_loss,
            "OSEPPolicyCost": metrics.cost,
        }
        if report is not None:
            plan = report.plan
            attrs["OSEPLastCycleTime"] = int(plan.time)
            # Every figure in the policy's unit (OSEPUnit); a count of jobs or slots says so.
            attrs["OSEPUnit"] = plan.unit.value
            if plan.size is not None:
                attrs["OSEPCapacity"] = plan.size
            attrs["OSEPSlots"] = plan.capacity
            attrs["OSEPLastVacates"] = report.vacated
            # Where the last cycle's time went, in wall seconds: OSEPLastCycleSeconds, and
            # OSEPLastQuerySeconds, OSEPLastTranslateSeconds... for its phases (see osep.timing).
            for phase in ("cycle", *PHASES):
                if phase in report.seconds:
                    attrs[f"OSEPLast{phase.capitalize()}Seconds"] = report.seconds[phase]
            attrs["OSEPOwners"] = [
                {"Name": v.owner, "Share": v.share, "Target": v.target, "Feasible": v.feasible,
                 "Running": v.holding, "Kept": v.active - v.holding, "Gap": v.gap,
                 "RunningJobs": v.running, "IdleJobs": v.idle, "VacatingJobs": v.vacating,
                 "KeptRooms": v.reserved}
                for v in plan.owners
            ]
        try:
            self.pool.publish(attrs)
        except PoolError as exc:
            self.log.warning("publish_failed", problem=str(exc))
        else:
            self.published = True

    def _withdraw(self) -> None:
        try:
            self.pool.withdraw()
        except PoolError as exc:
            self.log.warning("withdraw_failed", problem=str(exc))
        else:
            self.published = False

    def run(self, once: bool = False) -> int:
        self.record.started(once=once, dry_run=self.loaded.daemon.dry_run,
                            interval=self.loaded.interval)
        self._note_excess()
        quick = False
        try:
            while True:
                if self.reload_requested:
                    self.reload()
                began = self._clock()
                report = self.cycle()
                self.publish(report)
                if self.exporter is not None:
                    self.exporter.observe(report, not self.last_ok, self.loaded, self._wall())
                if once or self._stop.is_set():
                    break
                self._wait(self.loaded.interval - (self._clock() - began))
                if self._stop.is_set():
                    break
        except _Quit:
            quick = True
            self.log.warning("quit", reason="SIGQUIT")
        finally:
            self._shutdown(quick, keep_holds=once and self.loaded.daemon.state_file is not None)
        if self.left_behind is not None:
            return 1
        if once:
            return 0 if self.last_ok else 1
        return 0

    def _release(self, quick: bool) -> None:
        """Lift every ceiling osep set, trying again every few seconds for up to
        ``OSEP_RELEASE_TIMEOUT`` (once on SIGQUIT, or on a SIGQUIT while trying). What is still
        left then is said in a ``ceilings_left`` line, with the command that lifts it, and in
        :attr:`left_behind`: a stop that leaves a hold in force is not a clean stop."""
        deadline = self._clock() + (0.0 if quick else self.loaded.daemon.release_timeout)
        problem = ""
        try:
            while True:
                try:
                    self.pool.release(quick=quick)
                    return
                except PoolError as exc:
                    problem = str(exc)
                remaining = deadline - self._clock()
                if remaining <= 0:
                    break
                self.log.warning("release_failed", problem=problem,
                                 retry_in=min(RELEASE_RETRY, remaining))
                self._wait(min(RELEASE_RETRY, remaining))
        except _Quit:
            self.log.warning("quit", reason="SIGQUIT", during="lifting the ceilings")
        left = self.pool.ceilings_left()
        if not any(left.values()):
            return
        named = [f"{s} at {v}" for ceilings in left.values() for s, v in sorted(ceilings.items())]
        more = f" and {len(named) - 5} more" if len(named) > 5 else ""
        lapse = self.pool.lapse()
        until = (f"they lapse by themselves within {lapse:.0f} s" if lapse is not None
                 else "they stay until lifted")
        state = self.loaded.daemon.state_file
        command = "osep release" + (f" --state-file {state}" if state is not None else "")
        if self.loaded.daemon.pool:
            command += f" --pool {self.loaded.daemon.pool}"
        self.left_behind = (f"stopped with ceilings left in force ({problem}): "
                            f"{', '.join(named[:5])}{more}; {until}; lift them with: {command}")
        self.log.error("ceilings_left", problem=problem, ceilings=left, lapse=lapse, lift=command)

    def _shutdown(self, quick: bool, keep_holds: bool = False) -> None:
        if keep_holds:
            problem = self.pool.keep_state()
            if problem is not None:
                self.log.error("state_not_saved", problem=problem)
            self.log.info("holds_kept", until="the next run", state_file=str(self.loaded.daemon.state_file))
        else:
            self._release(quick)
        if self.published:
            self._withdraw()
        self.log.info("stopped", cycles=self.enforcer.cycles, vacates=self.enforcer.metrics.vacates)

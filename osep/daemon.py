"""The enforcement daemon: the loop every ``t`` seconds against one pool, and its signals.

Under condor_master (a ``DAEMON_LIST`` entry) or from cron with ``--once``:

- SIGHUP: re-read the HTCondor configuration and the policy file. A bad new configuration is
  rejected with one log line and the old one stays in force.
- SIGTERM: finish the cycle in progress, lift the ceilings osep set, withdraw the ad, exit 0.
- SIGQUIT: stop at once; only a single, unretried attempt to lift the ceilings is made.

``--once`` (cron) keeps its holds when it exits, if there is a state file to hand them to the next run:
lifting them would free the held owners exactly while the slots just vacated are negotiated.
``osep release`` lifts them for good (when the cron entry goes away).

A cycle that fails (a daemon down, a query refused after retries) is logged and skipped; the loop goes
on. With ``--once`` the exit status says whether the one cycle succeeded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any, Protocol

import structlog

from osep.actuator import Actuator, Limits
from osep.config import DaemonSettings
from osep.errors import ConfigError, OsepError, PoolError
from osep.loop import CycleReport, Enforcer
from osep.pool import Pool
from osep.policy import PolicySettings


class LiveLike(Pool, Protocol):
    """What the daemon needs of a pool beyond :class:`osep.pool.Pool`."""

    def release(self, quick: bool = False) -> None: ...
    def publish(self, attrs: dict[str, Any]) -> None: ...
    def withdraw(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Loaded:
    daemon: DaemonSettings
    policy: PolicySettings

    @property
    def effective_policy(self) -> PolicySettings:
        """The policy file's settings with the daemon's interval and p on top."""
        changes: dict[str, Any] = {}
        if self.daemon.interval is not None:
            changes["interval"] = self.daemon.interval
        if self.daemon.max_vacates is not None:
            changes["max_vacates"] = self.daemon.max_vacates
        return replace(self.policy, **changes)

    @property
    def limits(self) -> Limits:
        return Limits(
            dry_run=self.daemon.dry_run,
            max_vacates_per_cycle=self.effective_policy.max_vacates,
            max_vacates_per_job_per_hour=self.daemon.max_vacates_per_job_per_hour,
            min_run_time=self.daemon.min_run_time,
        )


class _Quit(Exception):
    """Raised from the SIGQUIT handler to leave whatever the loop is doing."""


class Daemon:
    def __init__(
        self,
        load: Callable[[], Loaded],
        pool: LiveLike,
        logger: Any = None,
        wait: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        initial: Loaded | None = None,
        on_reload: Callable[[Loaded], None] | None = None,
    ) -> None:
        self._load = load
        self._on_reload = on_reload
        self.loaded = initial if initial is not None else load()
        self.pool = pool
        self.log = logger if logger is not None else structlog.get_logger("osep")
        self.enforcer = Enforcer(
            self.loaded.effective_policy, Actuator(pool, self.loaded.limits), self.log
        )
        self._wake = threading.Event()
        self._wait = wait if wait is not None else self._sleep
        self._clock = clock
        self.stopping = False
        self.reload_requested = False
        self.last_ok: bool | None = None

    # -- signals --------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGHUP, self._on_hup)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGQUIT, self._on_quit)

    def _on_hup(self, signum: int, frame: FrameType | None) -> None:
        self.reload_requested = True
        self._wake.set()

    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
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
        self.loaded = loaded
        self.enforcer.settings = loaded.effective_policy
        self.enforcer.actuator.limits = loaded.limits
        if self._on_reload is not None:
            self._on_reload(loaded)  # the pool's own settings (collector, vacate mode, timeouts)
        self.log.info("reloaded", policy_file=str(loaded.daemon.policy_file),
                      interval=loaded.effective_policy.interval, dry_run=loaded.daemon.dry_run)
        return True

    def cycle(self) -> CycleReport | None:
        try:
            report = self.enforcer.run_cycle(self.pool)
        except PoolError as exc:
            self.last_ok = False
            self.log.error("cycle_failed", cycle=self.enforcer.cycles, problem=str(exc))
            return None
        self.last_ok = True
        return report

    def publish(self, report: CycleReport | None) -> None:
        if not self.loaded.daemon.publish:
            return
        tally = self.enforcer.tally
        attrs: dict[str, Any] = {
            "OSEPState": "ok" if self.last_ok else "failing",
            "OSEPDryRun": self.loaded.daemon.dry_run,
            "OSEPCycles": self.enforcer.cycles,
            "OSEPInterval": self.loaded.effective_policy.interval,
            "OSEPVacatesTotal": tally.vacates,
            "OSEPPolicyViolation": tally.violation,
            "OSEPLossOfCapacity": tally.capacity_loss,
            "OSEPPolicyCost": tally.cost,
        }
        if report is not None:
            plan = report.plan
            attrs["OSEPLastCycleTime"] = int(plan.time)
            attrs["OSEPCapacity"] = plan.capacity
            attrs["OSEPLastVacates"] = report.vacated
            attrs["OSEPOwners"] = [
                {"Name": v.owner, "Share": v.share, "Target": v.target, "Feasible": v.feasible,
                 "Running": v.running, "Idle": v.idle, "Reserved": v.reserved, "Gap": v.gap}
                for v in plan.owners
            ]
        try:
            self.pool.publish(attrs)
        except PoolError as exc:
            self.log.warning("publish_failed", problem=str(exc))

    def run(self, once: bool = False) -> int:
        self.log.info("started", once=once, dry_run=self.loaded.daemon.dry_run,
                      interval=self.loaded.effective_policy.interval)
        quick = False
        try:
            while True:
                if self.reload_requested:
                    self.reload()
                began = self._clock()
                report = self.cycle()
                self.publish(report)
                if once or self.stopping:
                    break
                self._wait(self.loaded.effective_policy.interval - (self._clock() - began))
                if self.stopping:
                    break
        except _Quit:
            quick = True
            self.log.warning("quit", reason="SIGQUIT")
        finally:
            self._shutdown(quick, keep_holds=once and self.loaded.daemon.state_file is not None)
        if once:
            return 0 if self.last_ok else 1
        return 0

    def _shutdown(self, quick: bool, keep_holds: bool = False) -> None:
        if keep_holds:
            self.log.info("holds_kept", until="the next run", state_file=str(self.loaded.daemon.state_file))
        else:
            try:
                self.pool.release(quick=quick)
            except PoolError as exc:
                self.log.error("release_failed", problem=str(exc))
        if self.loaded.daemon.publish:
            try:
                self.pool.withdraw()
            except PoolError as exc:
                self.log.warning("withdraw_failed", problem=str(exc))
        self.log.info("stopped", cycles=self.enforcer.cycles, vacates=self.enforcer.tally.vacates)


def loader(
    read_knobs: Callable[[], dict[str, str]],
    overrides: dict[str, Any],
    load_policy: Callable[[Any], PolicySettings],
) -> Callable[[], Loaded]:
    """A function that (re)loads the daemon settings and the policy file, for start-up and SIGHUP."""
    from osep.config import parse_knobs

    def load() -> Loaded:
        settings = parse_knobs(read_knobs(), overrides)
        if settings.policy_file is None:
            raise ConfigError("HTCondor configuration", "OSEP_POLICY_FILE",
                              "no policy file: set OSEP_POLICY_FILE or pass --policy-file")
        return Loaded(settings, load_policy(settings.policy_file))

    return load

"""The daemon's HTCondor configuration knobs (``OSEP_*``), and the settings built from them.

Knob values come as HTCondor gives them (strings); command-line options win over them
(:class:`Overrides`). :func:`run_settings` is the one place where knobs and the policy file become
the loop's, the actuator's and the live pool's settings.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osep import bounds as B
from osep.config.livepool import LiveSettings, default_name
from osep.config.policy import PolicyFile, load_policy
from osep.config.toml import check_number, check_text, show
from osep.core.policy import PolicySettings
from osep.core.tree import ShareTree
from osep.errors import ConfigError
from osep.log import LEVELS

if TYPE_CHECKING:  # the actuator (and the logging it brings) is imported when a daemon is set up
    from osep.act.actuator import Limits

KNOB_SOURCE = "HTCondor configuration"

# knob -> (field, kind). Every knob the daemon reads; docs/configuration.md's table is made from this one.
KNOBS: dict[str, tuple[str, str]] = {
    "OSEP_POLICY_FILE": ("policy_file", "path"),
    "OSEP_INTERVAL": ("interval", "seconds"),
    "OSEP_MAX_VACATES": ("max_vacates", "count"),
    "OSEP_DRY_RUN": ("dry_run", "bool"),
    "OSEP_LOG": ("log", "path"),
    "OSEP_LOG_LEVEL": ("log_level", "level"),
    "OSEP_VACATE_FAST": ("vacate_fast", "bool"),
    "OSEP_MIN_RUN_TIME": ("min_run_time", "seconds0"),
    "OSEP_MAX_VACATES_PER_JOB_PER_HOUR": ("max_vacates_per_job_per_hour", "count"),
    "OSEP_RESERVATION_TIMEOUT": ("reservation_timeout", "seconds"),
    "OSEP_RELEASE_TIMEOUT": ("release_timeout", "seconds0"),
    "OSEP_STATE_FILE": ("state_file", "path"),
    "OSEP_POOL": ("pool", "text"),
    "OSEP_NAME": ("name", "text"),
    "OSEP_PUBLISH": ("publish", "bool"),
    "OSEP_METRICS_PORT": ("metrics_port", "count"),
    "OSEP_METRICS_ADDRESS": ("metrics_address", "address"),
}
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}
# The bounds of the numeric knobs (docs/configuration.md's "Every bound" lists them).
KNOB_BOUNDS: dict[str, tuple[float, float]] = {
    "OSEP_INTERVAL": (B.MIN_INTERVAL, B.MAX_INTERVAL),
    "OSEP_MAX_VACATES": (0, B.MAX_VACATES),
    "OSEP_MIN_RUN_TIME": (0, B.MAX_SECONDS),
    "OSEP_MAX_VACATES_PER_JOB_PER_HOUR": (0, B.MAX_VACATES_PER_JOB_PER_HOUR),
    "OSEP_RESERVATION_TIMEOUT": (B.MIN_INTERVAL, B.MAX_INTERVAL),
    "OSEP_RELEASE_TIMEOUT": (0, B.MAX_INTERVAL),
    "OSEP_METRICS_PORT": (0, B.MAX_PORT),
}
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = 40  # characters: longer is not a number a knob needs
# A host name as RFC 1123 spells one: dot-separated labels of letters, digits and inner hyphens.
_HOST_NAME = re.compile(r"(?=.{1,253}\.?\Z)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(?:\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")
DEFAULT_METRICS_ADDRESS = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class DaemonSettings:
    """How the daemon runs, as opposed to what the policy decides (that is the policy file)."""

    policy_file: Path | None = None
    interval: float | None = None  # None: the policy file's interval
    max_vacates: int | None = None  # None: the policy file's (or the largest share)
    dry_run: bool = False
    log: Path | None = None
    log_level: str = "info"
    vacate_fast: bool = False
    min_run_time: float | None = None  # None: the policy file's min_run_time
    max_vacates_per_job_per_hour: int | None = None
    reservation_timeout: float = 600.0
    # How long a stop keeps trying to lift the ceilings osep set (0: one try) before it gives up,
    # says which are left and exits non-zero.
    release_timeout: float = 60.0
    state_file: Path | None = None
    pool: str | None = None
    name: str | None = None
    publish: bool = True
    # The Prometheus endpoint (osep.enforce.exporter): 0 serves none. Local only unless a site says.
    metrics_port: int = 0
    metrics_address: str = DEFAULT_METRICS_ADDRESS


@dataclass(frozen=True, slots=True)
class Overrides:
    """Command-line options that stand in for knobs; None: not given, the knob (or default) holds."""

    policy_file: Path | None = None
    interval: float | None = None
    max_vacates: int | None = None
    dry_run: bool | None = None
    log: Path | None = None
    vacate_fast: bool | None = None
    min_run_time: float | None = None
    state_file: Path | None = None
    pool: str | None = None
    metrics_port: int | None = None
    metrics_address: str | None = None


def parse_knobs(values: Mapping[str, str], overrides: Overrides = Overrides()) -> DaemonSettings:
    """Validate knob values (strings, as HTCondor gives them); ``overrides`` win over knobs."""
    fields: dict[str, Any] = {}
    for knob, raw in values.items():
        if knob not in KNOBS:
            continue
        name, kind = KNOBS[knob]
        fields[name] = _knob_value(knob, kind, raw.strip())
    for f in dataclasses.fields(overrides):
        value = getattr(overrides, f.name)
        if value is not None:
            fields[f.name] = value
    return DaemonSettings(**fields)


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything ``osep run`` needs, built in one place from the knobs and the policy file: the
    policy the loop decides with and how often, the actuator's limits and the live pool's settings."""

    daemon: DaemonSettings
    policy: PolicySettings
    interval: float
    limits: Limits
    live: LiveSettings
    excess: str = "fairshare"  # the policy file's; a live pool's excess is its negotiator's


# A ceiling on a negotiator with time-limited ceilings lasts this many cycles unrenewed (at least
# LEASE_LEAST seconds: the negotiator looks for lapsed ones at the start of its own cycles).
LEASE_CYCLES = 4
LEASE_LEAST = 60.0


def live_settings(daemon: DaemonSettings, retries: int = 3,
                  policy: PolicySettings | None = None, interval: float | None = None) -> LiveSettings:
    """The live pool's settings; with an owner tree in ``policy``, jobs are named by it. With the
    loop's ``interval``, its ceilings are leases of LEASE_CYCLES cycles where the negotiator takes
    them, so that a hold ends by itself should osep die."""
    shares = policy.shares if policy is not None else None
    return LiveSettings(
        pool=daemon.pool,
        vacate_fast=daemon.vacate_fast,
        reservation_timeout=daemon.reservation_timeout,
        retries=retries,
        state_file=daemon.state_file,
        lease=max(LEASE_LEAST, LEASE_CYCLES * interval) if interval is not None else None,
        name=daemon.name or default_name(),
        naming=shares.owner_of if isinstance(shares, ShareTree) else None,
    )


def run_settings(daemon: DaemonSettings, policy_file: PolicyFile) -> RunSettings:
    """The knobs (and options) on top of the policy file: ``OSEP_INTERVAL`` replaces its interval,
    ``OSEP_MAX_VACATES`` its p, which the actuator also enforces as its cycle cap, and
    ``OSEP_MIN_RUN_TIME`` its min_run_time."""
    from osep.act.actuator import Limits

    policy = policy_file.settings
    if daemon.max_vacates is not None:
        policy = replace(policy, max_vacates=daemon.max_vacates)
    interval = daemon.interval if daemon.interval is not None else policy_file.interval
    min_run_time = daemon.min_run_time if daemon.min_run_time is not None else policy_file.min_run_time
    return RunSettings(
        daemon=daemon,
        policy=policy,
        interval=interval,
        limits=Limits(
            dry_run=daemon.dry_run,
            max_vacates_per_cycle=policy.max_vacates,
            max_vacates_per_job_per_hour=daemon.max_vacates_per_job_per_hour,
            min_run_time=min_run_time,
        ),
        live=live_settings(daemon, policy=policy, interval=interval),
        excess=policy_file.excess.value,
    )


def load_run_settings(knobs: Mapping[str, str], overrides: Overrides) -> RunSettings:
    """Validate the knobs and load the policy file they name (start-up and every SIGHUP)."""
    daemon = parse_knobs(knobs, overrides)
    if daemon.policy_file is None:
        raise ConfigError(KNOB_SOURCE, "OSEP_POLICY_FILE",
                          "no policy file: set OSEP_POLICY_FILE or pass --policy-file")
    return run_settings(daemon, load_policy(daemon.policy_file))


def _knob_value(knob: str, kind: str, raw: str) -> Any:
    def fail(reason: str) -> ConfigError:
        return ConfigError(KNOB_SOURCE, knob, reason)

    if kind == "bool":
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise fail(f"expected true or false, got {show(raw)}")
    if kind in ("seconds", "seconds0"):
        if len(raw) > _NUMBER_TEXT or not _DECIMAL.fullmatch(raw):
            raise fail(f"expected a number of seconds, got {show(raw)}")
        low, high = KNOB_BOUNDS[knob]
        return check_number(float(raw), fail, positive=kind == "seconds", minimum=low, maximum=high)
    if kind == "count":
        if len(raw) > _NUMBER_TEXT or not _WHOLE.fullmatch(raw):
            raise fail(f"expected a whole number, got {show(raw)}")
        low, high = KNOB_BOUNDS[knob]
        return check_number(int(raw), fail, integer=True, minimum=low, maximum=high)
    if kind == "level":
        if raw.lower() not in LEVELS:
            raise fail(f"expected one of {', '.join(LEVELS)}, got {show(raw)}")
        return raw.lower()
    if kind == "address":
        return check_address(raw, fail)
    if kind == "path":
        if not raw:
            raise fail("is empty")
        check_text(raw, fail, B.MAX_PATH, printable=True)
        return Path(raw)
    return check_text(raw, fail, B.MAX_NAME, printable=True) or None


def check_address(raw: str, fail: Callable[[str], ConfigError]) -> str:
    """An address to listen on: an IP address (``127.0.0.1``, ``0.0.0.0`` for every IPv4 interface,
    ``::``) or a host name, which is looked up when the endpoint starts; empty: the default,
    :data:`DEFAULT_METRICS_ADDRESS` (HTCondor gives a knob set to nothing as empty)."""
    if not raw:
        return DEFAULT_METRICS_ADDRESS
    if len(raw) <= B.MAX_NAME:
        try:
            return str(ipaddress.ip_address(raw))
        except ValueError:
            if raw.isascii() and _HOST_NAME.fullmatch(raw):
                return raw
    raise fail(f"expected an IP address (such as 127.0.0.1 or 0.0.0.0) or a host name, got {show(raw)}")

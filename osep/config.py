"""Loading and validating policy files.

A policy file is TOML with two tables::

    [policy]
    target = "owner"           # or "feasible"
    victim_order = "wallclock" # or "lost-work"
    max_vacates = 10           # p; omit for the largest owner share
    interval = 300             # t, seconds between cycles
    unit = "slots"

    [owners]
    atlas = 10                 # slots contributed; or "30%" of the pool (all owners alike)
    cms = { share = 10 }       # table form, room for more per-owner settings later

Everything is checked on load into frozen objects. Any problem raises :class:`ConfigError` naming the
file, the dotted key and what is wrong; nothing half-loaded is ever returned.
"""

from __future__ import annotations

import enum
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from osep.errors import ConfigError
from osep.model import Target, VictimOrder
from osep.policy import PolicySettings
from osep.shares import ShareTable

E = TypeVar("E", bound=enum.Enum)
_MISSING: Any = object()


def read_toml(path: Path | str) -> dict[str, Any]:
    """Parse a TOML file, turning I/O and syntax errors into ConfigError."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(path, None, "no such file") from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, None, f"not valid TOML: {exc}") from None


class Table:
    """A TOML table being validated: typed getters that know their file and key, and a final check
    that no key was left unread (so that a typo is an error, not a silently ignored setting)."""

    def __init__(self, path: Path | str | None, data: Mapping[str, Any], prefix: str = "") -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(path, prefix or None, "expected a table")
        self.path = path
        self.data = data
        self.prefix = prefix
        self._seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str | None, reason: str) -> ConfigError:
        return ConfigError(self.path, self.key(name) if name else (self.prefix or None), reason)

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        self._seen.add(name)
        if name not in self.data:
            if default is _MISSING:
                raise self.error(name, "missing")
            return default
        return self.data[name]

    def number(
        self,
        name: str,
        default: Any = _MISSING,
        *,
        minimum: float | None = None,
        integer: bool = False,
        positive: bool = False,
    ) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        kind = "a whole number" if integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(name, f"expected {kind}, got {_show(value)}")
        if integer and not isinstance(value, int):
            raise self.error(name, f"expected {kind}, got {_show(value)}")
        if not math.isfinite(value):
            raise self.error(name, f"expected a finite number, got {value}")
        if positive and value <= 0:
            raise self.error(name, f"must be greater than 0, got {value}")
        if minimum is not None and value < minimum:
            raise self.error(name, f"must be at least {minimum:g}, got {value}")
        return value

    def string(self, name: str, default: Any = _MISSING) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, got {_show(value)}")
        return value

    def choice(self, name: str, kind: type[E], default: E) -> E:
        value = self.raw(name, _MISSING if default is None else default.value)
        return parse_choice(value, kind, lambda reason: self.error(name, reason))

    def table(self, name: str, *, required: bool = False) -> Table:
        value = self.raw(name, _MISSING if required else {})
        if not isinstance(value, Mapping):
            raise self.error(name, f"expected a table, got {_show(value)}")
        return Table(self.path, value, self.key(name))

    def tables(self, name: str) -> list[Table]:
        """An array of tables (``[[name]]``)."""
        value = self.raw(name, [])
        if not isinstance(value, list):
            raise self.error(name, f"expected an array of tables, got {_show(value)}")
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.error(f"{name}[{index}]", f"expected a table, got {_show(item)}")
            out.append(Table(self.path, item, f"{self.key(name)}[{index}]"))
        return out

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self._seen)
        if unknown:
            raise self.error(unknown[0], "unknown key" + _suggest(unknown[0], self._seen))


def parse_choice(value: Any, kind: type[E], fail: Callable[[str], ConfigError]) -> E:
    allowed = [m.value for m in kind]
    if not isinstance(value, str) or value not in allowed:
        raise fail(f"expected one of {', '.join(allowed)}; got {_show(value)}")
    return kind(value)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


def _suggest(word: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_owners(table: Table) -> ShareTable:
    """Owner shares: all absolute (slots) or all percentages of the pool, never a mix."""
    shares: dict[str, float] = {}
    kinds: dict[str, str] = {}
    for owner in table.data:
        value = table.raw(owner)
        if isinstance(value, Mapping):
            sub = Table(table.path, value, table.key(owner))
            value = sub.raw("share")
            sub.finish()
        key = table.key(owner)
        if isinstance(value, str) and value.strip().endswith("%"):
            text = value.strip()[:-1].strip()
            try:
                number = float(text)
            except ValueError:
                raise ConfigError(table.path, key, f"not a percentage: {value!r}") from None
            kinds[owner] = "percent"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
            kinds[owner] = "slots"
        else:
            raise ConfigError(
                table.path, key, f"a share is a number of slots or a percentage like \"30%\"; got {_show(value)}"
            )
        if not math.isfinite(number) or number < 0:
            raise ConfigError(table.path, key, f"a share cannot be negative, got {value!r}")
        shares[owner] = number
    if len(set(kinds.values())) > 1:
        slots = sorted(o for o, k in kinds.items() if k == "slots")
        pct = sorted(o for o, k in kinds.items() if k == "percent")
        raise ConfigError(
            table.path,
            table.key(pct[0]),
            f"shares of different units: {', '.join(pct)} in percent but {', '.join(slots)} in slots",
        )
    percent = bool(kinds) and next(iter(kinds.values())) == "percent"
    if percent and sum(shares.values()) > 100.0 + 1e-9:
        raise ConfigError(
            table.path, table.prefix, f"percentages add up to {sum(shares.values()):g}%, more than 100%"
        )
    return ShareTable(shares=shares, percent=percent)


def parse_policy(policy: Table, owners: Table) -> PolicySettings:
    unit = policy.string("unit", "slots")
    if unit != "slots":
        raise policy.error("unit", f"only \"slots\" is supported by this version; got {unit!r}")
    settings = PolicySettings(
        shares=parse_owners(owners),
        target=policy.choice("target", Target, Target.OWNER),
        victim_order=policy.choice("victim_order", VictimOrder, VictimOrder.WALLCLOCK),
        max_vacates=policy.number("max_vacates", None, minimum=0, integer=True),
        interval=float(policy.number("interval", 300.0, positive=True)),
    )
    policy.finish()
    return settings


def load_policy(path: Path | str) -> PolicySettings:
    """Read and validate a policy file."""
    top = Table(path, read_toml(path))
    settings = parse_policy(top.table("policy"), top.table("owners", required=True))
    top.finish()
    return settings


# -- the daemon's HTCondor knobs --------------------------------------------------------------

KNOB_SOURCE = "HTCondor configuration"

# knob -> (field, kind). Every knob the daemon reads; README's table lists the same.
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
    "OSEP_STATE_FILE": ("state_file", "path"),
    "OSEP_POOL": ("pool", "text"),
    "OSEP_NAME": ("name", "text"),
    "OSEP_PUBLISH": ("publish", "bool"),
}
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


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
    min_run_time: float = 0.0
    max_vacates_per_job_per_hour: int | None = None
    reservation_timeout: float = 600.0
    state_file: Path | None = None
    pool: str | None = None
    name: str | None = None
    publish: bool = True


def parse_knobs(values: Mapping[str, str], overrides: Mapping[str, Any] | None = None) -> DaemonSettings:
    """Validate knob values (strings, as HTCondor gives them); ``overrides`` (from the command line,
    None meaning "not given") win over knobs."""
    fields: dict[str, Any] = {}
    for knob, raw in values.items():
        if knob not in KNOBS:
            continue
        name, kind = KNOBS[knob]
        fields[name] = _knob_value(knob, kind, raw.strip())
    for name, value in (overrides or {}).items():
        if value is not None:
            fields[name] = value
    return DaemonSettings(**fields)


def _knob_value(knob: str, kind: str, raw: str) -> Any:
    def fail(reason: str) -> ConfigError:
        return ConfigError(KNOB_SOURCE, knob, reason)

    if kind == "bool":
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise fail(f"expected true or false, got {raw!r}")
    if kind in ("seconds", "seconds0"):
        try:
            value = float(raw)
        except ValueError:
            raise fail(f"expected a number of seconds, got {raw!r}") from None
        if not math.isfinite(value) or value < 0 or (kind == "seconds" and value == 0):
            raise fail(f"must be {'at least 0' if kind == 'seconds0' else 'greater than 0'}, got {raw}")
        return value
    if kind == "count":
        try:
            value = int(raw)
        except ValueError:
            raise fail(f"expected a whole number, got {raw!r}") from None
        if value < 0:
            raise fail(f"must be at least 0, got {value}")
        return value
    if kind == "level":
        from osep.log import LEVELS

        if raw.lower() not in LEVELS:
            raise fail(f"expected one of {', '.join(LEVELS)}, got {raw!r}")
        return raw.lower()
    if kind == "path":
        if not raw:
            raise fail("is empty")
        return Path(raw)
    return raw or None

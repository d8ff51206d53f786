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

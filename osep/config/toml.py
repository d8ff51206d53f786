"""Reading TOML files into validated values: every error names the file, the dotted key and the
reason, and a key nobody read is an error (with a "did you mean" where one is close)."""

from __future__ import annotations

import difflib
import enum
import math
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from osep.errors import ConfigError

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
            raise self.error(name, f"expected {kind}, got {show(value)}")
        if integer and not isinstance(value, int):
            raise self.error(name, f"expected {kind}, got {show(value)}")
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
            raise self.error(name, f"expected a string, got {show(value)}")
        return value

    def choice(self, name: str, kind: type[E], default: E) -> E:
        value = self.raw(name, _MISSING if default is None else default.value)
        return parse_choice(value, kind, lambda reason: self.error(name, reason))

    def table(self, name: str, *, required: bool = False) -> Table:
        value = self.raw(name, _MISSING if required else {})
        if not isinstance(value, Mapping):
            raise self.error(name, f"expected a table, got {show(value)}")
        return Table(self.path, value, self.key(name))

    def tables(self, name: str) -> list[Table]:
        """An array of tables (``[[name]]``)."""
        value = self.raw(name, [])
        if not isinstance(value, list):
            raise self.error(name, f"expected an array of tables, got {show(value)}")
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.error(f"{name}[{index}]", f"expected a table, got {show(item)}")
            out.append(Table(self.path, item, f"{self.key(name)}[{index}]"))
        return out

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self._seen)
        if unknown:
            raise self.error(unknown[0], "unknown key" + _suggest(unknown[0], self._seen))


def parse_choice(value: Any, kind: type[E], fail: Callable[[str], ConfigError]) -> E:
    allowed = [m.value for m in kind]
    if not isinstance(value, str) or value not in allowed:
        raise fail(f"expected one of {', '.join(allowed)}; got {show(value)}")
    return kind(value)


def show(value: Any) -> str:
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
    close = difflib.get_close_matches(word, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""

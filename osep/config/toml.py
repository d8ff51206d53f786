"""Reading TOML files into validated values: every error names the file, the dotted key (or the line)
and the reason, and a key nobody read is an error (with a "did you mean" where one is close).

Nothing in a file reaches an error message unescaped: keys and values are shown with control and
other invisible characters escaped, and cut short when long, so that every error stays one line.
"""

from __future__ import annotations

import datetime
import difflib
import enum
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from osep.bounds import MAX_FILE_BYTES, MAX_KEY_PARTS, MAX_NAME, MAX_TABLES
from osep.errors import ConfigError
from osep.files import read_regular, unreadable

E = TypeVar("E", bound=enum.Enum)
_MISSING: Any = object()
_SHOWN = 60  # characters of a value from a file shown in an error
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_POSITION = re.compile(r"^(.*) \((?:at line (\d+), column (\d+)|at end of document)\)$")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# What makes tomllib slow (its time grows with the square of the tables and of the parts of dotted
# keys): counted before it parses. A line starting with "[" opens a table (or continues an array).
_TABLE_LINE = re.compile(r"^[ \t]*\[", re.MULTILINE)
_KEY_PART = r"""(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_DEEP_KEY = re.compile(rf"(?:^|[\[{{,])[ \t]*+{_KEY_PART}(?:[ \t]*+\.[ \t]*+{_KEY_PART}){{{MAX_KEY_PARTS},}}",
                       re.MULTILINE)


def escape(text: str, limit: int | None = None, quote: str = "") -> str:
    """``text`` with every character that is not printable (controls, terminal escapes, line and
    paragraph separators, invisible formatting) written as a backslash escape, and ``quote`` and
    backslashes escaped too when quoting; cut after ``limit`` characters, saying how long it was."""
    out = []
    for char in text if limit is None else text[:limit]:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif quote and char in (quote, "\\"):
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                       else f"\\U{code:08x}")
    if limit is not None and len(text) > limit:
        out.append(f"... ({len(text):,} characters)")
    return "".join(out)


def key_text(name: str) -> str:
    """A key from a file as a TOML key: bare when it can be, else quoted and escaped."""
    if _BARE_KEY.fullmatch(name):
        return name
    return f'"{escape(name, _SHOWN, quote=chr(34))}"'


_TOML_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """``text`` written as a TOML basic string, whole (never cut short): what osep writes into a
    file, where :func:`key_text` is for showing a key in a message. Characters a TOML string may
    not hold raw (controls) and invisible ones are written as ``\\uXXXX`` escapes, so the line stays
    one line; a lone surrogate has no TOML form at all (ValueError)."""
    out = ['"']
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise ValueError(f"a lone surrogate (U+{ord(char):04X}) cannot be written in TOML")
        else:
            code = ord(char)
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def toml_key(name: str) -> str:
    """One part of a key, for writing TOML: bare when it can be, else a quoted string."""
    return name if _BARE_KEY.fullmatch(name) else toml_string(name)


def read_toml(path: Path | str) -> dict[str, Any]:
    """Parse a TOML file, turning I/O, encoding and syntax errors into one-line ConfigErrors."""
    path = Path(path)
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(path, f"line {line}, column {column}",
                          f"not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    deep = _DEEP_KEY.search(text)
    if deep is not None:
        line = text.count("\n", 0, deep.start()) + 1
        raise ConfigError(path, f"line {line}", f"a dotted key of more than {MAX_KEY_PARTS} parts")
    if len(_TABLE_LINE.findall(text)) > MAX_TABLES:
        raise ConfigError(path, None, f"more than {MAX_TABLES:,} tables (lines starting with \"[\")")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _POSITION.match(str(exc))
        if match is None:
            raise ConfigError(path, None, f"not valid TOML: {escape(str(exc), 200)}") from None
        where = f"line {match[2]}, column {match[3]}" if match[2] else "end of file"
        raise ConfigError(path, where, f"not valid TOML: {escape(match[1], 200)}") from None
    except RecursionError:
        raise ConfigError(path, None, "not valid TOML: arrays or inline tables nested too deeply") from None
    except ValueError:  # a decimal integer past Python's digit limit escapes tomllib as a ValueError
        raise ConfigError(path, None, "not valid TOML: a number with too many digits") from None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes: a regular file of at most MAX_FILE_BYTES (see :mod:`osep.files`)."""
    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except (OSError, ValueError) as exc:
        raise ConfigError(path, None, unreadable(exc)) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(path, None, f"larger than {MAX_FILE_BYTES:,} bytes: not a policy or scenario")
    return data


def bound_text(value: float) -> str:
    """A bound as the documentation states it: 10,000, 0.001, 86,400."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def number_text(value: float) -> str:
    """A number from a file, shown safely however large (Python refuses to print an int of more
    than 4,300 digits)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"a whole number of about {math.floor(value.bit_length() * math.log10(2)) + 1:,} digits"
    return repr(value)


def check_number(
    value: Any,
    fail: Callable[[str], ConfigError],
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    integer: bool = False,
    positive: bool = False,
) -> Any:
    """``value`` if it is a finite number (whole if ``integer``) within the bounds; else ``fail``."""
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"expected {kind}, got {show(value)}")
    if integer and not isinstance(value, int):
        raise fail(f"expected {kind}, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(f"expected a finite number, got {value!r}")
    if positive and value <= 0:
        raise fail(f"must be greater than 0, got {number_text(value)}")
    if minimum is not None and value < minimum:
        raise fail(f"must be at least {bound_text(minimum)}, got {number_text(value)}")
    if maximum is not None and value > maximum:
        raise fail(f"must be at most {bound_text(maximum)}, got {number_text(value)}")
    return value


def check_text(value: Any, fail: Callable[[str], ConfigError], limit: int, *, printable: bool = False) -> str:
    """``value`` if it is a string of at most ``limit`` characters (all printable if asked)."""
    if not isinstance(value, str):
        raise fail(f"expected a string, got {show(value)}")
    if len(value) > limit:
        raise fail(f"must be at most {limit:,} characters, got {len(value):,}")
    if printable and not value.isprintable():
        raise fail(f"must be printable text, without control or invisible characters; got {show(value)}")
    return value


def check_name(value: Any, fail: Callable[[str], ConfigError], what: str = "an owner's name") -> str:
    """A name shown in reports, tables and logs: 1 to MAX_NAME printable characters."""
    if not isinstance(value, str):
        raise fail(f"expected {what}, got {show(value)}")
    if not value:
        raise fail(f"{what} must not be empty")
    if len(value) > MAX_NAME:
        raise fail(f"{what} is at most {MAX_NAME} characters, got {len(value):,}")
    if not value.isprintable():
        raise fail(f"{what} must be printable, without control or invisible characters; got {show(value)}")
    return value


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

    def key(self, name: str, index: int | None = None) -> str:
        """The dotted key of ``name`` (a key as the file has it), or of its ``index``-th item."""
        text = key_text(name) + (f"[{index}]" if index is not None else "")
        return f"{self.prefix}.{text}" if self.prefix else text

    def error(self, name: str | None, reason: str, index: int | None = None) -> ConfigError:
        return ConfigError(self.path, self.key(name, index) if name is not None else (self.prefix or None),
                           reason)

    def failing(self, name: str, index: int | None = None) -> Callable[[str], ConfigError]:
        """What makes an error about ``name`` (or its ``index``-th item) from a reason."""
        return lambda reason: self.error(name, reason, index)

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
        maximum: float | None = None,
        integer: bool = False,
        positive: bool = False,
    ) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        return check_number(value, self.failing(name), minimum=minimum,
                            maximum=maximum, integer=integer, positive=positive)

    def string(self, name: str, default: Any = _MISSING, *, limit: int = MAX_NAME,
               printable: bool = False) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        return check_text(value, self.failing(name), limit, printable=printable)

    def choice(self, name: str, kind: type[E], default: E) -> E:
        value = self.raw(name, _MISSING if default is None else default.value)
        return parse_choice(value, kind, self.failing(name))

    def table(self, name: str, *, required: bool = False) -> Table:
        value = self.raw(name, _MISSING if required else {})
        if not isinstance(value, Mapping):
            raise self.error(name, f"expected a table, got {show(value)}")
        return Table(self.path, value, self.key(name))

    def tables(self, name: str, limit: int | None = None) -> list[Table]:
        """An array of tables (``[[name]]``), at most ``limit`` of them."""
        value = self.raw(name, [])
        if not isinstance(value, list):
            raise self.error(name, f"expected an array of tables, got {show(value)}")
        if limit is not None and len(value) > limit:
            raise self.error(name, f"at most {limit:,} tables, got {len(value):,}")
        out = []
        for index, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.error(name, f"expected a table, got {show(item)}", index)
            out.append(Table(self.path, item, self.key(name, index)))
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
    """A value from a file, for an error message: short, on one line, escaped."""
    if isinstance(value, str):
        return f"'{escape(value, _SHOWN, quote=chr(39))}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, datetime.date | datetime.time):
        return "a date or time"
    return f"a value of type {type(value).__name__}"


def _suggest(word: str, known: set[str]) -> str:
    if len(word) > 100:
        return ""
    close = difflib.get_close_matches(word, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""

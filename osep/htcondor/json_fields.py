"""Checks of the fields of a parsed JSON document (the state file's), each naming the field at fault.

A failed check raises :class:`Bad` with the dotted key of the field (``state.vacates[3][5]``) and the
reason, which quotes the value found short and printable, whatever it was (a 5 MB string, a newline,
a terminal escape): the reader turns it into its one-line error.
"""

from __future__ import annotations

from typing import Any


class Bad(Exception):
    """A field fails a check: ``key`` (dotted, empty for the whole document) and why."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


_KINDS: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def field(doc: dict[str, Any], where: str, key: str, kind: type) -> Any:
    """``doc[key]``, which must be there and of ``kind`` (dict, list or str)."""
    at = f"{where}.{key}" if where else key
    if key not in doc:
        raise Bad(at, "is missing")
    value = doc[key]
    if not isinstance(value, kind):
        raise Bad(at, f"expected {_KINDS[kind]}, got {kind_of(value)}")
    return value


def known_keys(doc: dict[str, Any], where: str, allowed: set[str]) -> None:
    unknown = sorted(k for k in doc if k not in allowed)
    if unknown:
        raise Bad(where, f"unknown key {show(unknown[0])}")


def items(value: Any, at: str, length: int) -> list[Any]:
    """``value``, which must be a list of ``length`` items."""
    if not isinstance(value, list) or len(value) != length:
        raise Bad(at, f"expected a list of {length} items, got {kind_of(value)}")
    return value


def name(value: Any, at: str, longest: int, empty: bool = False) -> str:
    """``value``, which must be a string of printable characters, at most ``longest`` of them (and
    at least one unless ``empty``)."""
    if not isinstance(value, str) or len(value) > longest or (not value and not empty) \
            or not value.isprintable():
        raise Bad(at, f"expected a name of {0 if empty else 1} to {longest} printable characters, "
                  f"got {kind_of(value)}")
    return value


def whole(value: Any) -> bool:
    """Whether ``value`` is an integer (true and false, which Python counts as such, are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return f"the number {show(value)}"
    if isinstance(value, str):
        return f"the string {show(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object"


def show(value: Any) -> str:
    """A value from the file as a log line may show it: short and printable."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def label(key: str) -> str:
    """A key from the file in a dotted key: as it is if short and printable, else quoted."""
    return key if key and len(key) <= 40 and key.isprintable() else show(key)


def join(*parts: str) -> str:
    return ".".join(p for p in parts if p)

"""JSON from a file anyone may have written (the state file), parsed within bounds of depth, size and
number, so that whatever it holds ends in :class:`Refused` (one reason) and never in a
``RecursionError``, a ``MemoryError`` or a value the rest of osep cannot handle.

:func:`json.loads` alone is not safe for that: it recurses once per level of nesting (977 ``[`` end
the interpreter's stack), builds a Python object of 50 to 70 bytes for every ``[]`` or ``""`` of two
or three bytes (a 64 MiB file of ``[],`` took 1.8 GB), reads ``1e400`` as an infinite float (which
no re-serialisation, the checksum's included, takes back), raises on integers of more than 4,300
digits with advice about ``sys.set_int_max_str_digits``, and keeps the last of two equal keys. So the
bytes are first scanned, at the speed of the regular-expression and bytes methods, for how deep they
nest and how many values they hold, and only then parsed, with hooks that refuse what no file osep
writes holds.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# What the scan looks at: a JSON string (from its quote to the closing one, or to the end of the bytes
# if there is none, so that each is matched once and the scan stays linear whatever the quotes and
# backslashes), an opening bracket, a closing one.
_TOKEN = re.compile(rb'("(?:[^"\\]|\\.)*+(?:"|\\?\Z))|([\[{])|[\]}]', re.DOTALL)
MAX_DIGITS = 20  # in an integer: 2^64 has 20


class Refused(ValueError):
    """Not JSON, or JSON beyond the bounds given; the message is the reason."""


def loads(raw: bytes, max_depth: int, max_tokens: int) -> Any:
    """The JSON document ``raw`` (UTF-8) holds; :class:`Refused` if it is not one, nests arrays and
    objects more than ``max_depth`` deep, has more than ``max_tokens`` tokens (see :func:`_scan`), an
    object with two equal keys, a number out of a float's range, an integer of more than
    :data:`MAX_DIGITS` digits, or ``NaN``/``Infinity``.

    Parsing costs at most about 100 bytes per token, plus the text twice; the scan before it
    allocates nothing per token and stops at the first level or token too many."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"is not UTF-8 text (byte {exc.start})") from None
    _scan(raw, max_depth, max_tokens)
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_float, parse_int=_int,
                          object_pairs_hook=_object)
    except Refused:
        raise
    except RecursionError:  # not expected after the scan; kept as the last line of defence
        raise Refused(f"is not JSON osep wrote: nested more than {max_depth} levels deep") from None
    except ValueError as exc:  # JSONDecodeError
        raise Refused(f"is not JSON: {exc}") from None


def _scan(raw: bytes, max_depth: int, max_tokens: int) -> None:
    """Refuse ``raw`` if its brackets, outside strings, nest more than ``max_depth`` deep, or if its
    tokens are more than ``max_tokens``: strings, opening brackets, commas and colons, which bound
    the values and keys json.loads would make (every number and literal follows a comma or a colon,
    or is alone). Commas and colons are counted in strings too, a cheap count that overshoots by few
    for names as HTCondor makes them. Where the brackets stop matching, json.loads fails, never
    deeper than counted here."""
    tokens = raw.count(b",") + raw.count(b":") + 1
    depth = 0
    for token in _TOKEN.finditer(raw):
        kind = token.lastindex
        if kind is None:
            depth -= 1
            if depth < 0:
                break  # a closing bracket too many: json.loads fails here
            continue
        tokens += 1
        if tokens > max_tokens:
            break
        if kind == 2:
            depth += 1
            if depth > max_depth:
                raise Refused(f"is not JSON osep wrote: nested more than {max_depth} levels deep")
    if tokens > max_tokens:
        raise Refused(f"is not JSON osep wrote: more than {max_tokens} strings, opening brackets, "
                      "commas and colons")


# The hooks json.loads calls on what it reads: a refusal ends the parse.

def _no_constant(name: str) -> Any:
    raise Refused(f"is not JSON: {name} is not a number JSON allows")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refused(f"is not JSON osep wrote: the number {_short(text)} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise Refused(f"is not JSON osep wrote: the number {_short(text)} has more than "
                      f"{MAX_DIGITS} digits")
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise Refused(f"is not JSON osep wrote: the key {_short(repr(key))} is in an object "
                              "twice")
            seen.add(key)
    return doc


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."

"""Damaged and hostile event logs and decision logs, through the real command (click's runner).

Every case is built from the recorded logs in tests/data/ by a seeded generator: flipped bytes and
bits, cuts, invalid UTF-8, binary junk, events duplicated, dropped or shuffled, hostile times and
job ids, wrong types in every field, NaN and infinities, deep JSON, huge lines, empty and binary
files, directories and missing files. Whatever the input, the command must end with exit status 0 or
2 and no traceback, within a per-case guard (a case that takes longer counts as a hang), and say
what it found in a few lines: one ``osep: error: FILE: ...`` line, or warnings that count the damage
(one line per kind of damage, never one per bad record).

The figures (cases per kind, tracebacks, hangs, the slowest case) are printed: run with ``-s``.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import Result

from builders import cli_runner
from osep.ui.cli import cli

DATA = Path(__file__).parents[1] / "data"
POLICY = str(DATA / "share-back.policy.toml")
EVENT_LOGS = [(DATA / f"{n}.events.log").read_bytes() for n in ("share-back", "no-enforcement")]
DECISIONS = (DATA / "share-back.decisions.jsonl").read_bytes()

SEED = 20261123
CASES = 1200  # of each kind
GUARD = 60  # seconds: a case still running after this long is a hang
MIB = 1 << 20
MAX_STDERR_LINES = 12  # what one damaged case may print: a handful of counted warnings at most
MAX_LINE_CHARS = 1000  # no line echoes the damaged record it is about

# -- event logs ------------------------------------------------------------------------------------

TERMINATOR = b"...\n"
HEADER = re.compile(rb"^(\d{3}) \(([^)]*)\) (\S+ \S+) ", re.MULTILINE)


def split_events(text: bytes) -> list[bytes]:
    """The log as its events, each ending with its ``...`` line (the last may not)."""
    parts = text.split(b"\n" + TERMINATOR)
    events = [p + b"\n" + TERMINATOR for p in parts[:-1]]
    if parts[-1]:
        events.append(parts[-1])
    return events


INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                b"\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\xc0\xaf"]
HOSTILE_DATES = [
    b"99/99 99:99:99", b"00/00 00:00:00", b"13/45 25:61:61", b"12/31 23:59:60", b"02/30 12:00:00",
    b"-1/-1 -1:-1:-1", b"1e999 nan", b"9999-12-31 23:59:59", b"0001-01-01 00:00:00",
    b"1969-12-31 23:59:59", b"1900-01-01 00:00:00", b"2150-01-01 00:00:00",
    b"2099-12-31 23:59:59", b"2090-06-01 12:00:00", b"1970-01-01 00:00:00",
    b"2026-11-22 07:19:48.999999999", b"11/22 07:19:48Z", b"9999999999/1 1:1:1",
]
HOSTILE_JOB_IDS = [b"99999999999999999999.000.000", b"-1.-1.-1", b"001.-05.000", b"2147483648.000.000",
                   b"4294967296.000.000", b"001.000", b"a.b.c", b"001.000.000.000", b"", b"1e9.0.0",
                   b"000.000.000", b"2147483647.2147483647.000"]
HOSTILE_CLASSAD_VALUES = [
    b"5", b"-5", b"undefined", b"error", b'""', b"{1, 2}", b"[a = 1]", b"1e999", b"-1e999",
    b"99999999999999999999999", b"true", b'"' + b"x" * 100_000 + b'"', b'"a\\nb"', b'"\\x00"',
    b"(", b'"unterminated', b"1 +", b'"\xff\xfe"', b"real(\"nan\")", b"2.5",
]
ATTRIBUTES = [b"Owner", b"AcctGroup", b"Cluster", b"Proc", b"EventTime", b"EventTypeNumber",
              b"Subproc", b"MyType", b"TriggerEventTypeNumber"]
EVENT_TYPES = [b"000", b"001", b"004", b"005", b"006", b"007", b"009", b"012", b"013", b"024", b"028",
               b"777", b"999", b"-01", b"abc", b"035", b"100"]


def some_headers(rng: random.Random, text: bytes, most: int) -> list[re.Match[bytes]]:
    """A few of the log's header lines, the last first (so that changing one moves no other)."""
    headers = list(HEADER.finditer(text))
    chosen = rng.sample(headers, rng.randint(1, min(most, len(headers)))) if headers else []
    return sorted(chosen, key=lambda m: -m.start())


def flip_bytes(rng: random.Random, text: bytes) -> bytes:
    data = bytearray(text)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def flip_bits(rng: random.Random, text: bytes) -> bytes:
    data = bytearray(text)
    for _ in range(rng.randint(1, 3)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def truncate(rng: random.Random, text: bytes) -> bytes:
    return text[: rng.randrange(len(text))]


def insert_invalid_utf8(rng: random.Random, text: bytes) -> bytes:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(INVALID_UTF8) + text[at:]


def invalid_utf8_in_a_value(rng: random.Random, text: bytes) -> bytes:
    """The issue's case: one changed byte inside an attribute value."""
    quotes = [m.start() + 1 for m in re.finditer(rb'= "', text)] or [rng.randrange(len(text))]
    at = min(rng.choice(quotes) + rng.randrange(3), len(text) - 1)
    return text[:at] + bytes([rng.randrange(0x80, 0x100)]) + text[at + 1:]


def insert_binary(rng: random.Random, text: bytes) -> bytes:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.randbytes(rng.randint(1, 4096)) + text[at:]


def insert_nul(rng: random.Random, text: bytes) -> bytes:
    at = rng.randrange(len(text) + 1)
    return text[:at] + b"\x00" * rng.randint(1, 64) + text[at:]


def duplicate_events(rng: random.Random, text: bytes) -> bytes:
    events = split_events(text)
    for _ in range(rng.randint(1, 5)):
        k = rng.randrange(len(events))
        events.insert(rng.randrange(len(events) + 1) if rng.random() < 0.5 else k, events[k])
    return b"".join(events)


def drop_events(rng: random.Random, text: bytes) -> bytes:
    events = split_events(text)
    for _ in range(rng.randint(0, min(10, len(events) - 1))):
        events.pop(rng.randrange(len(events)))
    return b"".join(events)


def shuffle_events(rng: random.Random, text: bytes) -> bytes:
    events = split_events(text)
    if rng.random() < 0.5:
        rng.shuffle(events)
    else:
        i, j = rng.randrange(len(events)), rng.randrange(len(events))
        events[i], events[j] = events[j], events[i]
    return b"".join(events)


def repeat_log(rng: random.Random, text: bytes) -> bytes:
    return text * rng.randint(2, 6)


def drop_terminators(rng: random.Random, text: bytes) -> bytes:
    """Events run into each other: their ``...`` lines are gone (some or all)."""
    share = rng.choice([0.1, 0.5, 1.0])
    lines = text.split(b"\n")
    return b"\n".join(line for line in lines if line != b"..." or rng.random() >= share)


def in_headers(rng: random.Random, text: bytes, field: int, values: list[bytes], most: int) -> bytes:
    """A few header lines with one of their fields (1 type, 2 job id, 3 date) set to one of the
    ``values``."""
    out = bytearray(text)
    for match in some_headers(rng, text, most):
        out[match.start(field):match.end(field)] = rng.choice(values)
    return bytes(out)


def hostile_date(rng: random.Random, text: bytes) -> bytes:
    return in_headers(rng, text, 3, HOSTILE_DATES, 3)


def future_and_past_dates(rng: random.Random, text: bytes) -> bytes:
    """Every event dated in ISO form, with the year moved (far) into the future or the past."""
    year = rng.choice([1970, 1971, 1999, 2038, 2090, 2099, 2100, 2500, 9999])
    return HEADER.sub(lambda m: m.group(1) + b" (" + m.group(2) + b") "
                      + b"%d-11-22 07:19:48 " % year, text)


def hostile_event_time_attribute(rng: random.Random, text: bytes) -> bytes:
    value = rng.choice([b'"9999-12-31T23:59:59"', b'"0001-01-01T00:00:00"', b'"nan"', b"5",
                        b'"2026-99-99T99:99:99"', b'"1e999"', b"undefined", b'"2099-12-31T23:59:59Z"'])
    return re.sub(rb"EventTime = [^\n]*", lambda m: b"EventTime = " + value, text,
                  count=rng.randint(1, 50))


def hostile_job_id(rng: random.Random, text: bytes) -> bytes:
    return in_headers(rng, text, 2, HOSTILE_JOB_IDS, 5)


def hostile_event_type(rng: random.Random, text: bytes) -> bytes:
    return in_headers(rng, text, 1, EVENT_TYPES, 5)


def wrong_attribute_types(rng: random.Random, text: bytes) -> bytes:
    """Every attribute an ad information event carries, given values of the wrong type."""
    attribute = rng.choice(ATTRIBUTES)
    value = rng.choice(HOSTILE_CLASSAD_VALUES)
    pattern = re.compile(rb"^" + attribute + rb" = [^\n]*", re.MULTILINE)
    if attribute == b"AcctGroup" or not pattern.search(text):
        return text.replace(b"\nOwner = ", b"\n" + attribute + b" = " + value + b"\nOwner = ", 5)
    return pattern.sub(lambda m: attribute + b" = " + value, text, count=rng.randint(1, 20))


def checkpoint_and_slot_lines(rng: random.Random, text: bytes) -> bytes:
    replacement = rng.choice([
        b"\t(1) Job was checkpointed.", b"\t(7) Job was checkpointed.", b"\t(x) Job was not",
        b"\tSlotName: " + b"s" * 200_000, b"\tSlotName: \xff\xfe", b"\tSlotName:",
        b"\t(1) Normal termination (return value 99999999999999999999)",
        b"\t\tUsr 99999 99:99:99, Sys -1 00:00:00  -  Run Remote Usage",
    ])
    lines = text.split(b"\n")
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(lines))
        if lines[at].startswith(b"\t"):
            lines[at] = replacement
    return b"\n".join(lines)


def place(rng: random.Random, text: bytes, needle: bytes, after: int = 0) -> int:
    """Where ``needle`` is (from ``after``), or anywhere when an earlier change removed it."""
    at = text.find(needle, after)
    return at if at != -1 else rng.randrange(len(text) + 1)


def huge_line(rng: random.Random, text: bytes) -> bytes:
    """A line of a few MiB (more than the bound on one event) inside an event, in an attribute
    value, in a header, or on its own."""
    size = rng.choice([5, 6, 9]) * MIB
    where = rng.choice(["value", "header", "body", "own", "end"])
    if where == "value":
        at = place(rng, text, b'Owner = "') + 9
        return text[:at] + b"x" * size + text[at:]
    if where == "header":
        at = place(rng, text, b"Job submitted from host") + 4
        return text[:at] + b"y" * size + text[at:]
    if where == "body":
        at = place(rng, text, b"\tSlotName:")
        return text[:at] + b"\t" + b"z" * size + b"\n" + text[at:]
    if where == "own":
        at = place(rng, text, b"\n" + TERMINATOR, len(text) // 2) + 5
        return text[:at] + b"w" * size + b"\n" + text[at:]
    return text + b"v" * size


def many_long_lines(rng: random.Random, text: bytes) -> bytes:
    """One event of many lines, each of them short, that adds up to more than the bound."""
    at = place(rng, text, b"\tSlotName:")
    return text[:at] + (b"\t" + b"q" * 100_000 + b"\n") * rng.choice([50, 60]) + text[at:]


def crlf(rng: random.Random, text: bytes) -> bytes:
    return text.replace(b"\n", b"\r\n")


def only_headers(rng: random.Random, text: bytes) -> bytes:
    return b"".join(m.group(0) + b"\n...\n" for m in HEADER.finditer(text))


EVENT_MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    flip_bytes, flip_bits, truncate, insert_invalid_utf8, invalid_utf8_in_a_value, insert_binary,
    insert_nul, duplicate_events, drop_events, shuffle_events, repeat_log, drop_terminators,
    hostile_date, future_and_past_dates, hostile_event_time_attribute, hostile_job_id,
    hostile_event_type, wrong_attribute_types, checkpoint_and_slot_lines, huge_line,
    many_long_lines, crlf, only_headers,
]
SPECIAL_FILES = ["empty", "binary", "directory", "missing", "dots"]


def write_case(rng: random.Random, path: Path, index: int,
               mutations: list[Callable[[random.Random, bytes], bytes]], originals: list[bytes]) -> str:
    """Writes case ``index``'s file at ``path``: an original changed by one of the mutations (once
    to three times), or one of the special files; returns which."""
    kinds: list[Any] = [*mutations, *SPECIAL_FILES]
    mutation = kinds[index % len(kinds)]
    if not callable(mutation):
        write_special(rng, path, mutation)
        return str(mutation)
    text = rng.choice(originals)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        text = mutation(rng, text) if text else text
    path.write_bytes(text)
    return mutation.__name__


def event_case(index: int, tmp: Path) -> tuple[str, list[str], list[Path]]:
    """The label, the command's arguments and the files named, of event-log case ``index``."""
    rng = random.Random(f"{SEED}:events:{index}")
    path = tmp / f"case{index}.events.log"
    label = write_case(rng, path, index, EVENT_MUTATIONS, EVENT_LOGS)
    logs = [str(path)]
    if rng.random() < 0.25:  # beside a good log
        logs.append(str(DATA / "no-enforcement.events.log"))
        rng.shuffle(logs)
    if rng.random() < 0.2:
        logs = [f"alice={log}" for log in logs]
    args = ["replay", *logs, "--policy-file", POLICY]
    if rng.random() < 0.2:
        args += ["--decisions", str(DATA / "share-back.decisions.jsonl")]
    else:
        args += ["--slots", str(rng.choice([1, 4, 4, 1000]))]
    args += ["--format", rng.choice(["json", "json", "table", "csv"])]
    if rng.random() < 0.15:
        args += ["--what-if", rng.choice(["osep", "greedy", "fairshare"]), "-t", "2",
                 "--negotiation-interval", "2"]
    return label, args, [path]


def write_special(rng: random.Random, path: Path, kind: str) -> None:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(rng.randbytes(rng.choice([1, 100, 4096, 65536, 6 * MIB])))
    elif kind == "directory":
        path.mkdir()
    elif kind == "dots":
        path.write_bytes(rng.choice([b"...\n" * 1000, b"\n" * 5000, b"." * 10_000, b" \t\r\n" * 100]))
    # "missing": nothing is written


# -- decision logs ---------------------------------------------------------------------------------

NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e308", "-1e308", "-1", "-0.5",
           "1e18", "-86400", "4102444800", "99999999999", "3" * 5000, "9" * 30, "2e9", "0",
           "18446744073709551616", "1.5"]
OTHER_VALUES = ['"x"', '""', "[]", "{}", "null", "true", "false", "[1, 2]", '{"a": 1}', '"1.0"',
                '"nan"', '"' + "s" * 10_000 + '"', '"\\u0000"', '"\\ud800"', '"a\\nb"',
                '["alice", 5, null]', '{"alice": "x"}', '"1.0.0"', '"-1.-1"', '"a#1.0"',
                '"99999999999999999999.0"', '"done"', '"dry-run"', '"started"']
FIELDS = ["time", "cycle", "capacity", "run_time", "lost_work", "outcome", "kind", "job", "owner",
          "beneficiary", "slot", "owners", "allowance", "event", "detail", "reason", "level",
          "planned_vacates", "vacated", "room", "timestamp", "problem"]


def decision_lines(text: bytes) -> list[bytes]:
    return text.splitlines(keepends=True)


def nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth  # never closed


def hostile_field(rng: random.Random, text: bytes) -> bytes:
    """A field of some lines set to a hostile number or a value of the wrong type (written as raw
    JSON text, so that NaN, 1e999 and 5,000-digit integers reach the reader as such)."""
    lines = decision_lines(text)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(lines))
        try:
            event = json.loads(lines[at])
        except ValueError:  # made hostile by an earlier round
            continue
        if not isinstance(event, dict):
            continue
        name = rng.choice(FIELDS if rng.random() < 0.5 else list(event))
        value = rng.choice(NUMBERS if rng.random() < 0.5 else OTHER_VALUES)
        event[name] = "@VALUE@"
        lines[at] = json.dumps(event).replace('"@VALUE@"', value).encode() + b"\n"
    return b"".join(lines)


def hostile_times(rng: random.Random, text: bytes) -> bytes:
    """Every time in the log (or many) made NaN, infinite, huge, negative or far in the future."""
    value = rng.choice(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e300", "-1e300",
                        "-1", "-1795331988", "253402300800", "4102444800", "4102444799",
                        "1e12", "3" * 400, "2e9"])
    share = rng.choice([0.05, 0.3, 1.0])
    return re.sub(rb'"time": [^,}]*', lambda m: b'"time": ' + value.encode()
                  if rng.random() < share else m.group(0), text)


def deep_json(rng: random.Random, text: bytes) -> bytes:
    depth = rng.choice([1000, 10_000, 100_000])
    value = nested(depth, rng.choice(["list", "object", "open"]))
    lines = decision_lines(text)
    at = rng.randrange(len(lines) + 1)
    line = value if rng.random() < 0.5 else '{"event": "action", "time": ' + value + ', "cycle": 1}'
    lines.insert(at, line.encode() + b"\n")
    return b"".join(lines)


def not_objects(rng: random.Random, text: bytes) -> bytes:
    lines = decision_lines(text)
    for _ in range(rng.randint(1, 5)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(
            [b"null\n", b"[]\n", b"123\n", b'"x"\n', b"NaN\n", b"{\n", b"}\n", b"{}\n",
             b'{"event": 5}\n', b'{"event": null, "time": 1}\n', b'{"event": "cycle"}\n',
             b'{"event": "action", "kind": "vacate"}\n', b"\n\n\n", b"   \n", b"\x00\n"]))
    return b"".join(lines)


def duplicate_lines(rng: random.Random, text: bytes) -> bytes:
    lines = decision_lines(text)
    for _ in range(rng.randint(1, 20)):
        k = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[k])
    return b"".join(lines)


def drop_lines(rng: random.Random, text: bytes) -> bytes:
    lines = decision_lines(text)
    for _ in range(min(rng.randint(1, 30), len(lines) - 1)):
        lines.pop(rng.randrange(len(lines)))
    return b"".join(lines)


def shuffle_lines(rng: random.Random, text: bytes) -> bytes:
    lines = decision_lines(text)
    rng.shuffle(lines)
    return b"".join(lines)


def no_started(rng: random.Random, text: bytes) -> bytes:
    return b"".join(line for line in decision_lines(text) if b'"started"' not in line)


def repeat_decisions(rng: random.Random, text: bytes) -> bytes:
    return text * rng.randint(2, 6)


def huge_decision_line(rng: random.Random, text: bytes) -> bytes:
    """A line longer than the bound on one line, as junk, as a string value, or with no end."""
    size = rng.choice([5, 7]) * MIB
    shape = rng.choice(["junk", "string", "last", "list"])
    if shape == "junk":
        line = b"j" * size + b"\n"
    elif shape == "string":
        line = b'{"event": "action", "time": 1795331990.0, "detail": "' + b"d" * size + b'"}\n'
    elif shape == "list":
        line = b'{"event": "action", "kind": "hold", "owners": [' + b'"a",' * (size // 4) + b'"a"]}\n'
    else:
        return text + b"e" * size  # no newline at the end
    lines = decision_lines(text)
    lines.insert(rng.randrange(len(lines) + 1), line)
    return b"".join(lines)


def long_valid_line(rng: random.Random, text: bytes) -> bytes:
    """A long line under the bound: read, not skipped."""
    owners = [f"owner{k}" for k in range(rng.choice([1000, 50_000]))]
    line = json.dumps({"cycle": 2, "time": 1795331990.0, "kind": "hold", "owners": owners,
                       "allowance": dict.fromkeys(owners, 0), "outcome": "done", "event": "action"})
    lines = decision_lines(text)
    lines.insert(rng.randrange(len(lines) + 1), line.encode() + b"\n")
    return b"".join(lines)


DECISION_MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    flip_bytes, flip_bits, truncate, insert_invalid_utf8, insert_binary, insert_nul, hostile_field,
    hostile_field, hostile_field, hostile_times, hostile_times, deep_json, not_objects,
    duplicate_lines, drop_lines, shuffle_lines, no_started, repeat_decisions, huge_decision_line,
    long_valid_line, crlf,
]
def decision_case(index: int, tmp: Path) -> tuple[str, list[str], list[Path]]:
    rng = random.Random(f"{SEED}:decisions:{index}")
    path = tmp / f"case{index}.decisions.jsonl"
    label = write_case(rng, path, index, DECISION_MUTATIONS, [DECISIONS])
    fmt = ["--format", rng.choice(["json", "json", "table", "csv"])]
    command = rng.choice(["history", "history", "window", "replay"])
    if command == "history":
        args = ["report", "--history", "--decisions", str(path), *fmt]
    elif command == "window":
        args = ["report", "--history", "--decisions", str(path), "--since",
                rng.choice(["2026-11-22T07:19:50", "0", "1795331990"]), "--until",
                rng.choice(["2026-11-22T07:20:30", "4102444799", "2100-01-01"]), *fmt]
    else:
        args = ["replay", str(DATA / "share-back.events.log"), "--policy-file", POLICY,
                "--decisions", str(path), *fmt]
        if rng.random() < 0.5:
            args += ["--slots", "4"]
    return label, args, [path]


# -- running the cases -----------------------------------------------------------------------------


class Hang(BaseException):
    """Raised by the guard's alarm; a BaseException, so that the runner does not swallow it."""


@contextmanager
def guard(seconds: int) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    # A hang inside C code never returns to the alarm's handler: this ends the run instead.
    faulthandler.dump_traceback_later(seconds * 3, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Figures:
    kind: str
    cases: int = 0
    tracebacks: int = 0
    hangs: int = 0
    errors: int = 0  # exit 2, one error line
    warned: int = 0  # exit 0 with counted warnings
    clean: int = 0  # exit 0, nothing to say
    slowest: float = 0.0
    slowest_case: str = ""
    most_lines: int = 0
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.kind}: {self.cases} cases, {self.tracebacks} tracebacks, {self.hangs} hangs; "
                f"{self.errors} ended with one error line, {self.warned} with counted warnings, "
                f"{self.clean} clean; at most {self.most_lines} lines on stderr; slowest "
                f"{self.slowest:.2f} s ({self.slowest_case})")


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} in the output")

    return json.loads(text, parse_constant=refuse)


def problem(result: Result, args: list[str], files: list[Path]) -> str | None:
    """What is wrong with how the command ended, or None."""
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return f"traceback: {type(exc).__name__}: {str(exc)[:200]}"
    if result.exit_code not in (0, 2):
        return f"exit status {result.exit_code}"
    lines = result.stderr.splitlines()
    if len(lines) > MAX_STDERR_LINES:
        return f"{len(lines)} lines on stderr"
    if any(len(line) > MAX_LINE_CHARS for line in lines):
        return f"a line on stderr of more than {MAX_LINE_CHARS} characters"
    if result.exit_code == 2 and result.stderr.startswith("osep: error: replay: --decisions: "):
        # click's own check of the option (a directory where a file is wanted): a usage error.
        return None if any(f.is_dir() for f in files) else "usage error: " + result.stderr
    warnings = [line for line in lines if line.startswith("osep: warning: ")]
    errors = [line for line in lines if line.startswith("osep: error: ")]
    if len(warnings) + len(errors) != len(lines):
        return "stderr has lines that are neither warnings nor errors: " + result.stderr[:300]
    if result.exit_code == 2:
        if len(errors) != 1 or lines[-1] != errors[0]:
            return "exit status 2 without exactly one error line, last: " + result.stderr[:300]
        named = [str(f) for f in files] + [str(DATA / "share-back.events.log"),
                                           str(DATA / "no-enforcement.events.log")]
        if not any(errors[0].startswith(f"osep: error: {name}: ") for name in named):
            return "the error line does not begin with the file: " + errors[0][:300]
        return None
    if errors:
        return "an error line, yet exit status 0"
    if "--format" in args and args[args.index("--format") + 1] == "json":
        try:
            strict_json(result.stdout)
        except ValueError as exc:
            return f"the JSON document does not parse strictly: {exc}"
    elif not result.stdout:
        return "no output"
    return None


def run_cases(kind: str, build: Callable[[int, Path], tuple[str, list[str], list[Path]]],
              tmp: Path, count: int = CASES) -> Figures:
    runner = cli_runner()
    figures = Figures(kind)
    for index in range(count):
        case_dir = tmp / str(index)
        case_dir.mkdir()
        label, args, files = build(index, case_dir)
        name = f"{kind} case {index} ({label})"
        started = time.perf_counter()
        try:
            with guard(GUARD):
                result = runner.invoke(cli, args)
        except Hang:
            figures.hangs += 1
            figures.failures.append(f"{name}: still running after {GUARD} s")
            continue
        finally:
            elapsed = time.perf_counter() - started
            figures.cases += 1
            if elapsed > figures.slowest:
                figures.slowest, figures.slowest_case = elapsed, name
            for f in files:  # the big ones would fill the disk
                if f.is_file():
                    f.unlink()
        figures.most_lines = max(figures.most_lines, len(result.stderr.splitlines()))
        wrong = problem(result, args, files)
        if wrong is not None:
            if wrong.startswith("traceback"):
                figures.tracebacks += 1
            figures.failures.append(f"{name}: {wrong}")
        elif result.exit_code == 2:
            figures.errors += 1
        elif result.stderr:
            figures.warned += 1
        else:
            figures.clean += 1
    return figures


def report(figures: Figures) -> None:
    print("\n" + figures.line())
    assert figures.cases >= 1000
    assert not figures.failures, "\n".join(figures.failures[:30])


def test_damaged_and_hostile_event_logs(tmp_path):
    report(run_cases("event logs", event_case, tmp_path))


def test_damaged_and_hostile_decision_logs(tmp_path):
    report(run_cases("decision logs", decision_case, tmp_path))


def test_the_vacates_kept_by_the_first_reading_of_a_damaged_decision_log_are_those_streamed(tmp_path):
    """What replay takes from the decision log's first reading, when it keeps the vacates sent, is
    what a second reading streams, damage or not."""
    from osep.errors import OsepError
    from osep.replay.decisions import read_decisions, vacates_in_order

    kept_some = 0
    for index in range(len(DECISION_MUTATIONS) * 4):
        rng = random.Random(f"{SEED}:kept:{index}")
        path = tmp_path / f"kept{index}.jsonl"
        write_case(rng, path, index % len(DECISION_MUTATIONS), DECISION_MUTATIONS, [DECISIONS])
        try:
            log = read_decisions(path, lambda _: None, actions=False, keep=1 << 16)
        except OsepError:  # not a decision log at all
            continue
        kept = log.kept_in_order()
        assert kept is not None
        got = list(kept)
        assert got == list(vacates_in_order(path)), index
        kept_some += bool(got)
    assert kept_some


# -- memory: one enormous line ---------------------------------------------------------------------

# Runs osep in a child and then reports the child's peak resident memory on stderr: VmHWM, of its
# own address space (ru_maxrss would include what the test process held when it forked the child).
MEASURED = """
import re, runpy, sys
sys.argv = ["osep", *sys.argv[1:]]
try:
    runpy.run_module("osep", run_name="__main__")
except SystemExit:
    pass
finally:
    status = open("/proc/self/status").read()
    print("peak_kib", re.search(r"VmHWM:\\s*(\\d+)", status)[1], file=sys.stderr)
"""
HUGE = 200 * MIB


def peak_mib(*args: str) -> tuple[float, str]:
    done = subprocess.run([sys.executable, "-c", MEASURED, *args], capture_output=True, text=True,
                          check=False, env={**os.environ, "TZ": "UTC"}, timeout=300)
    peak = int(done.stderr.split("peak_kib")[-1].split()[0])
    return peak / 1024, done.stderr


def write_with_a_huge_line(path: Path, text: bytes, at: int, prefix: bytes = b"") -> None:
    with path.open("wb") as out:
        out.write(text[:at] + prefix)
        for _ in range(HUGE // MIB):
            out.write(b"h" * MIB)
        out.write(text[at:])


def test_an_enormous_line_is_never_held(tmp_path):
    """A 200 MiB line in an attribute value of an event log, and in a string of a decision log:
    the command needs no more memory than on the good logs (the bindings' parser took 1.2 GiB,
    the decision log reader held the line twice over)."""
    events = tmp_path / "huge.events.log"
    text = EVENT_LOGS[0]
    write_with_a_huge_line(events, text, text.index(b'Owner = "alice"') + 9)
    decisions = tmp_path / "huge.decisions.jsonl"
    at = DECISIONS.index(b"\n", 1000) + 1
    write_with_a_huge_line(decisions, DECISIONS, at, b'{"event": "action", "detail": "')
    good_replay, _ = peak_mib("replay", str(DATA / "share-back.events.log"), "--policy-file", POLICY,
                              "--slots", "4")
    huge_replay, said = peak_mib("replay", str(events), "--policy-file", POLICY, "--slots", "4")
    assert "an event longer than 4 MiB, skipped" in said
    good_report, _ = peak_mib("report", "--history", "--decisions", str(DATA /
                                                                     "share-back.decisions.jsonl"))
    huge_report, said = peak_mib("report", "--history", "--decisions", str(decisions))
    assert "a line longer than 4 MiB, skipped" in said
    print(f"\npeak memory, good log and with a 200 MiB line: replay {good_replay:.0f} and "
          f"{huge_replay:.0f} MiB, report --history {good_report:.0f} and {huge_report:.0f} MiB")
    assert huge_replay < good_replay + 64
    assert huge_report < good_report + 64

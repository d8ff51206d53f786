"""Damaged and hostile policy and scenario files through the real command line.

Every case is made, deterministically, from the bundled files (osep/data/policy.toml, the [policy] and
[owners] tables of each bundled scenario, and osep/data/scenarios/*.toml): bytes flipped, the file cut
short, invalid UTF-8, deep nesting, hostile numbers in every numeric key, wrong types for every key,
huge strings, names with newlines, terminal escapes and quotes, duplicated keys and tables, empty
files, and paths that are not files. Each goes through ``osep validate`` and, where that accepts it,
``osep simulate``, under a SIGALRM guard. What must hold for every one: no traceback, no hang, and
either success or exactly one line ``osep: error: <file>: ...`` with nothing unprintable in it.
"""

from __future__ import annotations

import datetime
import math
import os
import random
import re
import signal
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from builders import cli_runner, places
from osep.bounds import MAX_FILE_BYTES
from osep.config.toml import escape
from osep.sim.variants import NAMES as POLICY_NAMES
from osep.ui.cli import cli

ROOT = Path(__file__).parents[2]
SCENARIOS = sorted((ROOT / "osep" / "data" / "scenarios").glob("*.toml"))
JOB_LISTS = sorted((ROOT / "osep" / "data" / "scenarios").glob("*.csv"))
GUARD = 60  # seconds a case may take before it counts as a hang
MINIMUM = 1000  # cases of each family


class Raw(str):
    """Text written into a TOML file exactly as it is (a hostile literal, a nested array)."""


# -- a small TOML writer, so that a value can be replaced anywhere in a parsed bundled file ---------

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(name: str) -> str:
    return name if _BARE.fullmatch(name) else _string(name)


def _value(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def toml_text(doc: dict[str, Any], path: tuple[str, ...] = ()) -> str:
    """``doc`` as TOML: plain values first, then sub-tables, then arrays of tables."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items()
             if not isinstance(v, dict) and not _tables(v)]
    head = ".".join(_key(p) for p in path)
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"\n[{head + '.' if head else ''}{_key(k)}]")
            lines.append(toml_text(v, (*path, k)))
        elif _tables(v):
            for item in v:
                lines.append(f"\n[[{head + '.' if head else ''}{_key(k)}]]")
                lines.extend(f"{_key(ik)} = {_value(iv)}" for ik, iv in item.items())
    return "\n".join(line for line in lines if line) + "\n"


# -- the cases ------------------------------------------------------------------------------------

HOSTILE_NUMBERS = [
    "1e300", "-1e300", "1e-300", "-1e-300", "1e1000", "nan", "-nan", "inf", "-inf", "-1", "0", "-0.0",
    "0.5", "1000000000", "9223372036854775807", "-9223372036854775808", "9" * 5000, "0x" + "f" * 3000,
    "0b1" + "0" * 100, "2.5e9",
]
HOSTILE_AMOUNTS = [
    "1e300%", "nan%", "inf%", "-5%", "1e-300%", "101%", "%", "1" * 5000 + "%", "1e400 TiB",
    "nan GiB", "-1 GiB", "99999999999999999999 TiB", "1" * 5000 + " GiB", "0x10 MiB", "5 XiB",
]
HOSTILE_STRINGS = [
    "a\nb", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", 'q"uote', "it's", "back\\slash", "\u202eevil",
    "line\u2028break", "nul\x00byte", "", " ", "\t", "\x7f", "\x9b31m", "é", "x" * 300, "x" * 100_000,
    "0", "osep\r", "-", "owner1\n",
]
WRONG_TYPES: list[Any] = [
    "text", True, [1, 2], {"a": 1}, datetime.datetime(1979, 5, 27, 7, 32), "", [], Raw("1979-05-27"),
    Raw("07:32:00"), 3.5, -7, Raw("[[1]]"), [{"x": 1}],
]
INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe2\x82", b"\xfe\xfe",
                b"\xc0\xaf"]
DEPTHS = [10, 100, 300, 1000, 5000, 50_000]
# Keys a bundled file may leave out, set so that hostile numbers reach them too.
OPTIONAL = [
    ("scenario", "horizon"), ("pool", "reservation_timeout"), ("pool", "vacate_delay"),
    ("pool", "negotiation_interval"), ("checkpoint", "interval"), ("fairshare", "half_life"),
    ("fairshare", "usage", "owner1"), ("policy", "max_vacates"), ("policy", "interval"),
    ("submit", 0, "time"), ("submit", 0, "cpus"), ("submit", 0, "memory"), ("submit", 0, "gpus"),
    ("submit", 0, "count"), ("workload", "since"), ("workload", "until"), ("workload", "limit"),
    ("workload", "compress"),
]


@dataclass
class Case:
    kind: str
    detail: str
    content: bytes | None = None  # None: made by ``make`` instead
    make: Callable[[Path], Path] | None = None


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any] | None:
    """A deep copy of ``doc`` with ``value`` at ``path`` (None if its parent is not there)."""
    out = _copy(doc)
    parent: Any = out
    for step in path[:-1]:
        if isinstance(parent, dict) and step not in parent and isinstance(step, str):
            parent[step] = {}
        try:
            parent = parent[step]
        except (KeyError, IndexError, TypeError):
            return None
        if not isinstance(parent, dict | list):
            return None
    if isinstance(parent, list) and not isinstance(path[-1], int):
        return None
    parent[path[-1]] = value
    return out


def _rename(doc: dict[str, Any], path: tuple[Any, ...], new: str) -> dict[str, Any] | None:
    """``doc`` with the key at ``path`` renamed (in place among its siblings)."""
    out = _copy(doc)
    parent = _get(out, path[:-1])
    if not isinstance(parent, dict) or new in parent:
        return None
    items = [(new if k == path[-1] else k, v) for k, v in parent.items()]
    parent.clear()
    parent.update(items)
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _amount(value: Any) -> bool:
    return isinstance(value, str) and (value.endswith("%") or re.search(r"[KMGT]i?B?$", value) is not None)


def byte_cases(kind: str, base: bytes, rng: random.Random, count: int) -> list[Case]:
    cases = []
    for n in range(count):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= rng.randint(1, 255)
        cases.append(Case(f"{kind}: flipped bytes", f"flip{n}", bytes(data)))
    for n in range(count):
        cases.append(Case(f"{kind}: cut short", f"cut{n}", base[: rng.randrange(len(base))]))
    for n in range(count):
        at = rng.randrange(len(base) + 1)
        bad = INVALID_UTF8[n % len(INVALID_UTF8)]
        cases.append(Case(f"{kind}: invalid UTF-8", f"utf8-{n}", base[:at] + bad + base[at:]))
    lines = base.splitlines(keepends=True)
    for n in range(count):
        at = rng.randrange(len(lines))
        cases.append(Case(f"{kind}: duplicated line", f"dup{n}", b"".join(lines[: at + 1] + lines[at:])))
    cases.append(Case(f"{kind}: duplicated line", "twice", base + b"\n" + base))
    return cases


def document_cases(kind: str, doc: dict[str, Any]) -> list[Case]:
    cases = []

    def add(what: str, name: str, new: dict[str, Any] | None) -> None:
        if new is not None:
            cases.append(Case(f"{kind}: {what}", name, toml_text(new).encode()))

    every = list(places(doc))
    numeric = [p for p in every if _numeric(_get(doc, p))]
    numeric += [p for p in OPTIONAL if p[0] in doc and p not in numeric]
    for p in numeric:
        for n, text in enumerate(HOSTILE_NUMBERS):
            add("hostile number", f"num-{p}-{n}", _set(doc, p, Raw(text)))
    for p in every:
        value = _get(doc, p)
        if _amount(value):
            for n, text in enumerate(HOSTILE_AMOUNTS):
                add("hostile amount", f"amount-{p}-{n}", _set(doc, p, text))
        if isinstance(value, str):
            for n, text in enumerate(HOSTILE_STRINGS):
                add("hostile string", f"str-{p}-{n}", _set(doc, p, text))
        for k in range(7):  # seven of the wrong types at each place, a different seven at the next
            n = (every.index(p) + k) % len(WRONG_TYPES)
            add("wrong type", f"type-{p}-{n}", _set(doc, p, WRONG_TYPES[n]))
    owners = [p for p in every if len(p) == 2 and p[0] in ("owners", "usage")]
    for p in owners[:2]:
        for n, text in enumerate(HOSTILE_STRINGS):
            add("hostile name", f"name-{p}-{n}", _rename(doc, p, text))
    deep_at = (numeric[0] if numeric else every[0])
    for depth in DEPTHS:
        add("deep nesting", f"deep-array-{depth}", _set(doc, deep_at, Raw("[" * depth + "]" * depth)))
        add("deep nesting", f"deep-inline-{depth}",
            _set(doc, deep_at, Raw("{ a = " * depth + "1" + " }" * depth)))
        dotted = ".".join(["x"] * depth)
        cases.append(Case(f"{kind}: deep nesting", f"deep-dotted-{depth}",
                          toml_text(doc).encode() + f"\n{dotted} = 1\n".encode()))
        cases.append(Case(f"{kind}: deep nesting", f"deep-header-{depth}",
                          toml_text(doc).encode() + f"\n[{dotted}]\n".encode()))
    for size in (10_000, MAX_FILE_BYTES - 200, MAX_FILE_BYTES + 1):
        first = every[0]
        add("huge string", f"huge-{size}", _set(doc, first, "x" * size))
    return cases


def file_cases(kind: str, base: bytes) -> list[Case]:
    """Empty and strange files, and paths that are no file at all."""
    cases = [Case(f"{kind}: empty or junk", f"junk{n}", data) for n, data in enumerate(
        [b"", b"\n", b"   \n\t\n", b"# only a comment\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf" + base, b"\x00",
         b"\x00" * 100, b"\r\n" * 10, b"[", b"]]", b"=", b'"', b"'''", b"a = ", b"[[]]", base.replace(b"\n", b"\r"),
         random.Random(7).randbytes(300), random.Random(8).randbytes(5000), b"x" * (MAX_FILE_BYTES + 1)])]

    def directory(tmp: Path) -> Path:
        (tmp / "adir.toml").mkdir()
        return tmp / "adir.toml"

    def fifo(tmp: Path) -> Path:
        os.mkfifo(tmp / "fifo.toml")
        return tmp / "fifo.toml"

    def link(target: str) -> Callable[[Path], Path]:
        def make(tmp: Path) -> Path:
            (tmp / "link.toml").symlink_to(target)
            return tmp / "link.toml"
        return make

    def loop(tmp: Path) -> Path:
        (tmp / "a.toml").symlink_to(tmp / "b.toml")
        (tmp / "b.toml").symlink_to(tmp / "a.toml")
        return tmp / "a.toml"

    def named(name: str) -> Callable[[Path], Path]:
        def make(tmp: Path) -> Path:
            (tmp / name).write_bytes(base)
            return tmp / name
        return make

    makers: list[tuple[str, Callable[[Path], Path]]] = [
        ("missing", lambda tmp: tmp / "missing.toml"),
        ("missing directory", lambda tmp: tmp / "no" / "such.toml"),
        ("directory", directory),
        ("fifo", fifo),
        ("dev-zero", link("/dev/zero")),
        ("dev-null", link("/dev/null")),
        ("dangling", link("/nonexistent/osep.toml")),
        ("loop", loop),
        ("name too long", lambda tmp: tmp / ("x" * 300 + ".toml")),
        ("newline name", named("new\nline.toml")),
        ("escape name", named("\x1b[31mred.toml")),
        ("quote name", named("q'uote\".toml")),
    ]
    cases += [Case(f"{kind}: not a file", name, make=make) for name, make in makers]
    return cases


def _policy_bases() -> list[tuple[str, bytes]]:
    """osep/data/policy.toml, and each bundled scenario's [policy] and [owners] as a policy file."""
    bases = [("policy", (ROOT / "osep" / "data" / "policy.toml").read_bytes())]
    for path in SCENARIOS:
        doc = tomllib.loads(path.read_text())
        part = {k: doc[k] for k in ("policy", "owners") if k in doc}
        bases.append((path.stem, toml_text(part).encode()))
    return bases


def _scenario_bases() -> list[tuple[str, bytes]]:
    """The bundled scenarios; the NASA week cut to its first 40 jobs so that simulating it is quick."""
    out = []
    for path in SCENARIOS:
        data = path.read_bytes()
        if b"[workload]" in data:
            data = data.replace(b"[workload]\n", b"[workload]\nlimit = 40\n")
        out.append((path.stem, data))
    return out


def corpus(family: str) -> list[Case]:
    rng = random.Random(f"osep-hostile-{family}")
    bases = _policy_bases() if family == "policy" else _scenario_bases()
    cases: list[Case] = []
    for stem, data in bases:
        made = byte_cases(family, data, rng, 12) + document_cases(family, tomllib.loads(data.decode()))
        for case in made:
            case.detail = f"{stem} {case.detail}"
        cases += made
    return cases + file_cases(family, bases[0][1])


# -- running them ---------------------------------------------------------------------------------


class Hang(BaseException):
    """Raised by the guard's alarm (a BaseException, so that nothing on the way can swallow it)."""


@dataclass
class Figures:
    cases: dict[str, int] = field(default_factory=dict)
    accepted: int = 0
    simulated: int = 0
    tracebacks: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")


def _guarded(runner: CliRunner, args: list[str]) -> tuple[Any, float]:
    def alarm(signum: int, frame: Any) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(GUARD)
    start = time.perf_counter()
    try:
        result = runner.invoke(cli, args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return result, time.perf_counter() - start


def _check(figures: Figures, label: str, path: Path, args: list[str], runner: CliRunner) -> bool:
    """Run one command; record what went wrong. True if it succeeded."""
    try:
        result, took = _guarded(runner, args)
    except Hang:
        figures.hangs.append(label)
        return False
    if took > figures.slowest[0]:
        figures.slowest = (took, f"{label}: {' '.join(args[:1])}")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        figures.tracebacks.append(f"{label}: {type(result.exception).__name__}: {result.exception!r:.300}")
        return False
    for text in (result.stdout, result.stderr):
        if any(not line.isprintable() for line in text.splitlines()):
            figures.bad_lines.append(f"{label}: unprintable output {text[:300]!r}")
    if result.exit_code == 0:
        return True
    lines = result.stderr.splitlines()
    prefix = f"osep: error: {escape(str(path))}: "
    if result.exit_code != 2 or len(lines) != 1 or not lines[0].startswith(prefix) or \
            len(lines[0]) == len(prefix) or result.stdout:
        figures.bad_lines.append(f"{label}: exit {result.exit_code}: {result.stderr[:300]!r}")
    return False


def run_corpus(family: str, tmp_path: Path) -> Figures:
    runner = cli_runner()
    figures = Figures()
    home = tmp_path / "cases" / "scenarios"  # a scenario's workload log is in ../traces
    home.mkdir(parents=True)
    (tmp_path / "cases" / "traces").symlink_to(ROOT / "osep" / "data" / "traces")
    for n, case in enumerate(corpus(family)):
        figures.cases[case.kind] = figures.cases.get(case.kind, 0) + 1
        work = home / f"{n:05d}"
        work.mkdir()
        for job_list in JOB_LISTS:  # a scenario's CSV job list lies beside it
            (work / job_list.name).symlink_to(job_list)
        if case.make is not None:
            path = case.make(work)
        else:
            path = work / f"{family}.toml"
            path.write_bytes(case.content or b"")
        label = f"{case.kind} #{n} ({case.detail[:80]!r})"
        if not _check(figures, label, path, ["validate", str(path)], runner):
            continue
        figures.accepted += 1
        if family == "scenario":
            figures.simulated += 1
            policy = POLICY_NAMES[n % len(POLICY_NAMES)]
            _check(figures, label, path, ["simulate", str(path), "--policy", policy], runner)
    return figures


def report(family: str, figures: Figures) -> str:
    kinds = ", ".join(f"{k.split(': ', 1)[1]} {v}" for k, v in sorted(figures.cases.items()))
    return (f"{family} files: {sum(figures.cases.values())} cases ({kinds}); {figures.accepted} accepted by "
            f"validate, {figures.simulated} simulated; tracebacks {len(figures.tracebacks)}, hangs "
            f"{len(figures.hangs)}, errors not one clean line {len(figures.bad_lines)}; slowest "
            f"{figures.slowest[0]:.2f} s ({figures.slowest[1]})")


@pytest.mark.parametrize("family", ["policy", "scenario"])
def test_hostile_files_fail_in_one_line(family, tmp_path, capsys):
    figures = run_corpus(family, tmp_path)
    with capsys.disabled():
        print("\n" + report(family, figures))
    assert sum(figures.cases.values()) >= MINIMUM
    assert figures.tracebacks == []
    assert figures.hangs == []
    assert figures.bad_lines == []


def test_the_writer_keeps_the_bundled_files_as_they_are():
    for _, data in _policy_bases() + _scenario_bases():
        doc = tomllib.loads(data.decode())
        assert tomllib.loads(toml_text(doc)) == doc

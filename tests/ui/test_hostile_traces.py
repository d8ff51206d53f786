"""Hostile workload logs through ``osep simulate --trace``, each in a process of its own.

Every case is made by a seeded generator, plain and gzipped: hostile header numbers (``²``, 5,000
digits, ``1e400``), hostile numbers in every field of a record (``nan``, ``0x10``, ``1_000``, huge
exponents), with ``--since`` and ``--until``, a real log's lines damaged (bytes flipped, cut, NULs,
invalid UTF-8), damaged gzip streams, paths that are no file, random logs, and decompression bombs
(a GiB of newlines, of short lines, of digits, 2 GiB of zeros, one line of a GiB). What must hold
for each: no traceback, done within GUARD seconds, at most MEMORY of memory (the child's own
``ru_maxrss``), exit status 0, or 2 with exactly one line ``osep: error: ...`` on stderr.

The bombs run ``python -m osep``. The many small cases run the same ``main`` in a process forked
from a server that imported osep once (an interpreter's start costs more than most cases): the
fork is the case's own process, waited for with ``wait4`` for its memory and killed at the guard.
The figures (cases, the slowest, the largest) are printed: run with ``-s``.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
NASA = ROOT / "osep" / "data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"
SEED = 20261128
GUARD = 20.0  # seconds a case may take
MEMORY = 1 << 20  # KiB (ru_maxrss): 1 GiB
WORKERS = 2
SMALL = ("--limit", "50", "--policy", "greedy")  # what a small case simulates: little
GOOD = "1 0 -1 10 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1"
MIB, GIB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Case:
    family: str
    path: Path
    args: tuple[str, ...] = SMALL


@dataclass(frozen=True)
class Outcome:
    case: Case
    rc: int
    seconds: float
    maxrss: int  # KiB
    stderr: str
    killed: bool

    def faults(self) -> list[str]:
        """What is wrong with how the case ended (nothing: it ran, or failed in one clean line)."""
        out = []
        if self.killed or self.seconds > GUARD:
            out.append(f"ran {self.seconds:.1f} s")
        if self.maxrss > MEMORY:
            out.append(f"took {self.maxrss // 1024:,} MiB")
        if "Traceback" in self.stderr:
            out.append("a traceback")
        if self.rc not in (0, 2) and not self.killed:
            out.append(f"exit status {self.rc}")
        if self.rc == 2 and (self.stderr.count("\n") != 1 or not self.stderr.startswith("osep: error: ")):
            out.append("not one error line")
        return [f"{self.case.family} {self.case.path.name!r} {' '.join(self.case.args)}: {f}: "
                f"{self.stderr[:300]!r}" for f in out]


# A server of forked cases, run as a child of the tests: reads one JSON request a line (argv, stderr
# file, whether to exec), forks a process that runs osep's main as ``python -m osep`` would (or execs
# ``python -m osep``), waits for it (killed at the guard), and answers with [exit status, seconds,
# ru_maxrss KiB, killed]. A process's ru_maxrss counts the image it was forked as, even across an
# exec: forked from this small server, not from the tests' own process of hundreds of MiB.
_SERVER = """
import json, os, sys, time, traceback
import osep.config.trace, osep.experiment.runs, osep.ui.render  # what a case would import: once
from osep.ui.cli import main
GUARD = float(sys.argv[1])
for request in sys.stdin:
    argv, err, alone = json.loads(request)
    sys.stdout.flush(); sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0); os.dup2(null, 1)
            os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            if alone:
                os.execv(sys.executable, [sys.executable, "-m", "osep", *argv])
            sys.argv = ["osep", *argv]
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
                if code == 1 and exc.code is not None:
                    print(exc.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os._exit(code)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > GUARD:
            os.kill(pid, 9)
            _, status, usage = os.wait4(pid, 0)
            killed = True
            break
        time.sleep(0.005)
    seconds = time.monotonic() - start
    print(json.dumps([os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss, killed]), flush=True)
"""


class Forker:
    """One server of forked cases (see _SERVER), one case at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(GUARD)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)

    def run(self, case: Case, err: Path, alone: bool) -> Outcome:
        """The case forked from the server (``alone``: as ``python -m osep``, a new interpreter)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        argv = ["simulate", "--trace", str(case.path), *case.args]
        self.proc.stdin.write(json.dumps([argv, str(err), alone]) + "\n")
        self.proc.stdin.flush()
        rc, seconds, maxrss, killed = json.loads(self.proc.stdout.readline())
        return Outcome(case, rc, seconds, maxrss, err.read_text(errors="replace"), killed)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture(scope="session")
def forkers() -> Iterator[list[Forker]]:
    servers = [Forker() for _ in range(WORKERS)]
    yield servers
    for server in servers:
        server.close()


def run_all(cases: list[Case], forkers: list[Forker], scratch: Path, alone: bool = False) -> list[Outcome]:
    """Every case, WORKERS at a time (``alone``: each a ``python -m osep``); the faults of all are
    asserted together, and the figures printed."""
    scratch.mkdir(exist_ok=True)
    free = list(forkers)
    lock = threading.Lock()

    def one(numbered: tuple[int, Case]) -> Outcome:
        k, case = numbered
        err = scratch / f"{k}.stderr"
        with lock:
            server = free.pop()
        try:
            return server.run(case, err, alone)
        finally:
            with lock:
                free.append(server)

    with ThreadPoolExecutor(WORKERS) as pool:
        outcomes = list(pool.map(one, enumerate(cases)))
    slowest = max(outcomes, key=lambda o: o.seconds)
    largest = max(outcomes, key=lambda o: o.maxrss)
    print(f"\n{len(outcomes)} cases ({sum(o.rc == 0 for o in outcomes)} ran, {sum(o.rc == 2 for o in outcomes)} "
          f"refused); slowest {slowest.seconds:.1f} s ({slowest.case.family} {slowest.case.path.name}), largest "
          f"{largest.maxrss // 1024} MiB ({largest.case.family} {largest.case.path.name})")
    faults = [f for o in outcomes for f in o.faults()]
    assert not faults, "\n".join(faults[:20])
    return outcomes


# -- the cases -------------------------------------------------------------------------------------

HOSTILE_NUMBERS = [
    "\u00b2", "\u0663", "9" * 5000, "1e400", "-1e400", "1e-400", "-0", "-0.0", "nan", "-nan", "inf", "-inf",
    "0x10", "1_000", "9e999999999", "1e-999999999", "2147483648", "2147483647", "0", "-1", ".", "+", "1.",
    ".5", "+.5e-3", "1e", "\U0001d7d9", "\x00", "\x1b[2J", "",
]
WINDOWS = [(), ("--from-second", "1e10"), ("--until-second", "1"),
           ("--from-second", "5", "--until-second", "6"), ("--days", "0.0001"),
           ("--from-second", "9999999999", "--until-second", "1e10"), ("--compress", "1000"), ("--compress", "0.001")]
OPTIONS = [SMALL, (*SMALL, "--owners", "group.user"), (*SMALL, "--cores-per-machine", "4096"),
           (*SMALL, "--owners", "partition", "--least", "0.5"), ("--limit", "3", "--policy", "osep"),
           (*SMALL, "--cores", "3", "--cores-per-machine", "2")]


def write(path: Path, text: str | bytes, zipped: bool = False) -> Path:
    """``text`` at ``path`` (``.gz`` added and compressed if ``zipped``)."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    if zipped:
        path, data = path.with_name(path.name + ".gz"), gzip.compress(data, 1)
    path.write_bytes(data)
    return path


def record(**fields: object) -> str:
    """GOOD with some fields (1-based, as f2, f11) replaced."""
    parts = GOOD.split()
    for name, value in fields.items():
        parts[int(name[1:]) - 1] = str(value)
    return " ".join(parts)


def header_cases(tmp: Path) -> list[Case]:
    cases = []
    for k, value in enumerate(HOSTILE_NUMBERS):
        for key in ("MaxProcs", "MaxNodes"):
            text = f"; Computer: x{value}\n; {key}: {value}\n; {value}: {value}\n{GOOD}\n{record(f1=2, f2=5)}\n"
            cases.append(Case("header", write(tmp / f"h{k}{key}.swf", text, zipped=key == "MaxNodes")))
    return cases


def field_cases(tmp: Path) -> list[Case]:
    """Each hostile number in each field, a line each, beside good lines; windows and options vary."""
    cases = []
    for k, value in enumerate(HOSTILE_NUMBERS):
        lines = [record(**{f"f{n}": value}) for n in range(1, 19)]
        lines += [GOOD, record(f1=2, f2=30, f4=100, f12=2)]
        for zipped in (False, True):
            args = (*OPTIONS[k % len(OPTIONS)], *WINDOWS[(k + zipped) % len(WINDOWS)])
            cases.append(Case("field", write(tmp / f"f{k}.swf", "\n".join(lines) + "\n", zipped), args))
    return cases


def window_cases(tmp: Path) -> list[Case]:
    """Hostile submit, wait and run times, with --from-second and --until-second around them."""
    cases = []
    times = ["1e10", "9999999999.5", "1e300", "1e-300", "-0", "0.0000001", "1e8", "100000001"]
    for k, value in enumerate(times):
        text = "\n".join([record(f2=value), record(f1=2, f2=value, f3=value, f4=value), record(f2=1, f3=value),
                          GOOD]) + "\n"
        path = write(tmp / f"w{k}.swf", text, zipped=k % 2 == 1)
        cases += [Case("window", path, (*SMALL, *window)) for window in WINDOWS[:4]]
    return cases


def nasa_lines(count: int) -> list[bytes]:
    return gzip.decompress(NASA.read_bytes()).splitlines(keepends=True)[:count]


def damage_cases(tmp: Path) -> list[Case]:
    """The first lines of the NASA log, damaged by a seeded generator."""
    rng = random.Random(SEED)
    lines = nasa_lines(400)
    base = b"".join(lines)
    cases = []
    for k in range(90):
        data = bytearray(base)
        kind = k % 9
        if kind == 0:  # bytes flipped
            for _ in range(rng.randint(1, 40)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 1:  # cut anywhere
            data = data[:rng.randrange(len(data))]
        elif kind == 2:  # NULs
            for _ in range(rng.randint(1, 200)):
                data[rng.randrange(len(data))] = 0
        elif kind == 3:  # invalid UTF-8 and surrogates' bytes
            for _ in range(rng.randint(1, 50)):
                at = rng.randrange(len(data))
                data[at:at] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x80\xa8"])
        elif kind == 4:  # other line ends
            data = bytearray(bytes(data).replace(b"\n", rng.choice([b"\r", b"\r\n", b"\x0b", b"\x1c", b"\x85"])))
        elif kind == 5:  # lines shuffled, repeated, dropped
            chosen = [rng.choice(lines) for _ in lines]
            data = bytearray(b"".join(chosen))
        elif kind == 6:  # random binary spliced in
            at = rng.randrange(len(data))
            data[at:at] = rng.randbytes(rng.randint(1, 5000))
        elif kind == 7:  # fields swapped for hostile numbers
            out = []
            for line in lines:
                parts = line.split()
                if parts and not line.startswith(b";") and rng.random() < 0.3:
                    parts[rng.randrange(len(parts))] = rng.choice(HOSTILE_NUMBERS).encode()
                out.append(b" ".join(parts) + b"\n")
            data = bytearray(b"".join(out))
        else:  # random bytes only
            data = bytearray(rng.randbytes(rng.randint(0, 20000)))
        args = OPTIONS[k % len(OPTIONS)] + WINDOWS[k % 3]
        cases.append(Case("damage", write(tmp / f"d{k}.swf", bytes(data), zipped=k % 2 == 0), args))
    return cases


def gzip_cases(tmp: Path) -> list[Case]:
    """Damaged gzip streams, and names that say the wrong thing."""
    packed = gzip.compress(b"".join(nasa_lines(300)))
    good = GOOD.encode() + b"\n"
    streams = [packed[:cut] for cut in (0, 1, 2, 9, 10, 11, 100, len(packed) // 2, len(packed) - 8,
                                        len(packed) - 1)]
    streams += [packed + b"\0" * 10, packed + b"garbage", packed + packed[:20], packed + packed, packed + b"\x1f",
                packed[:-8] + b"\0" * 8, packed[:-4] + b"\xff\xff\xff\xff",
                b"\x1f\x8b\x08\x04" + b"\0" * 6 + b"\xff\xff" + b"x" * 100,  # an extra field longer than the file
                b"\x1f\x8b\x08\x08" + b"\0" * 6 + b"name" * 1000,  # a name with no end
                b"\x1f\x8b\x09\x00" + b"\0" * 6, gzip.compress(b""), gzip.compress(b"\0" * 100_000)]
    cases = [Case("gzip", write(tmp / f"g{k}.swf.gz", data)) for k, data in enumerate(streams)]
    cases.append(Case("gzip", write(tmp / "plain.swf.gz", good)))  # named .gz, plain
    cases.append(Case("gzip", write(tmp / "packed.swf", gzip.compress(good * 3))))  # gzip, not named so
    return cases


def path_cases(tmp: Path) -> list[Case]:
    """Paths that are no regular file, or no file at all."""
    fifo = tmp / "fifo.swf"
    os.mkfifo(fifo)
    (tmp / "dir.swf").mkdir()
    (tmp / "loop.swf").symlink_to(tmp / "loop.swf")
    (tmp / "dangling.swf").symlink_to(tmp / "nowhere")
    (tmp / "to-fifo.swf").symlink_to(fifo)
    odd = write(tmp / "new\nline\x1b[2J.swf", GOOD + "\n")
    empty = write(tmp / "empty.swf", b"")
    header = write(tmp / "header.swf", "; MaxProcs: 1\n" * 3)
    paths = [fifo, tmp / "dir.swf", tmp / "loop.swf", tmp / "dangling.swf", tmp / "to-fifo.swf", tmp / "missing.swf",
             odd, empty, header, Path("/dev/zero"), Path("/dev/urandom"), Path("/dev/null"), Path("/"),
             tmp / ("x" * 300 + ".swf"), tmp / "fifo.swf" / "under"]
    return [Case("path", path) for path in paths]


def random_cases(tmp: Path) -> list[Case]:
    """Random logs: good records mostly, some with hostile numbers, blank lines and comments among them."""
    rng = random.Random(SEED + 1)
    cases = []
    for k in range(60):
        lines = [f"; MaxProcs: {rng.choice(['64', '128', '4096', rng.choice(HOSTILE_NUMBERS)])}"]
        for n in range(rng.randint(0, 120)):
            roll = rng.random()
            if roll < 0.05:
                lines.append(rng.choice(["", ";", "; Note: x", "   ", "\t"]))
                continue
            fields = [n + 1, rng.randint(0, 10**6), rng.choice([-1, rng.randint(0, 999)]),
                      rng.choice([rng.randint(1, 10**5), -1, 0]), rng.choice([1, 1, 2, 8, 128, -1]),
                      -1, -1, rng.choice([-1, 4]), -1, -1, rng.choice([1, 1, 0, 5, 2, 7, -1]),
                      rng.randint(-1, 30), rng.randint(-1, 5), -1, rng.randint(-1, 3), rng.randint(-1, 2), -1, -1]
            text = [str(f) for f in fields]
            if roll > 0.9:
                text[rng.randrange(18)] = rng.choice(HOSTILE_NUMBERS)
            lines.append(" ".join(text))
        args = (*OPTIONS[k % len(OPTIONS)], *WINDOWS[k % len(WINDOWS)])
        cases.append(Case("random", write(tmp / f"r{k}.swf", "\n".join(lines) + "\n", zipped=k % 3 == 0), args))
    return cases


FAMILIES = {"header": header_cases, "field": field_cases, "window": window_cases, "damage": damage_cases,
            "gzip": gzip_cases, "path": path_cases, "random": random_cases}


@pytest.mark.parametrize("family", FAMILIES)
def test_hostile_traces_run_or_fail_in_one_line(family, forkers, tmp_path):
    cases = FAMILIES[family](tmp_path)
    outcomes = run_all(cases, forkers, tmp_path / "stderr")
    if family == "path":  # none of these is a log but the one with an odd name: each is refused, naming it
        refused = [o for o in outcomes if o.rc == 2]
        assert len(refused) == len(outcomes) - 1
        named = [o for o in refused if "\n" not in str(o.case.path)]
        assert all(o.stderr.startswith(f"osep: error: {o.case.path}: ") for o in named)
    if family == "header":  # no hostile MaxProcs is taken: the pool is the two jobs' peak, or an error says why
        assert sum(o.rc == 0 for o in outcomes) >= len(outcomes) // 2


# -- decompression bombs, made once a session --------------------------------------------------------

def gzip_members(path: Path, chunk: bytes, total: int) -> Path:
    """About ``total`` bytes of ``chunk`` repeated, as a gzip file of one member per chunk (the
    member compressed once, written as often as needed: a GiB costs a few milliseconds)."""
    member = gzip.compress(chunk, 9)
    with path.open("wb") as out:
        for _ in range(-(-total // len(chunk))):
            out.write(member)
    return path


def gzip_stream(path: Path, chunk: bytes, total: int) -> Path:
    """The same as one gzip member, compressed a chunk at a time (never all in memory)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        for _ in range(-(-total // len(chunk))):
            out.write(packer.compress(chunk))
        out.write(packer.flush())
    return path


@pytest.fixture(scope="session")
def bombs(tmp_path_factory) -> list[Case]:
    tmp = tmp_path_factory.mktemp("bombs")
    keys = b"".join(b"; Key%d: %d\n" % (k, k) for k in range(1_000_000))
    made = [
        gzip_members(tmp / "newlines.swf.gz", b"\n" * MIB, GIB),
        gzip_members(tmp / "short-lines.swf.gz", b"x 1\n" * (MIB // 4), GIB),
        gzip_members(tmp / "comments.swf.gz", b";\n" * (MIB // 2), GIB),
        gzip_stream(tmp / "zeros.swf.gz", b"\0" * (16 * MIB), 2 * GIB),
        gzip_members(tmp / "one-line.swf.gz", b"1" * MIB, GIB),
        gzip_members(tmp / "digits.swf.gz", (b"7" * 60_000 + b"\n") * 16, GIB),
        gzip_members(tmp / "fields.swf.gz", (b"1 " * 30_000 + b"\n") * 16, GIB),
        gzip_members(tmp / "long-header.swf.gz", (b"; " + b"k" * 30_000 + b": " + b"v" * 30_000 + b"\n") * 16,
                     GIB),
        gzip_members(tmp / "keys.swf.gz", keys, len(keys)),
        gzip_members(tmp / "records-then-newlines.swf.gz", (GOOD.encode() + b"\n") * 50 + b"\n" * MIB, GIB),
        write(tmp / "empty-members.swf.gz", gzip.compress(b"") * 200_000),
    ]
    with (tmp / "one-line.swf").open("wb") as out:  # plain: 500 MB and no newline
        for _ in range(500):
            out.write(b"9" * 1_000_000)
    made.append(tmp / "one-line.swf")
    return [Case("bomb", path, ("--policy", "greedy")) for path in made]


def test_bombs_stop_soon_in_one_line(bombs, forkers, tmp_path):
    """Each, as ``python -m osep``, ends within the guard, in little memory, with one line naming the
    bound it hit."""
    outcomes = run_all(bombs, forkers, tmp_path / "stderr", alone=True)
    said = {o.case.path.name: o.stderr for o in outcomes}
    assert all(o.rc == 2 for o in outcomes)
    assert all(o.maxrss < 200 * 1024 for o in outcomes), [(o.case.path.name, o.maxrss) for o in outcomes]
    for name in ("newlines.swf.gz", "short-lines.swf.gz", "comments.swf.gz", "keys.swf.gz",
                 "records-then-newlines.swf.gz"):
        assert "lines that are no record (blank, comments, or not 18 numbers) by line 100,0" in said[name]
    for name in ("zeros.swf.gz", "one-line.swf.gz", "one-line.swf"):
        assert "line 1 is longer than 65,536 characters" in said[name]
    for name in ("digits.swf.gz", "fields.swf.gz", "long-header.swf.gz"):
        assert "more than 268,435,456 bytes (uncompressed)" in said[name]
    assert "no data lines" in said["empty-members.swf.gz"]

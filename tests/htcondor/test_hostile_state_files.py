"""Damaged and hostile state files and state-file paths, through the real command in a child process.

Every case is made, deterministically (a seeded random), from a state file osep wrote with realistic
content (ceilings through two negotiators and one of an earlier version, vacates in progress, rooms
kept, recent vacates): hostile numbers in every numeric place (1e400, NaN, 4,400-digit integers,
-0, ...), with the checksum made again where it can be, keys deleted, added and given twice, wrong
types everywhere, deep nesting, bytes flipped, the file cut short, invalid UTF-8, a BOM, files of the
earlier formats, whole files of the costliest JSON, and paths that are no file (``/``, ``.``, the
empty path, a directory, a FIFO, devices, a symlink loop, names with newlines and terminal escapes,
very long paths, a path under a file). Each goes through ``osep release --state-file`` (a smaller
family through ``osep run --once``), with no HTCondor configuration (``CONDOR_CONFIG=/dev/null``),
so that a file osep accepts ends quickly at the pool it cannot find.

What must hold for every case: no traceback; done within :data:`GUARD` seconds; a peak memory
(``ru_maxrss`` of the command, from a small launcher that forks it, since a child's figure counts
the memory of the process it was started from) below 1 GiB; exit status 0, 1 or 2, and either
nothing on stderr or exactly one line ``osep: error: ...`` with nothing unprintable in it, naming
the file. The figures are printed: run with ``-s``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders import places
from osep.config.toml import escape
from osep.core.model import JobId
from osep.core.reservations import Reservation
from osep.htcondor.state_format import MAX_BYTES, CeilingRecord, SavedState, checksum, encode

SEED = 20261128
GUARD = 20  # seconds: a case still running after this long is a hang
MEMORY = 1 << 20  # KiB: 1 GiB
WORKERS = 3  # cases run at once, each its own process (some wait on the pool they cannot find)
POLICY = Path(__file__).parents[2] / "osep" / "data" / "policy.toml"

T0 = 1_790_000_000.0
REAL = SavedState(
    ceilings={
        "negotiator@cm.example.org": {"alice@example.org": CeilingRecord(-1, (12,)),
                                      "bob@example.org": CeilingRecord(40, (8, 6))},
        "negotiator2@cm2.example.org": {"carol@example.org": CeilingRecord(0, (3,))},
        "": {"dave@example.org": CeilingRecord(-1, (2,))},
    },
    vacates=[(JobId("schedd@submit1.example.org", 1200 + k, k % 3, "cm.example.org:9618"),
              T0 - 3600.5 + k, T0 - 30.25 + k) for k in range(4)]
    + [(JobId("schedd@submit2.example.org", 77, 0), None, T0 - 5.0)],
    reservations=[Reservation("carol", f"slot1_{k}@node{k}.example.org", T0 + 600.0, 1 + k,
                              (4, 8192, k % 2, 1_000_000)) for k in range(3)],
    recent={JobId("schedd@submit1.example.org", 1200 + k, k % 3, "cm.example.org:9618"):
            [T0 - 1800.0 + 60.5 * j for j in range(k + 1)] for k in range(4)},
)
REAL_BYTES = encode(REAL)

HOSTILE_NUMBERS = [
    "1e400", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity", "-0", "-0.0", "0", "-1", "-2",
    "0.5", "1.5e308", "2147483648", "9223372036854775808", "1" * 4400, "-" + "9" * 30, "1" + "0" * 21,
    "1e5", "0.1e1", "1E+2", "00", "1.", ".5", "+1", "0x10", "2e40", "1099511627777.0",
]
WRONG_TYPES: list[Any] = [None, True, False, "text", "", [], {}, [1, 2], {"a": 1}, 3.25, -7, "x" * 5000,
                          ["\x1b[31m"], "a\nb", "\u202eevil", {"": None}]
INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe2\x82", b"\xc0\xaf"]
DEPTHS = [7, 9, 100, 977, 5000, 200_000]


class Raw(str):
    """Text put into a JSON file exactly as it is (a hostile literal, deep nesting)."""


@dataclass
class Case:
    family: str
    detail: str
    content: bytes | None = None  # the file's bytes; None: ``make`` makes the path
    make: Callable[[Path], Path] | None = None
    command: str = "release"


# -- writing files with raw parts -----------------------------------------------------------------


def dumps(doc: Any) -> bytes:
    """``doc`` as JSON, each :class:`Raw` as it is."""
    raws: list[str] = []

    def mark(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(str(value))
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(doc))
    for k, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x00raw{k}\x00"), raw)
    return text.encode("utf-8", "surrogatepass")


def resum(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the checksum of what its state now says, where one can be made."""
    with contextlib.suppress(KeyError, TypeError, ValueError):
        doc["sha256"] = checksum(doc["state"])
    return doc


def put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    here = out
    for step in path[:-1]:
        here = here[step]
    here[path[-1]] = value
    return out


def real() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(REAL_BYTES)
    return doc


# -- the cases ------------------------------------------------------------------------------------


def number_cases(rng: random.Random) -> Iterator[Case]:
    doc = real()
    numeric = [p for p in places(doc) if isinstance(_at(doc, p), (int, float)) and not isinstance(_at(doc, p), bool)]
    for k in range(70):
        path, number = rng.choice(numeric), HOSTILE_NUMBERS[k % len(HOSTILE_NUMBERS)]
        text = dumps(put(doc, path, Raw(number)))
        if k % 2:  # the checksum of what a reader makes of it, where it can be made
            with contextlib.suppress(ValueError):
                text = dumps(resum(json.loads(text)))
        yield Case("number", f"{_show(path)} = {number[:20]}", text)


def type_cases(rng: random.Random) -> Iterator[Case]:
    doc = real()
    every = list(places(doc))
    for k in range(50):
        path = rng.choice(every)
        value = WRONG_TYPES[k % len(WRONG_TYPES)]
        changed = put(doc, path, value)
        yield Case("type", f"{_show(path)} = {str(value)[:20]!r}", dumps(resum(changed) if k % 4 else changed))


def key_cases(rng: random.Random) -> Iterator[Case]:
    doc = real()
    objects = [()] + [p for p in places(doc) if isinstance(_at(doc, p), dict)]
    for k in range(36):
        path = rng.choice(objects)
        target = _at(doc, path)
        if not target:
            continue
        key = rng.choice(sorted(target))
        if k % 3 == 0:  # deleted
            changed = copy.deepcopy(doc)
            del _at(changed, path)[key]
            yield Case("key", f"{_show(path)}: {key} deleted", dumps(resum(changed)))
        elif k % 3 == 1:  # an unknown key, or a hostile name as a key
            name = rng.choice(["extra", "", "a\nb", "\x1b[31mred", "k" * 100_000, "\ud800"])
            changed = put(doc, (*path, name), 1)
            yield Case("key", f"{_show(path)}: {name[:20]!r} added", dumps(resum(changed)))
        else:  # given twice, the checksum that of the document either way
            marked = put(doc, (*path, "\x00twice\x00"), _at(doc, (*path, key)))
            text = dumps(resum(marked)).replace(json.dumps("\x00twice\x00").encode(), json.dumps(key).encode())
            yield Case("key", f"{_show(path)}: {key} twice", text)


def nesting_cases(rng: random.Random) -> Iterator[Case]:
    doc = real()
    every = list(places(doc))
    for k in range(24):
        depth = DEPTHS[k % len(DEPTHS)]
        opener, closer = ("[", "]") if k % 2 else ('{"a":', "}")
        nested = Raw(opener * depth + "0" + closer * depth) if k % 2 == 0 else Raw(opener * depth + closer * depth)
        if k % 5 == 4:  # opened, never closed
            nested = Raw(opener * depth)
        path = rng.choice(every)
        yield Case("nesting", f"{_show(path)}: {depth} deep{' unclosed' if k % 5 == 4 else ''}",
                   dumps(resum(put(doc, path, nested)) if k % 5 != 4 else put(doc, path, nested)))


def byte_cases(rng: random.Random) -> Iterator[Case]:
    for k in range(40):
        data = bytearray(REAL_BYTES)
        for _ in range(1 + k % 3):
            data[rng.randrange(len(data))] = rng.randrange(256)
        yield Case("bytes", f"flipped #{k}", bytes(data))
    for _ in range(20):
        cut = rng.randrange(len(REAL_BYTES))
        yield Case("cut", f"at {cut}", REAL_BYTES[:cut])


def encoding_cases(rng: random.Random) -> Iterator[Case]:
    for bad in INVALID_UTF8:
        at = REAL_BYTES.index(b"alice") + 2
        yield Case("encoding", f"{bad!r} in a name", REAL_BYTES[:at] + bad + REAL_BYTES[at:])
    yield Case("encoding", "BOM", b"\xef\xbb\xbf" + REAL_BYTES)
    yield Case("encoding", "UTF-16", REAL_BYTES.decode().encode("utf-16"))
    yield Case("encoding", "NUL inside", REAL_BYTES[:40] + b"\x00" + REAL_BYTES[40:])
    yield Case("encoding", "CRLF", REAL_BYTES.replace(b"\n", b"\r\n"))
    yield Case("encoding", "lone surrogate escape", dumps(put(real(), ("state", "reservations", 0, "owner"),
                                                              Raw('"\\ud800"'))))


def whole_cases() -> Iterator[Case]:
    for text in [b"", b" \n", b"null", b"[]", b'"x"', b"4", b"true", b"{}", b"{", b"}", b"[" * 977,
                 b'{"format": "osep-state"}', b'{"format": "osep-state", "version": 2}',
                 b'{"format": "osep-state", "version": 3, "sha256": "", "state": {}}',
                 b'{"format": "osep-state", "version": true, "sha256": "", "state": {}}',
                 b"\x1b[31m\x07\x1b]0;title\x07"]:
        yield Case("whole", repr(text[:30]), text)
    doc = real()
    doc["state"]["ceilings"]["negotiator@cm.example.org"]["alice@example.org"]["set"] = [13]
    yield Case("whole", "checksum mismatch", dumps(doc))
    yield Case("whole", "checksum of another state", dumps(dict(real(), sha256=checksum({}))))
    yield Case("whole", "huge key", dumps(resum(put(real(), ("state", "ceilings", "k" * 5_000_000), {}))))
    big = MAX_BYTES - 10
    for name, unit in [("[]", b"[],"), ("strings", b'"ab",'), ("floats", b"0.5,"), ("empty strings", b'"",')]:
        yield Case("whole", f"{MAX_BYTES >> 20} MiB of {name}", b"[" + unit * (big // len(unit)) + b"0]")
    yield Case("whole", "one string of 16 MiB", b'{"' + b"x" * big + b'":0}')
    yield Case("whole", "unterminated escaped quotes", b'"' + b'\\"' * (big // 2))
    yield Case("whole", "too large", make=_too_large)
    yield Case("whole", "as osep wrote it", REAL_BYTES)
    yield Case("whole", "nothing recorded", encode(SavedState()))


def legacy_cases(rng: random.Random) -> Iterator[Case]:
    v0 = {"ceilings": {"alice@example.org": 4, "bob@example.org": 7}, "original": {"bob@example.org": 10}}
    v1 = {"negotiators": {"negotiator@cm.example.org": v0, "": {"ceilings": {"carol@example.org": 2}}}}
    yield Case("legacy", "version 0", dumps(v0))
    yield Case("legacy", "version 1, empty", dumps({"negotiators": {}}))
    for k in range(10):
        doc = v1 if k % 2 else v0
        path = rng.choice(list(places(doc)))
        value = rng.choice([*WRONG_TYPES, Raw(rng.choice(HOSTILE_NUMBERS))])
        yield Case("legacy", f"{_show(path)} = {str(value)[:20]!r}", dumps(put(doc, path, value)))


def path_cases() -> Iterator[Case]:
    def fixed(name: str) -> Callable[[Path], Path]:
        return lambda _: Path(name)

    def under(name: str, setup: Callable[[Path], None] | None = None) -> Callable[[Path], Path]:
        def make(directory: Path) -> Path:
            if setup is not None:
                setup(directory)
            return directory / name
        return make

    yield Case("path", "/", make=fixed("/"))
    yield Case("path", ".", make=fixed("."))
    yield Case("path", "empty", make=fixed(""))
    yield Case("path", "..", make=fixed(".."))
    yield Case("path", "/dev/null", make=fixed("/dev/null"))
    yield Case("path", "/dev/zero", make=fixed("/dev/zero"))
    yield Case("path", "a directory", make=under("dir", lambda d: (d / "dir").mkdir()))
    yield Case("path", "a FIFO", make=under("fifo", lambda d: os.mkfifo(d / "fifo")))
    yield Case("path", "a symlink loop", make=under("loop", lambda d: os.symlink(d / "loop", d / "loop")))
    yield Case("path", "a dangling symlink", make=under("gone", lambda d: os.symlink(d / "nowhere", d / "gone")))
    yield Case("path", "a symlink to /dev/zero", make=under("z", lambda d: os.symlink("/dev/zero", d / "z")))
    yield Case("path", "parent missing", make=under("no/such/dir/state"))
    yield Case("path", "under a file", make=under("file/state", lambda d: (d / "file").write_text("")))
    yield Case("path", "unwritable directory", make=under("ro/state", lambda d: (d / "ro").mkdir(mode=0o555)))
    yield Case("path", "newline and escapes", make=under("a\nb\x1b[31m\x07"))
    yield Case("path", "a long name", make=under("n" * 300))
    yield Case("path", "a long path", make=under("d/" * 2100 + "state"))
    yield Case("path", "trailing slash", make=under("file/", lambda d: (d / "file").write_bytes(REAL_BYTES)))
    yield Case("path", "lock is a directory", make=under("s", lambda d: (d / "s.lock").mkdir()))
    yield Case("path", "temporary file is a directory",
               make=under("t", lambda d: ((d / "t").write_bytes(REAL_BYTES), (d / "t.osep-tmp").mkdir())))


def _too_large(directory: Path) -> Path:
    path = directory / "large"
    with path.open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    return path


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _show(path: tuple[Any, ...]) -> str:
    return ".".join(str(p)[:20] for p in path)


def all_cases() -> list[Case]:
    rng = random.Random(SEED)
    cases = [*number_cases(rng), *type_cases(rng), *key_cases(rng), *nesting_cases(rng), *byte_cases(rng),
             *encoding_cases(rng), *whole_cases(), *legacy_cases(rng), *path_cases()]
    # A smaller family through osep run --once: the state file is read before any pool contact.
    picked = rng.sample([c for c in cases if c.content is not None and c.family != "whole"], 20)
    runs = [Case(c.family, c.detail, c.content, c.make, "run") for c in picked]
    runs += [Case(c.family, c.detail, c.content, c.make, "run") for c in cases if c.family == "path"][:6]
    runs.append(Case("whole", "16 MiB of []", next(c.content for c in cases if c.detail.endswith("of []")),
                     command="run"))
    return cases + runs


# -- running them ---------------------------------------------------------------------------------

# The command is forked from this small launcher, which prints its peak memory and exit status.
_LAUNCH = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(f"\\nLAUNCHER {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


@dataclass
class Outcome:
    case: Case
    path: Path
    status: int | None  # None: killed after GUARD seconds
    stderr: str
    stdout: str
    seconds: float
    kib: int


def run_case(case: Case, directory: Path) -> Outcome:
    directory.mkdir()
    if case.make is not None:
        path = case.make(directory)
    else:
        path = directory / "state.json"
        path.write_bytes(case.content or b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OSEP_", "_CONDOR_", "CONDOR_"))}
    env["CONDOR_CONFIG"] = "/dev/null"  # no pool: a file osep accepts ends at the pool, quickly
    # The structured log to a file: what stderr has is the command's own error line.
    args = ["--log-file", str(directory / "log")]
    if case.command == "release":
        args += ["release", "--state-file", str(path)]
    else:
        args += ["run", "--once", "--policy-file", str(POLICY), "--state-file", str(path)]
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, sys.executable, "-m", "osep", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            cwd=directory, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Outcome(case, path, None, err.decode(errors="replace"), "", time.monotonic() - start, 0)
    seconds = time.monotonic() - start
    text = out.decode(errors="replace")
    body, _, last = text.rpartition("\nLAUNCHER ")
    kib, status = (int(x) for x in last.split())
    return Outcome(case, path, status, err.decode(errors="replace"), body, seconds, kib)


def problems(result: Outcome) -> list[str]:
    """What is wrong with how the command ended, if anything."""
    found = []
    if result.status is None:
        return [f"still running after {GUARD} s"]
    if "Traceback" in result.stderr:
        return ["traceback: " + result.stderr[-600:]]
    if result.kib >= MEMORY:
        found.append(f"peak memory {result.kib >> 10} MiB")
    if result.status not in (0, 1, 2):
        found.append(f"exit status {result.status}")
    lines = result.stderr.splitlines()
    if result.status == 0 or (result.status == 1 and result.case.command == "run"):  # 1: a cycle failed
        if lines:
            found.append(f"succeeded with stderr {lines[:3]}")
    elif len(lines) != 1 or not result.stderr.endswith("\n") or not lines[0].startswith("osep: error: "):
        found.append(f"stderr is not one error line: {result.stderr[:400]!r}")
    elif not lines[0].isprintable():
        found.append(f"unprintable characters: {lines[0][:200]!r}")
    elif result.case.family != "path" and escape(str(result.path)) not in lines[0]:
        found.append(f"the file is not named: {lines[0][:200]}")
    return found


def test_hostile_state_files_end_in_one_line(tmp_path):
    cases = all_cases()
    assert len(cases) >= 300
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda k: run_case(cases[k], tmp_path / f"case{k}"), range(len(cases))))
    failures = [f"{r.case.command} {r.case.family} {r.case.detail!r}: {p}" for r in results for p in problems(r)]
    families: dict[str, str] = {}
    for name in sorted({f"{r.case.command} {r.case.family}" for r in results}):
        mine = [r for r in results if f"{r.case.command} {r.case.family}" == name]
        families[name] = f"{len(mine)} in {sum(r.seconds for r in mine):.0f} s"
    slowest = max(results, key=lambda r: r.seconds)
    largest = max(results, key=lambda r: r.kib)
    print(f"\n{len(results)} cases {families}; refused {sum(r.status == 2 for r in results)}, "
          f"succeeded {sum(r.status == 0 for r in results)}; slowest {slowest.seconds:.1f} s "
          f"({slowest.case.family} {slowest.case.detail!r}); largest {largest.kib >> 10} MiB "
          f"({largest.case.family} {largest.case.detail!r}); failures {len(failures)}")
    assert not failures, "\n".join(failures[:20])

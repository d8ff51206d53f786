"""The state file: what it keeps, every check on reading, whole writes, and its lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.model import JobId
from osep.core.reservations import Reservation
from osep.htcondor.state import StateFile, read_state
from osep.htcondor.state_format import (
    MAX_BYTES,
    MAX_ENTRIES,
    MAX_RECENT,
    MAX_TIMES,
    MAX_TOKENS,
    CeilingRecord,
    SavedState,
    StateError,
    checksum,
    decode,
    encode,
)

FULL = SavedState(
    ceilings={"negotiator@cm": {"alice@site": CeilingRecord(-1, (4,), 1900.25),
                                "bob@site": CeilingRecord(7, (3, 2))},
              "": {"carol@site": CeilingRecord(0, (0,))}},
    vacates=[(JobId("schedd@cm", 12, 3), 1000.0, 2000.5), (JobId("s", 1, 0, "cm:9618"), None, 5.0)],
    reservations=[Reservation("bob", "slot1@node", 2600.0, 3, (2, 1024, 0, 0))],
    recent={JobId("schedd@cm", 12, 3): [1500.0, 2000.5]},
)


def document(state: object) -> bytes:
    """A file in the current format around ``state`` (with its right checksum)."""
    try:
        digest = checksum(state)
    except ValueError:  # NaN or an infinity: no checksum is needed to refuse that
        digest = "0"
    return json.dumps({"format": "osep-state", "version": 2, "sha256": digest, "state": state}).encode()


def body(**changes: object) -> dict[str, object]:
    out: dict[str, object] = json.loads(encode(FULL))["state"]
    out.update(changes)
    return out


def test_what_is_written_is_read_back_as_it_was(tmp_path):
    path = tmp_path / "state"
    StateFile(path).save(FULL)
    assert read_state(path) == FULL
    assert read_state(tmp_path / "none") == SavedState()  # no file yet: nothing to take over
    assert not (tmp_path / "state.osep-tmp").exists()
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_what_is_written_stays_within_the_bounds_it_is_read_with():
    many = SavedState(vacates=[(JobId("s", 1, k), None, 5.0) for k in range(MAX_ENTRIES + 5)],
                      recent={JobId("s", 1, 0): [float(t) for t in range(MAX_TIMES + 5)]})
    back = decode(encode(many))
    assert len(back.vacates) == MAX_ENTRIES and back.vacates[-1] == many.vacates[-1]  # the newest
    assert back.recent[JobId("s", 1, 0)] == many.recent[JobId("s", 1, 0)][-MAX_TIMES:]


def test_a_ceiling_recorded_before_osep_kept_since_when_is_read_without_it():
    older = body(ceilings={"n": {"a@s": {"original": -1, "set": [4]}}})
    assert decode(document(older)).ceilings == {"n": {"a@s": CeilingRecord(-1, (4,), None)}}


def test_the_two_earlier_formats_are_still_read():
    v1 = {"negotiators": {"n": {"ceilings": {"a@s": 4}, "original": {"a@s": 7}}}}
    assert decode(json.dumps(v1).encode()).ceilings == {"n": {"a@s": CeilingRecord(7, (4,))}}
    v0 = {"ceilings": {"a@s": 4}, "original": {}}
    assert decode(json.dumps(v0).encode()).ceilings == {"": {"a@s": CeilingRecord(-1, (4,))}}
    assert decode(b'{"negotiators": {}}') == SavedState()


BAD = [
    # (what the file holds, the key named, a piece of the reason)
    (b"", "", "not JSON"),
    (b"null", "", "its JSON is null"),
    (b"[]", "", "its JSON is a list of 0"),
    (b'"text"', "", "its JSON is the string"),
    (b"4", "", "the number 4"),
    (b"\xff\xfe{}", "", "not UTF-8 text (byte 0)"),
    (b"[" * 100_000, "", "nested more than 8 levels deep"),
    (b'{"ceilings": {"a@s": Infinity}}', "", "Infinity is not a number JSON allows"),
    (b'{"ceilings": {"a@s": NaN}}', "", "NaN is not a number JSON allows"),
    (b'{"ceilings": {"a@s": 1e999}}', "", "the number 1e999 is out of range"),
    (b'{"ceilings": {"a@s": ' + b"9" * 5000 + b"}}", "", "has more than 20 digits"),
    (b'{"ceilings": {"a@s": -2}}', "ceilings.a@s", "from -1 to"),
    (b'{"ceilings": {"a@s": 2147483648}}', "ceilings.a@s", "from -1 to"),
    (b'{"ceilings": {"a@s": true}}', "ceilings.a@s", "got True"),
    (b'{"ceilings": {"a@s": 4.5}}', "ceilings.a@s", "got 4.5"),
    (b'{"ceilings": {"": 4}}', "ceilings.''", "a name of 1 to"),
    (b'{"ceilings": {"a\\nb": 4}}', "ceilings.'a\\nb'", "printable characters, got the string 'a\\nb'"),
    (b'{"ceilings": []}', "ceilings", "expected an object"),
    (b'{"negotiators": []}', "negotiators", "expected an object"),
    (b'{"negotiators": {"n": null}}', "negotiators.n", "expected an object, got null"),
    (b'{"negotiators": {"n": {"ceilings": {"a@s": "x"}}}}', "negotiators.n.ceilings.a@s", "got 'x'"),
    (b'{"negotiators": {"n": {"extra": 1}}}', "negotiators.n", "unknown key 'extra'"),
    (b'{"something": 1}', "", "unknown key 'something'"),
    (b'{"format": "osep-state", "version": 3}', "version", "reads version 2, got 3"),
    (b'{"format": "other", "version": 2}', "format", "expected 'osep-state'"),
    (b'{"format": "osep-state", "version": 2, "state": {}}', "sha256", "is missing"),
    (b'{"format": "osep-state", "version": 2, "sha256": "0", "state": {}}', "sha256", "does not match"),
    (document([]), "state", "expected an object, got a list"),
    (document({}), "state.ceilings", "is missing"),
    (document(body(ceilings={"n": {"a@s": {"original": -1, "set": []}}})), "state.ceilings.n.a@s.set",
     "expected 1 to 8"),
    (document(body(ceilings={"n": {"a@s": {"original": "x", "set": [1]}}})),
     "state.ceilings.n.a@s.original", "got 'x'"),
    (document(body(ceilings={"n": {"a@s": {"set": [1]}}})), "state.ceilings.n.a@s.original", "got None"),
    (document(body(ceilings={"n": {"a@s": [1]}})), "state.ceilings.n.a@s", "expected an object"),
    (document(body(ceilings={"n": {"a@s": {"original": -1, "set": [1], "since": "today"}}})),
     "state.ceilings.n.a@s.since", "a time in seconds"),
    (document(body(ceilings={"n": {"a@s": {"original": -1, "set": [1], "since": -1}}})),
     "state.ceilings.n.a@s.since", "a time in seconds"),
    (document(body(ceilings={"n": {"a@s": {"original": -1, "set": [1], "since": None}}})),
     "state.ceilings.n.a@s.since", "got None"),
    (document(body(ceilings={"n": {"a" * 1025: {"original": -1, "set": [1]}}})),
     "state.ceilings.n.'" + "a" * 36 + "...", "a name of 1 to 1024 printable"),
    (document(body(vacates=[["", "s", 1, 0, None]])), "state.vacates[0]", "a list of 6 items"),
    (document(body(vacates=[["", "s", -1, 0, None, 5.0]])), "state.vacates[0][2]", "from 0 to"),
    (document(body(vacates=[["", "s", 1, 0, None, -5.0]])), "state.vacates[0][5]", "a time in seconds"),
    (document(body(vacates=[["", "s", 1, 0, None, 2.0**41]])), "state.vacates[0][5]", "a time"),
    (document(body(vacates=[[None, "s", 1, 0, None, 5.0]])), "state.vacates[0][0]", "got null"),
    (document(body(vacates={})), "state.vacates", "expected a list"),
    (document(body(reservations=[{"owner": "b"}])), "state.reservations[0].place", "got null"),
    (document(body(reservations=[{"owner": "b", "place": "p", "expires": 1, "until_running": 1,
                                  "shape": [1, 2]}])), "state.reservations[0].shape", "a list of 4"),
    (document(body(recent=[["", "s", 1, 0, "x"]])), "state.recent[0][4]", "a list of at most"),
    (document(body(recent=[["", "s", 1, 0, [float("nan")]]])), "", "NaN is not a number"),
    (document(body(other=1)), "state", "unknown key 'other'"),
    (document(body(vacates=[["", "s", 1, k, None, 5.0] for k in range(MAX_ENTRIES + 1)])), "state.vacates",
     f"more than {MAX_ENTRIES}"),
]


@pytest.mark.parametrize("raw, key, reason", BAD, ids=[f"{k}:{r}"[:60] for _, k, r in BAD])
def test_a_damaged_or_hostile_file_is_refused_naming_the_key_and_the_reason(tmp_path, raw, key, reason):
    path = tmp_path / "state"
    path.write_bytes(raw)
    with pytest.raises(StateError) as info:
        read_state(path)
    assert (info.value.key or "") == key and reason in info.value.reason, str(info.value)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_the_file_system_in_the_way(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(StateError, match="dir: is not a regular file"):
        read_state(tmp_path / "dir")
    os.mkfifo(tmp_path / "fifo")  # would wait for a writer forever if opened plainly
    with pytest.raises(StateError, match="fifo: is not a regular file"):
        read_state(tmp_path / "fifo")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    with pytest.raises(StateError, match="loop: cannot be read: Too many levels of symbolic links"):
        read_state(tmp_path / "loop")
    big = tmp_path / "big"
    with big.open("wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    with pytest.raises(StateError, match="larger than 16 MiB"):
        read_state(big)
    # A temporary file left by a crash, or put there by anyone, is replaced, never written through.
    path, target = tmp_path / "state", tmp_path / "elsewhere"
    target.write_text("precious")
    os.symlink(target, tmp_path / "state.osep-tmp")
    StateFile(path).save(FULL)
    assert target.read_text() == "precious" and read_state(path) == FULL
    # A directory where the temporary file goes: the save fails, one line; the old file is whole.
    (tmp_path / "state.osep-tmp").mkdir()
    with pytest.raises(StateError, match=r"state: cannot be written: Is a directory"):
        StateFile(path).save(SavedState())
    assert read_state(path) == FULL
    # A state file named like a temporary one is an ordinary state file.
    odd = tmp_path / "x.tmp"
    StateFile(odd).save(FULL)
    assert read_state(odd) == FULL


def test_a_second_osep_is_refused_until_the_first_lets_go(tmp_path):
    path = tmp_path / "state"
    first = StateFile(path, holder=lambda: "pid 4242 on cm.example.org")
    assert first.open() == SavedState()
    second = StateFile(path)
    with pytest.raises(StateError) as info:
        second.open()
    assert str(info.value) == (f"{path}: in use by another osep (pid 4242 on cm.example.org): this one "
                               "does nothing while that one runs")
    first.close()  # as the end of its process would
    assert second.open() == SavedState()
    second.close()
    (tmp_path / "other.lock").mkdir()
    with pytest.raises(StateError, match=r"other.lock: cannot be opened to lock the state file: Is a directory"):
        StateFile(tmp_path / "other").open()


def test_a_damaged_file_lets_the_lock_go_and_says_what_osep_does_about_it(tmp_path):
    path = tmp_path / "state"
    path.write_text("null")
    with pytest.raises(StateError, match="sets and lifts no ceiling until it is repaired or moved away"):
        StateFile(path).open()
    path.unlink()
    StateFile(path).open()  # the lock was let go


printable = st.characters(categories=("L", "N", "P", "S"))
names = st.text(printable, min_size=1, max_size=12)
times = st.floats(0, 2.0**40, allow_nan=False)
ceilings = st.integers(-1, 2**31 - 1)
job_ids = st.builds(JobId, st.text(printable, max_size=8), st.integers(0, 2**31 - 1),
                    st.integers(0, 2**31 - 1), st.text(printable, max_size=8))
states = st.builds(
    SavedState,
    ceilings=st.dictionaries(st.text(printable, max_size=8), st.dictionaries(
        names, st.builds(CeilingRecord, ceilings, st.lists(ceilings, min_size=1, max_size=8).map(tuple),
                         st.none() | times),
        min_size=1, max_size=3), max_size=3),
    vacates=st.lists(st.tuples(job_ids, st.none() | times, times), max_size=4),
    reservations=st.lists(st.builds(Reservation, names, names, times, st.integers(0, 2**31 - 1),
                                    st.tuples(*[st.integers(0, 2**31 - 1)] * 4)), max_size=4),
    recent=st.dictionaries(job_ids, st.lists(times, min_size=1, max_size=4), max_size=4),
)


@settings(max_examples=300)
@given(states)
def test_any_state_round_trips(state):
    assert decode(encode(state)) == state


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500)
@given(st.sampled_from(["ceilings", "vacates", "reservations", "recent", "state", "legacy"]), json_values)
def test_any_json_anywhere_is_read_or_refused_in_one_line(where, value):
    if where == "state":
        raw = document(value)
    elif where == "legacy":
        raw = json.dumps({"negotiators": value}).encode()
    else:
        raw = document(body(**{where: value}))
    try:
        decode(raw, "/var/spool/osep.state")
    except StateError as exc:  # nothing else may escape
        assert str(exc).startswith("/var/spool/osep.state: ") and "\n" not in str(exc)


# -- hostile files and paths: each refused in one line, cheaply ----------------------------------


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" * 400 + ".0"])
def test_a_number_out_of_range_is_refused_before_the_checksum_is_made(number):
    # The checksum re-serialises the state: an infinite float there ended osep in a ValueError.
    raw = document(body(vacates=[["", "s", 1, 0, None, 12345.5]])).replace(b"12345.5", number.encode())
    with pytest.raises(StateError, match=r"state file: is not JSON osep wrote: the number .* is out of range"):
        decode(raw)


def test_numbers_json_reads_oddly():
    with pytest.raises(StateError, match="has more than 20 digits"):
        decode(b'{"ceilings": {"a@s": ' + b"9" * 4301 + b"}}")  # beyond Python's int-from-text limit
    with pytest.raises(StateError, match="has more than 20 digits"):
        decode(b'{"ceilings": {"a@s": -' + b"1" * 21 + b"}}")
    assert decode(b'{"ceilings": {"a@s": -0}}').ceilings[""]["a@s"].values == (0,)


def test_a_key_given_twice_is_refused():
    # json.loads keeps the last: a file could say one thing to the checksum and another to a reader.
    with pytest.raises(StateError, match=r"the key 'a@s' is in an object twice"):
        decode(b'{"ceilings": {"a@s": 4, "a@s": 5}}')


@pytest.mark.parametrize("depth", [9, 977, 100_000])
def test_deep_nesting_is_refused_before_parsing(depth):
    raw = document(body(vacates=[["", "s", 1, 0, None, 5.0]])).replace(
        b"5.0", b"[" * depth + b"]" * depth)
    with pytest.raises(StateError, match="nested more than 8 levels deep"):
        decode(raw)


def test_brackets_and_quotes_in_strings_are_no_nesting():
    state = SavedState(ceilings={"n": {"[[[[[[[[[[{{{{{{{{\\\"x": CeilingRecord(-1, (1,))}})
    assert decode(encode(state)) == state


@pytest.mark.parametrize("unit", [b"[],", b'"",', b"0,", b'{"k":0},'])
def test_too_many_values_are_refused_before_parsing(unit):
    # Each of a few bytes costs json.loads some 60 bytes of objects: a 64 MiB file of [] took 1.8 GB.
    count = MAX_TOKENS // (1 if unit == b"0," else 2) + 10
    with pytest.raises(StateError, match=f"more than {MAX_TOKENS} strings, opening brackets"):
        decode(b"[" + unit * count + b"0]")


def test_the_largest_file_osep_writes_is_read(tmp_path):
    name = "x" * 30
    jobs = [JobId("schedd" + name, k, 0, "pool" + name) for k in range(MAX_ENTRIES)]
    state = SavedState(
        ceilings={f"n{k}" + name: {f"{k}" + name: CeilingRecord(-1, tuple(range(8)), 1.5e9 + 0.75)}
                  for k in range(MAX_ENTRIES)},
        vacates=[(j, 1.5e9 + 0.25, 1.5e9 + 0.5) for j in jobs],
        reservations=[Reservation("o" + name, f"slot{k}" + name, 1.5e9, 2, (4, 2048, 0, 0))
                      for k in range(MAX_ENTRIES)],
        recent={j: [1.5e9 + t + 0.125 for t in range(MAX_RECENT // MAX_ENTRIES)] for j in jobs})
    raw = encode(state)
    assert len(raw) < MAX_BYTES
    assert decode(raw) == state


def test_osep_writes_nothing_it_would_refuse_to_read(tmp_path):
    many = SavedState(vacates=[(JobId("s" * 1024, k, 0, "p" * 1024), None, 5.0) for k in range(MAX_ENTRIES)])
    with pytest.raises(ValueError, match="larger than 16 MiB"):
        encode(many)
    with pytest.raises(StateError, match="state: cannot be written: it would be larger than 16 MiB"):
        StateFile(tmp_path / "state").save(many)
    ceilings = {"n": {f"u{k}@s": CeilingRecord(-1, (1,)) for k in range(MAX_ENTRIES + 1)}}
    with pytest.raises(ValueError, match=f"{MAX_ENTRIES + 1} ceilings, more than the {MAX_ENTRIES}"):
        encode(SavedState(ceilings=ceilings))
    # Recent vacates beyond the bound in all: the newest jobs' are kept.
    recent = {JobId("s", k, 0): [float(t) for t in range(MAX_TIMES)] for k in range(MAX_RECENT // MAX_TIMES + 3)}
    back = decode(encode(SavedState(recent=recent))).recent
    assert sum(len(t) for t in back.values()) == MAX_RECENT and JobId("s", 0, 0) not in back
    with pytest.raises(StateError, match=f"state.recent: more than {MAX_RECENT} times in all"):
        decode(document(body(recent=[["", "s", k, 0, [5.0] * MAX_TIMES] for k in range(MAX_RECENT // MAX_TIMES + 1)])))


@pytest.mark.parametrize("name", ["/", ".", "", "..", "a/.."])
def test_a_path_that_names_no_file_is_refused(name):
    # Path.with_name (for the lock and the temporary file) raised ValueError on these.
    with pytest.raises(StateError, match="names a directory, not a file"):
        StateFile(Path(name))


def test_no_lock_is_made_beside_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    for name in ("fifo", "dir"):
        with pytest.raises(StateError, match=f"{name}: is not a regular file; osep sets and lifts no"):
            StateFile(tmp_path / name).open()
        assert not (tmp_path / f"{name}.lock").exists()
    with pytest.raises(StateError, match="/dev/null: is not a regular file"):
        StateFile(Path("/dev/null")).open()


def test_a_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StateError, match=r"file/state: cannot be made: .*file is not a directory"):
        StateFile(tmp_path / "file" / "state").open()
    with pytest.raises(StateError, match="file/sub/state: cannot be made: its directory cannot be: Not a dir"):
        StateFile(tmp_path / "file" / "sub" / "state").open()


# The peak memory of a process that reads a file: forked from a small launcher, since a child's
# ru_maxrss counts what the process it was started from had (pytest's, here).
_LAUNCH = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-c", sys.argv[1], sys.argv[2]])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""
_READ = """import sys
from pathlib import Path
from osep.htcondor.state import read_state
from osep.htcondor.state_format import StateError
try:
    read_state(Path(sys.argv[1]))
except StateError:
    pass
"""


def test_no_file_within_the_limit_costs_much_memory(tmp_path):
    import subprocess
    import sys

    def fill(head: bytes, unit: bytes, tail: bytes) -> bytes:
        return head + unit * ((MAX_BYTES - len(head) - len(tail)) // len(unit)) + tail

    worst = {  # the kinds that cost json.loads the most per byte, each as much as the bounds let by
        "lists": b"[" + b"[]," * (MAX_TOKENS // 2 - 5) + b"[]]",
        "floats": b"[" + b"1.5," * (MAX_TOKENS - 10) + b"1]",
        "strings": b"[" + b'"abcdefghij",' * (MAX_TOKENS // 2 - 5) + b'""]',
        "one string": fill(b'["', b"x", b'"]'),
        "escapes": fill(b'["', b"\\u00e9", b'"]'),
        "empty lists": fill(b"[", b"[],", b"[]]"),
    }
    for kind, raw in worst.items():
        assert len(raw) <= MAX_BYTES
        path = tmp_path / "state"
        path.write_bytes(raw)
        out = subprocess.run([sys.executable, "-c", _LAUNCH, _READ, str(path)], capture_output=True, text=True,
                             timeout=60, check=True).stdout.split()
        assert out[1] == "0" and int(out[0]) < 300 * 1024, (kind, out)  # KiB: about 150 MiB, measured

"""Reading the decision log back: damaged and hostile lines are counted and skipped, every number is
bounded, and no line is ever held whole when it is longer than the bound."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from osep.act.records import Outcome
from osep.core.model import JobId
from osep.errors import LogError
from osep.replay import decisions as decisionlog
from osep.replay.decisions import read_decisions

GOOD = [
    {"event": "started"},
    {"event": "cycle", "cycle": 1, "time": 1795331988.0, "capacity": 4},
    {"event": "decision", "kind": "vacate", "cycle": 1, "time": 1795331988.0, "job": "vm#1.0",
     "owner": "alice", "beneficiary": "bob", "reason": "why"},
    {"event": "action", "kind": "vacate", "cycle": 1, "time": 1795331988.0, "job": "vm#1.0",
     "owner": "alice", "beneficiary": "bob", "run_time": 12.0, "lost_work": 12.0,
     "outcome": "done", "detail": ""},
    {"event": "action", "kind": "hold", "cycle": 1, "time": 1795331988.0, "owners": ["alice"],
     "allowance": {"alice": 0}, "outcome": "done"},
]


def write(tmp_path: Path, lines: list[object], name: str = "osep.log") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(
        (x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode())
        + b"\n" for x in lines))
    return path


def read(path: Path, **window):
    warnings: list[str] = []
    return read_decisions(path, warnings.append, **window), warnings


def test_a_good_log_reads_without_warnings(tmp_path):
    log, warnings = read(write(tmp_path, GOOD))
    assert warnings == []
    assert (log.runs, log.cycles, log.capacity, log.held_cycles) == (1, 1, 4, {"alice": 1})
    assert [(a.job, a.outcome, a.reason, a.run_time) for a in log.actions] == [
        (JobId("vm", 1, 0), Outcome.DONE, "why", 12.0)]


def test_a_cycle_in_the_policys_unit_names_its_slots_apart(tmp_path):
    """A cycle logs its capacity in the policy's unit (20 cores here) and its slots apart (17: a
    partitionable slot's cores count one slot each, claimed or not); a log older than that names no
    unit and its capacity counted slots."""
    cycle = {"event": "cycle", "cycle": 1, "time": 1795331988.0, "capacity": 20.0, "unit": "cpus",
             "slots": 17}
    log, warnings = read(write(tmp_path, [GOOD[0], cycle]))
    assert warnings == [] and log.capacity == 17
    log, warnings = read(write(tmp_path, [GOOD[0], {**cycle, "slots": 4.5}]))
    assert log.capacity is None and len(warnings) == 1
    assert warnings[0].endswith("line 2: cycle event with a bad slots, skipped")


def field(name: str, value: str, event: int = 3) -> str:
    """GOOD[event] with one field set to raw JSON text (NaN, 1e999... as they would be written)."""
    line = dict(GOOD[event])
    line[name] = "@"
    return json.dumps(line).replace('"@"', value)


@pytest.mark.parametrize("line, problem", [
    # Numbers that are not numbers, or out of bounds.
    (field("time", "NaN"), "not a JSON log event"),
    (field("time", "Infinity"), "not a JSON log event"),
    (field("time", "-Infinity"), "not a JSON log event"),
    (field("time", "1e999"), "action event with a bad time"),  # parses as inf
    (field("time", "-1e999"), "action event with a bad time"),
    (field("time", "1e300"), "action event with a bad time"),
    (field("time", "-5"), "action event with a bad time"),
    (field("time", "4102444800"), "action event with a bad time"),  # 2100-01-01
    (field("time", "99999999999999999999999999"), "action event with a bad time"),
    (field("time", "3" * 5000), "not a JSON log event"),  # more digits than Python converts
    (field("time", '"1795331988"'), "action event with a bad time"),
    (field("time", "[]"), "action event with a bad time"),
    (field("time", "true"), "action event with a bad time"),
    (field("cycle", "-1"), "action event with a bad cycle"),
    (field("cycle", "1.5"), "action event with a bad cycle"),
    (field("cycle", "2147483648"), "action event with a bad cycle"),
    (field("cycle", '"1"'), "action event with a bad cycle"),
    (field("run_time", "-1"), "action event with a bad run_time"),
    (field("run_time", "1e20"), "action event with a bad run_time"),
    (field("lost_work", "1e999"), "action event with a bad lost_work"),
    (field("lost_work", '"12"'), "action event with a bad lost_work"),
    (field("capacity", "-1", event=1), "cycle event with a bad capacity"),
    (field("capacity", "1000001", event=1), "cycle event with a bad capacity"),
    (field("capacity", "4.5", event=1), "cycle event with a bad capacity"),
    (field("capacity", "1e999", event=1), "cycle event with a bad capacity"),
    # Wrong types and values for the rest.
    (field("outcome", '"exploded"'), "action event with a bad outcome"),
    (field("outcome", "[1]"), "action event with a bad outcome"),
    (field("outcome", '{"a": 1}'), "action event with a bad outcome"),
    (field("job", "5"), "action event with a bad job"),
    (field("job", '"not an id"'), "action event with a bad job"),
    (field("job", '"vm#1.-1"'), "action event with a bad job"),
    (field("job", '"vm#99999999999.0"'), "action event with a bad job"),
    (field("owner", "5"), "action event with a bad owner"),
    (field("owner", '""'), "action event with a bad owner"),
    (field("owner", '"a\\nb"'), "action event with a bad owner"),
    (field("beneficiary", "[]"), "action event with a bad beneficiary"),
    (field("slot", "{}"), "action event with a bad slot"),
    (field("detail", "7"), "action event with a bad detail"),
    (field("kind", "5"), "action event with a bad kind"),
    (field("owners", "[5]", event=4), "action event with a bad owners"),
    (field("owners", '"alice"', event=4), "action event with a bad owners"),
    (field("reason", "{}", event=2), "decision event with a bad reason"),
    (field("event", "5"), "a JSON object with no event name"),
    # Not JSON objects at all.
    ("[" * 100_000 + "]" * 100_000, "not a JSON log event"),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "not a JSON log event"),
    ('{"event": "action", "time": ' + "[" * 100_000, "not a JSON log event"),
    ("null", "not a JSON log event"),
    ("123", "not a JSON log event"),
    ('{"event": "action", "cut off', "not a JSON log event"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b'{"event": "action", "owner": "\xc3\x28"}', "not UTF-8 text"),
])
def test_a_bad_line_is_counted_and_the_rest_read(tmp_path, line, problem):
    path = write(tmp_path, [*GOOD, line, *GOOD[1:]])
    log, warnings = read(path)
    assert warnings == [f"{path}: line 6: {problem}, skipped"]
    assert log.cycles == 2 and len(log.actions) == 2  # the good lines on both sides


def test_many_bad_lines_make_one_line(tmp_path):
    path = write(tmp_path, [*GOOD, *[field("time", "1e999")] * 500, "not json"])
    _, warnings = read(path)
    assert warnings == [
        f"{path}: 500 times: action event with a bad time, skipped (line 6; line 7; line 8; ...)",
        f"{path}: line 506: not a JSON log event, skipped",
    ]


def test_a_line_longer_than_the_bound_is_skipped_without_being_held(tmp_path, monkeypatch):
    monkeypatch.setattr(decisionlog, "MAX_RECORD_BYTES", 1000)
    monkeypatch.setattr(decisionlog, "BLOCK", 100)
    long = '{"event": "action", "detail": "' + "d" * 5000 + '"}'
    path = write(tmp_path, [*GOOD, long, "x" * 1000, *GOOD[1:]])  # 1000 bytes and a newline: read
    path.write_bytes(path.read_bytes() + b"e" * 3000)  # and a last line with no end
    log, warnings = read(path)
    assert warnings == [
        f"{path}: 2 times: a line longer than 4 MiB, skipped (line 6; line 12)",
        f"{path}: line 7: not a JSON log event, skipped",
    ]
    assert log.cycles == 2


def test_a_file_that_is_no_decision_log_is_an_error(tmp_path):
    path = tmp_path / "binary"
    path.write_bytes(bytes(range(256)) * 10)
    with pytest.raises(LogError, match=r"binary: line 1: not a decision log \(not a JSON log event\)"):
        read(path)


@pytest.mark.parametrize("make, reason", [
    (lambda p: None, "No such file or directory"),
    (lambda p: p.mkdir(), "not a regular file"),
    (os.mkfifo, "not a regular file"),  # opening it would wait for a writer
])
def test_what_cannot_be_read_is_an_error_naming_it(tmp_path, make, reason):
    path = tmp_path / "osep.log"
    make(path)
    with pytest.raises(LogError, match=f"^{path}: cannot read the decision log: {reason}$"):
        read(path)


def test_an_empty_log_is_an_empty_history(tmp_path):
    path = tmp_path / "osep.log"
    path.write_bytes(b"")
    log, warnings = read(path)
    assert (log.cycles, log.actions, warnings) == (0, [], [])

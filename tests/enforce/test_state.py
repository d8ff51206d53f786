"""What one run of ``osep run`` leaves for the next, through the real command line against a fake
pool (tests/fakecondor.py): cron runs that hand over their vacates, rooms and holds; a vacate whose
answer is lost; dry run; a second osep; and a thousand damaged or hostile state files."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from builders import cli_runner
from fakecondor import NEGOTIATOR, FakeCondor
from osep.htcondor import state as state_module
from osep.htcondor import state_format
from osep.htcondor.state import read_state
from osep.htcondor.state_format import StateError, checksum
from osep.ui.cli import cli

pytestmark = pytest.mark.usefixtures("signals_restored")  # osep run installs its handlers here


@pytest.fixture
def condor(fake_pool) -> FakeCondor:
    return fake_pool


def policy(where: Path) -> Path:
    path = where / "policy.toml"
    path.write_text("[policy]\ninterval = 60\n[owners]\nalice = 2\nbob = 2\ncarol = 2\n")
    return path


def osep(where: Path, *args: str, catch_exceptions: bool = True) -> Result:
    return cli_runner().invoke(cli, ["--log-file", str(where / "log"), "--log-level", "info", *args],
                               catch_exceptions=catch_exceptions)


def once(where: Path, *extra: str, state: str = "state", knob: bool = False) -> Result:
    """``osep run --once``, the state file given as an option, or as the knob (the pool's config)."""
    option = [] if knob else ["--state-file", str(where / state)]
    return osep(where, "run", "--once", "--policy-file", str(policy(where)), *option, *extra)


def release(where: Path, state: str = "state", knob: bool = False) -> Result:
    return osep(where, "release", *([] if knob else ["--state-file", str(where / state)]))


def events(where: Path, name: str) -> list[dict[str, Any]]:
    lines = (where / "log").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("event") == name]


def error_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("osep: error: "), result.stderr
    return lines[0]


# -- cron mode: what the next run needs ------------------------------------------------------------


def test_a_graceful_vacate_still_running_is_not_sent_again_by_the_next_cron_run(tmp_path, condor):
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1"] and condor.ceilings == {"alice@site": 2}
    saved = read_state(tmp_path / "state")
    assert [r.owner for r in saved.reservations] == ["bob", "bob"] and len(saved.vacates) == 2
    condor.now += 60  # the jobs are still leaving (their grace period)
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1"]  # nothing sent twice, no other victim taken
    condor.finish_vacates()
    condor.now += 60
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1"] and read_state(tmp_path / "state").vacates == []
    assert release(tmp_path).exit_code == 0 and condor.ceilings == {"alice@site": -1}


class Killed(BaseException):
    """kill -9: nothing catches it and nothing more is written."""


def test_a_run_killed_just_after_sending_a_vacate_leaves_it_on_record(tmp_path, condor, monkeypatch):
    # The schedd carries out the first vacate, and the run dies before anything else happens.
    act = condor._act

    def dies(schedd, action, ids):
        seen_before = read_state(tmp_path / "state").vacates
        assert [str(j) for j, _, _ in seen_before] == [f"{schedd}#{ids[0]}"], "recorded before sent"
        act(schedd, action, ids)
        raise Killed()

    monkeypatch.setattr(condor, "_act", dies)
    with pytest.raises(Killed):
        osep(tmp_path, "run", "--once", "--policy-file", str(policy(tmp_path)), "--state-file",
             str(tmp_path / "state"), catch_exceptions=False)
    assert condor.vacates == ["100.0"]
    monkeypatch.setattr(condor, "_act", act)
    condor.now += 30  # the job is still leaving
    assert once(tmp_path).exit_code == 0
    # The next run knows 100.0 is on its way out: it makes the rest of the room with one more
    # vacate, not two (100.0 is not sent again, and no third job is taken in its place).
    assert condor.vacates == ["100.0", "100.1"]


def test_the_per_job_hourly_cap_holds_across_cron_runs(tmp_path, condor):
    condor.knobs["OSEP_MAX_VACATES_PER_JOB_PER_HOUR"] = "1"
    assert once(tmp_path).exit_code == 0
    condor.finish_vacates()
    condor.now += 120
    condor.start_again()  # the vacated jobs got their slots back (the youngest now)
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1"]
    limited = [e for e in events(tmp_path, "action") if e.get("outcome") == "skipped-rate-limit"]
    assert {e["job"] for e in limited} == {"schedd@cm#100.0", "schedd@cm#100.1"}
    assert "already vacated 1 time(s) this hour" in limited[0]["detail"]
    condor.now += 3600  # an hour later the cap lets them go again
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1", "100.0", "100.1"]


def test_a_vacate_whose_answer_is_lost_is_taken_as_possibly_done(tmp_path, condor):
    condor.lose_vacate_replies = True
    assert once(tmp_path).exit_code == 0
    actions = [e for e in events(tmp_path, "action") if e["kind"] == "vacate"]
    assert [e["outcome"] for e in actions] == ["failed", "failed"]
    assert "no answer, taken as possibly done" in actions[0]["detail"]
    saved = read_state(tmp_path / "state")
    assert [r.owner for r in saved.reservations] == ["bob", "bob"]  # the room stays kept for bob
    assert condor.ceilings == {"alice@site": 2}  # alice held at what she runs after the vacates
    condor.now += 60
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1"]  # the next run re-checks the job: still leaving


# -- dry run -------------------------------------------------------------------------------------


def test_dry_run_lifts_what_a_real_run_left_and_touches_nothing_else(tmp_path, condor):
    assert once(tmp_path).exit_code == 0
    assert condor.ceilings == {"alice@site": 2} and condor.advertised == ["UPDATE_AD_GENERIC",
                                                                          "INVALIDATE_ADS_GENERIC"]
    condor.now += 60
    assert once(tmp_path, "--dry-run").exit_code == 0
    assert condor.ceilings == {"alice@site": -1}  # osep's own hold, lifted
    assert condor.vacates == ["100.0", "100.1"] and len(condor.advertised) == 2  # nothing else
    assert read_state(tmp_path / "state").ceilings == {}


def test_a_real_run_needs_a_state_file_a_dry_run_does_not(tmp_path, condor):
    result = osep(tmp_path, "run", "--once", "--policy-file", str(policy(tmp_path)))
    assert "OSEP_STATE_FILE: osep run needs a state file to act" in error_line(result)
    assert condor.vacates == [] and condor.advertised == []
    result = osep(tmp_path, "run", "--once", "--dry-run", "--policy-file", str(policy(tmp_path)))
    assert result.exit_code == 0 and condor.vacates == [] and condor.advertised == []


# -- what osep report shows of it -------------------------------------------------------------------


def test_a_dry_run_logs_the_holds_a_real_run_sets_and_report_shows_them_from_the_state_file(tmp_path, condor):
    assert once(tmp_path, "--dry-run").exit_code == 0
    holds = [e for e in events(tmp_path, "action") if e["kind"] == "hold"]
    assert [(e["owners"], e["allowance"], e["outcome"], e["dry_run"]) for e in holds] == [
        (["alice"], {"alice": 0}, "dry-run", True)]
    assert condor.ceilings == {} and read_state(tmp_path / "state").ceilings == {}
    condor.knobs["OSEP_POLICY_FILE"] = str(policy(tmp_path))

    def report(*args: str) -> Result:
        return cli_runner().invoke(cli, ["report", *args])

    absent = report("--state-file", str(tmp_path / "none"))
    assert absent.exit_code == 0 and "error" not in absent.stderr
    assert absent.stdout.splitlines()[-1] == (f"held: {tmp_path / 'none'}: no such state file, so no "
                                              "ceiling osep set is on record")
    assert once(tmp_path).exit_code == 0
    assert condor.ceilings == {"alice@site": 2}
    # Read without the lock a running osep holds.
    running = state_module.StateFile(tmp_path / "state")
    running.open()
    try:
        doc = json.loads(report("--state-file", str(tmp_path / "state"), "--format", "json").stdout)
        table = report("--state-file", str(tmp_path / "state")).stdout.splitlines()
    finally:
        running.close()
    alice = next(r for r in doc["owners"] if r["owner"] == "alice")
    assert alice["ceilings"] == [{"submitter": "alice@site", "ceiling": 2,
                                  "since": "1970-01-01T02:46:40+00:00"}]
    assert doc["state_file"] == {"path": str(tmp_path / "state"), "problem": None}
    assert "2 since 1970-01-01 02:46 UTC" in next(line for line in table if line.startswith("alice"))
    assert not any(line.startswith("held") for line in table)
    # A damaged state file, or none given: the report all the same, and a line that says so.
    (tmp_path / "state").write_text("{")
    damaged = report("--state-file", str(tmp_path / "state"))
    assert damaged.exit_code == 0
    assert damaged.stdout.splitlines()[-1].startswith(f"held: {tmp_path / 'state'}: ")
    assert damaged.stdout.splitlines()[-1].endswith(": the ceilings osep set are not shown")
    assert report().stdout.splitlines()[-1].startswith(
        "held: no state file given (--state-file or OSEP_STATE_FILE)")
    assert report("--history", "--state-file", "x").exit_code == 2


# -- two osep against one pool ---------------------------------------------------------------------


def test_a_second_osep_refuses_in_one_line_and_a_dead_ones_lock_blocks_nothing(tmp_path, condor):
    state = tmp_path / "state"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom osep.htcondor.state import StateFile\n"
         "StateFile(__import__('pathlib').Path(sys.argv[1])).open()\nprint('locked', flush=True)\n"
         "sys.stdin.read()\n", str(state)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        for result in (once(tmp_path), release(tmp_path)):
            line = error_line(result)
            assert line.startswith(f"osep: error: {state}: in use by another osep (pid {holder.pid} on ")
            assert line.endswith("this one does nothing while that one runs")
        assert condor.vacates == [] and condor.ceilings == {} and condor.advertised == []
    finally:
        holder.kill()  # kill -9: no clean-up of any kind
        holder.wait()
    assert once(tmp_path).exit_code == 0 and condor.vacates == ["100.0", "100.1"]


def test_an_osep_on_another_machine_holds_the_pool_until_its_lease_lapses(tmp_path, condor, monkeypatch):
    # Another host's osep has enforced this pool for a while and was heard from 20 s ago.
    import time

    import classad2

    monkeypatch.setattr(time, "time", lambda: float(condor.now))  # the collector's clock
    other = classad2.ClassAd({"MyType": "OSEP", "Name": "osep@elsewhere", "OSEPInstance": "elsewhere:77",
                              "OSEPStarted": condor.now - 3600, "OSEPInterval": 60, "OSEPDryRun": False,
                              "LastHeardFrom": condor.now - 20})
    condor.ads["osep@elsewhere"] = other
    assert once(tmp_path).exit_code == 1
    assert condor.vacates == [] and condor.ceiling_commands == []
    [line] = events(tmp_path, "another_osep")
    assert "'osep@elsewhere' (elsewhere:77" in line["problem"]
    assert "osep@elsewhere" in condor.ads and len(condor.ads) == 1  # its ad stands, none of ours
    # It stops being heard from: after three of its intervals and a minute, this one takes over.
    condor.now += 3 * 60 + 60
    assert once(tmp_path).exit_code == 0
    assert condor.vacates == ["100.0", "100.1"]


def test_release_names_what_an_administrator_changed_and_leaves_it(tmp_path, condor):
    assert once(tmp_path).exit_code == 0
    condor.ceilings["alice@site"] = 7
    result = release(tmp_path)
    assert result.exit_code == 0
    assert result.stdout == "left the ceiling of alice@site at 7: no longer the 2 osep set\n"
    assert condor.ceilings == {"alice@site": 7}


def test_a_state_file_that_cannot_be_written_stands_osep_aside(tmp_path, condor):
    assert once(tmp_path).exit_code == 0
    condor.finish_vacates()
    condor.start_again()
    condor.now += 60

    def refuse(path, saved):
        raise OSError(28, "No space left on device", str(path))

    (tmp_path / "log").unlink()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("osep.htcondor.state.write_state", refuse)
        assert once(tmp_path).exit_code == 1  # the cycle could not act
    assert condor.vacates == ["100.0", "100.1"]  # no vacate without the hold that keeps its room
    assert condor.ceilings == {"alice@site": -1}  # osep's own hold lifted, which needs no record
    lines = events(tmp_path, "state_unwritable")
    assert len(lines) == 1 and "cannot be written: No space left on device" in lines[0]["problem"]
    result = release(tmp_path)  # the file still names alice's 2, which the negotiator no longer has
    assert result.exit_code == 0 and condor.ceilings == {"alice@site": -1}


# -- damaged and hostile state files through the command line --------------------------------------

INITIAL = {"alice@site": 2, "carol@site": 1, "dave@site": 3}  # as the real run below leaves them


def _pool(monkeypatch: pytest.MonkeyPatch) -> FakeCondor:
    fake = FakeCondor()
    fake.run("alice", 4)
    fake.run("carol", 2)
    fake.idle("carol", 1)
    fake.idle("bob", 3)
    fake.ceilings = {"carol@site": 1, "dave@site": 3}  # the administrator's own
    fake.install(monkeypatch)
    return fake


def _pristine(where: Path) -> bytes:
    """The state file a real run leaves: alice held at 2 (none before), carol at her own 1, vacates
    in progress, rooms kept for bob, the jobs vacated this hour."""
    with pytest.MonkeyPatch.context() as patch:
        fake = _pool(patch)
        assert once(where).exit_code == 0
        assert fake.ceilings == INITIAL
    return (where / "state").read_bytes()


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[path[0]] = _replace(doc[path[0]], path[1:], value)
    return copy


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for k, value in enumerate(doc):
            yield from _paths(value, (*prefix, k))


def _signed(state: Any) -> bytes:
    """A file in the current format around ``state``, with its right checksum (so that what is
    checked is the content), or a wrong one where none can be computed (NaN, infinities)."""
    try:
        digest = checksum(state)
    except ValueError:
        digest = "0" * 64
    return json.dumps({"format": "osep-state", "version": 2, "sha256": digest, "state": state}).encode()


HOSTILE: list[Any] = [None, True, False, "x", "", [], {}, -2, -1, 0, 1.5, 2**31, 2**63, 10**30,
                      float("inf"), float("-inf"), float("nan"), "\x00\n", [[[[[]]]]], {"a": {"b": 1}}]


def _cases(pristine: bytes) -> Iterator[tuple[str, bytes | str]]:
    """(name, content) for every damaged or hostile file; content a string names a file-system case."""
    rng = random.Random(12)
    n = len(pristine)
    for k in range(300):
        at, bit = rng.randrange(n), 1 << rng.randrange(8)
        yield f"bit-flip-{k}@{at}", pristine[:at] + bytes([pristine[at] ^ bit]) + pristine[at + 1:]
    for k in range(100):
        at = rng.randrange(n)
        yield f"byte-{k}@{at}", pristine[:at] + bytes([rng.randrange(256)]) + pristine[at + 1:]
    for k in range(100):
        data = bytearray(pristine)
        for _ in range(rng.randrange(2, 9)):
            data[rng.randrange(n)] = rng.randrange(256)
        yield f"bytes-{k}", bytes(data)
    for length in sorted({0, 1, 2, n - 1, n - 2, *(rng.randrange(n) for _ in range(150))}):
        yield f"truncated-{length}", pristine[:length]
    invalid = [b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80",
               b"\x80", b"\xe2\x82"]
    for k in range(60):
        at = rng.randrange(n)
        yield f"invalid-utf8-{k}@{at}", pristine[:at] + invalid[k % len(invalid)] + pristine[at:]
    yield "bom", b"\xef\xbb\xbf" + pristine
    for k, value in enumerate([*HOSTILE, "[" * 100_000, "{" * 50_000]):
        raw = value.encode() if isinstance(value, str) and value.startswith(("[", "{")) else \
            json.dumps(value).encode()
        yield f"top-{k}", raw
    doc = json.loads(pristine)
    state = doc["state"]
    # Wrong types and numbers everywhere: a few of the hostile values at every place in the state
    # (checksummed, so that the content is what is checked), in the envelope, and in the old format.
    deep = json.loads("[" * 400 + "]" * 400)
    choices = [*HOSTILE, deep]
    for path in _paths(state):
        for k in rng.sample(range(len(choices)), 5):
            yield f"state{list(path)}={k}", _signed(_replace(state, path, choices[k]))
    for path in _paths(doc):
        if path and path[0] != "state":
            for k in rng.sample(range(len(choices)), 10):
                yield f"doc{list(path)}={k}", json.dumps(_replace(doc, path, choices[k])).encode()
    legacy = {"negotiators": {NEGOTIATOR: {"ceilings": {"alice@site": 2, "carol@site": 1},
                                           "original": {"alice@site": -1, "carol@site": 1}}}}
    for path in _paths(legacy):
        for k in rng.sample(range(len(choices)), 8):
            yield f"legacy{list(path)}={k}", json.dumps(_replace(legacy, path, choices[k])).encode()
    other = _replace(state, ("ceilings",), {"negotiator@elsewhere": state["ceilings"][NEGOTIATOR]})
    yield "another-negotiator", _signed(other)
    yield "state-named-tmp", pristine  # the state file is state.tmp
    yield "state-named-osep-tmp", pristine  # as osep's own temporary files end
    for name in ("directory", "fifo", "symlink-loop", "dangling-symlink", "dev-zero", "leftover-temp",
                 "temp-is-a-directory", "lock-is-a-directory", "huge", "unwritable", "no-lock"):
        yield name, name


@contextmanager
def _guard(seconds: int) -> Iterator[None]:
    """One case may not hang the suite: an alarm ends it (and is counted)."""

    def ring(signum: int, frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _lay_out(state: Path, content: bytes | str, pristine: bytes, patch: pytest.MonkeyPatch) -> Path:
    where = state.parent
    if isinstance(content, bytes):
        state.write_bytes(content)
    elif content == "directory":
        state.mkdir()
    elif content == "fifo":
        os.mkfifo(state)
    elif content == "symlink-loop":
        os.symlink(state, state)
    elif content == "dangling-symlink":
        os.symlink(where / "gone" / "nowhere", state)
    elif content == "dev-zero":
        os.symlink("/dev/zero", state)
    elif content == "huge":
        with state.open("wb") as handle:
            handle.truncate(state_format.MAX_BYTES + 1)
    else:
        state.write_bytes(pristine)
        if content == "leftover-temp":
            (where / f"{state.name}.osep-tmp").write_bytes(b"\x00half a file")
        elif content == "temp-is-a-directory":
            (where / f"{state.name}.osep-tmp").mkdir()
        elif content == "lock-is-a-directory":
            (where / f"{state.name}.lock").mkdir()
        elif content == "unwritable":  # root may write anywhere: the write fails as it would
            def refuse(path: Path, saved: Any) -> None:
                raise PermissionError(13, "Permission denied", str(path))

            patch.setattr(state_module, "write_state", refuse)
        elif content == "no-lock":
            real = os.open

            def no_lock(path: Any, *args: Any, **kwargs: Any) -> int:
                if str(path).endswith(".lock"):
                    raise PermissionError(13, "Permission denied", str(path))
                return real(path, *args, **kwargs)

            patch.setattr(state_module.os, "open", no_lock)
    return state


def _claims(state: Path) -> dict[str, tuple[int, tuple[int, ...]]] | None:
    """What the file says osep set on this pool's negotiator (None: the file is refused)."""
    try:
        saved = read_state(state)
    except StateError:
        return None
    merged = {**saved.ceilings.get("", {}), **saved.ceilings.get(NEGOTIATOR, {})}
    return {s: (r.original, r.values) for s, r in merged.items()}


def test_a_thousand_damaged_or_hostile_state_files_through_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # durability is not what is tested here: speed
    pristine = _pristine(tmp_path)
    cases = list(_cases(pristine))
    figures: Counter[str] = Counter()
    problems: list[str] = []
    for number, (name, content) in enumerate(cases):
        for sequence in (("release",), ("once", "release")):
            where = tmp_path / f"case{number}-{len(sequence)}"
            where.mkdir()
            named = {"state-named-tmp": "state.tmp", "state-named-osep-tmp": "state.osep-tmp"}.get(name, "state")
            with pytest.MonkeyPatch.context() as patch:
                fake = _pool(patch)
                fake.ceilings = dict(INITIAL)
                state = _lay_out(where / named, content, pristine, patch)
                claims = _claims(state)
                figures["accepted"] += claims is not None
                kept = state.read_bytes() if claims is None and state.is_file() else None
                refused = False
                for step, command in enumerate(sequence):
                    figures["invocations"] += 1
                    knob = len(sequence) == 2  # the state file named in the pool's configuration
                    if knob:
                        fake.knobs["OSEP_STATE_FILE"] = str(state)
                    try:
                        with _guard(20):
                            result = once(where, state=named, knob=knob) if command == "once" \
                                else release(where, named, knob)
                    except TimeoutError:
                        figures["hangs"] += 1
                        problems.append(f"{name}: {command} hung")
                        break
                    figures[f"{command} exit {result.exit_code}"] += 1
                    if result.exception is not None and not isinstance(result.exception, SystemExit):
                        figures["tracebacks"] += 1
                        problems.append(f"{name}: {command}: {result.exception!r}")
                        break
                    if result.exit_code == 2:
                        lines = result.stderr.splitlines()
                        if len(lines) != 1 or not lines[0].startswith(f"osep: error: {where}"):
                            problems.append(f"{name}: {command}: {result.stderr!r}")
                        if step == 0 and "not lifted" not in result.stderr:
                            refused = True  # at the start: the next command would be refused as well
                            break
                    elif result.exit_code not in (0, 1):
                        problems.append(f"{name}: {command}: exit {result.exit_code}")
                if claims is None and not refused:
                    problems.append(f"{name}: {sequence}: a file osep cannot read was not refused")
                if kept is not None and state.read_bytes() != kept:
                    problems.append(f"{name}: {sequence}: a file osep cannot read was replaced")
                # Never a ceiling lost: each is what it was, or, where the file (as read) says osep
                # set the very value the negotiator has, what it says was there before.
                expected = dict(INITIAL)
                if not refused:
                    for submitter, (original, values) in (claims or {}).items():
                        if INITIAL.get(submitter, -1) in values:
                            expected[submitter] = original
                final = {s: fake.ceilings.get(s, -1) for s in {*INITIAL, *fake.ceilings}}
                wanted = {s: expected.get(s, -1) for s in final}
                if final != wanted:
                    problems.append(f"{name}: {sequence}: ceilings {final}, not {wanted}")
        figures["cases"] += 1
    print(f"\nstate files through the CLI: {dict(sorted(figures.items()))}")
    assert figures["cases"] >= 1000 and figures["tracebacks"] == 0 and figures["hangs"] == 0
    assert not problems, "\n".join(problems[:20])


def test_a_run_that_cannot_start_says_so_in_one_line_and_in_its_log_file(tmp_path, condor):
    (tmp_path / "state").write_text("[" * 2000)
    runner = cli_runner()
    args = ["run", "--once", "--policy-file", str(policy(tmp_path)), "--state-file", str(tmp_path / "state")]
    result = runner.invoke(cli, args)
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("osep: error: ") and "nested" in result.stderr
    logged = osep(tmp_path, *args)
    assert logged.exit_code == 2 and [e["problem"] for e in events(tmp_path, "not_started")] == [
        logged.stderr.removeprefix("osep: error: ").strip()]

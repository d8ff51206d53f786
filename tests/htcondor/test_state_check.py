"""Whether a state file would let a run start and act (osep.htcondor.state_check): table tests on real
files, and a lock held by a running osep, which the check must neither take nor change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from osep.htcondor.state import StateFile, write_state
from osep.htcondor.state_check import inspect
from osep.htcondor.state_format import SavedState


def fresh(tmp: Path) -> Path:
    return tmp / "osep.state"


def written(tmp: Path) -> Path:
    write_state(tmp / "osep.state", SavedState())
    return tmp / "osep.state"


def damaged(tmp: Path) -> Path:
    (tmp / "osep.state").write_text('{"format": "osep-state", "version": 2, "sha256": "0", "state": {}}')
    return tmp / "osep.state"


def a_directory(tmp: Path) -> Path:
    (tmp / "osep.state").mkdir()
    return tmp / "osep.state"


def a_fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "osep.state")
    return tmp / "osep.state"


def under_a_file(tmp: Path) -> Path:
    (tmp / "file").write_text("")
    return tmp / "file" / "osep.state"


def not_made_yet(tmp: Path) -> Path:
    return tmp / "a" / "b" / "osep.state"


def in_a_folder_it_cannot_write(tmp: Path) -> Path:
    (tmp / "ro").mkdir(mode=0o500)
    return tmp / "ro" / "osep.state"


@pytest.mark.parametrize(("make", "status", "says"), [
    (fresh, "ok", "not there yet"),
    (written, "ok", "readable, not locked; 0 ceiling(s) and 0 vacate(s) on record"),
    (not_made_yet, "ok", "not there yet"),
    (damaged, "fail", "sha256"),
    (a_directory, "fail", "not a regular file"),
    (a_fifo, "fail", "not a regular file"),
    (under_a_file, "fail", "is not a directory"),
])
def test_a_state_file_for_a_real_run(tmp_path, make, status, says):
    found = inspect(make(tmp_path))
    assert found[0] == status and says in found[1], found


def test_no_state_file_is_a_failure():
    assert inspect(None) == ("fail", "none set (OSEP_STATE_FILE, --state-file): a real run needs one to act")


def test_a_folder_that_cannot_be_written_in(tmp_path, monkeypatch):
    path = in_a_folder_it_cannot_write(tmp_path)
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # as for an account that is not root
    assert inspect(path) == ("fail", f"cannot write in {tmp_path / 'ro'}")


def test_a_lock_held_by_a_running_osep_fails_and_is_left_as_it_is(tmp_path):
    path = written(tmp_path)
    running = StateFile(path, holder=lambda: "pid 4242 on cm")
    running.open()
    try:
        lock = path.with_name("osep.state.lock")
        before = (lock.read_bytes(), lock.stat().st_mtime_ns)
        status, detail = inspect(path)
        assert status == "fail" and "in use by another osep (pid 4242 on cm)" in detail
        assert (lock.read_bytes(), lock.stat().st_mtime_ns) == before
        assert inspect(path)[0] == "fail"  # still held: the check let nothing go
    finally:
        running.close()
    assert inspect(path)[0] == "ok"
    other = StateFile(path)
    other.open()  # the check left no lock behind
    other.close()


def test_no_lock_file_is_made(tmp_path):
    path = written(tmp_path)
    inspect(path)
    assert not path.with_name("osep.state.lock").exists()

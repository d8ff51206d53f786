"""``osep tune --on-pool`` on the real test pool: a small sweep's candidates run as alice's jobs give
the document a local run gives, a job that fails is submitted again, and no job is left in the
queue afterwards.

osep runs as alice inside the pool's root, as a user of the pool runs it on the submit machine, with
the local schedd: this checkout and its Python are mounted there (read-only), and the history's files
and the sweep's scratch directory are in a directory of alice's mounted at the same path (the test
compares with a local run outside).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders import cli_runner
from harness import ROOT, Live
from osep.ui.cli import cli
from tests.htcondor.test_onpool import tune_args

# This checkout and the Python that runs it, seen at the same paths inside the pool's root.
SETUP = {"layout": "static", "binds": tuple(sorted({Path(p).resolve() for p in (sys.base_prefix, sys.prefix, ROOT)}))}
USER = "alice"


def ids_of(live: Live, user: str) -> tuple[int, int]:
    for line in (live.pool.root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return int(fields[2]), int(fields[3])
    raise AssertionError(f"no {user} in the pool's root")


@pytest.fixture
def shared(live: Live) -> Iterator[Path]:
    """A directory of alice's at the same path outside the pool's root and inside it."""
    path = Path(tempfile.mkdtemp(prefix="osep-tune-pool-"))
    uid, gid = ids_of(live, USER)
    os.chown(path, uid, gid)
    path.chmod(0o755)
    target = live.pool.root / path.relative_to("/")
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(path), str(target)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(target)], check=False)
        shutil.rmtree(path, ignore_errors=True)


def on_pool(live: Live, shared: Path, *more: str, fresh: bool = True) -> tuple[subprocess.CompletedProcess[str], float]:
    """``osep tune --on-pool`` run by alice on the pool's submit machine."""
    began = time.monotonic()
    proc = start_on_pool(live, shared, *more, fresh=fresh)
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - began


def start_on_pool(live: Live, shared: Path, *more: str, fresh: bool = True) -> subprocess.Popen[str]:
    uid, gid = ids_of(live, USER)
    args = [*tune_args(shared, fresh=fresh), "--journal", str(shared / "pool.journal"), "--on-pool", *more]
    # A token of hers: the schedd refuses FS authentication from the PyPI bindings run inside the root
    # ("Directory name doesn't match server's network address"), whatever TMPDIR says.
    tokens = shared / "tokens"
    tokens.mkdir(mode=0o700, exist_ok=True)
    token = live.pool.condor(["condor_token_create", "-identity", f"{USER}@{live.pool.uid_domain()}"])
    (tokens / USER).write_text(token)
    (tokens / USER).chmod(0o600)
    for path in [*shared.iterdir(), tokens / USER]:
        os.chown(path, uid, gid)
    env = ["env", "-i", "PATH=/usr/bin:/bin", f"HOME=/home/{USER}", f"TMPDIR={shared}",
           f"_CONDOR_SEC_TOKEN_DIRECTORY={tokens}"]
    # SIGINT handled here while the child starts, so that it reaches osep at its default, as from a
    # user's terminal: scripts/test runs the suites as background jobs, which start with SIGINT
    # ignored, and an ignored signal stays ignored through every exec down to osep, whose Python then
    # never raises KeyboardInterrupt (a handled one is reset to the default by exec).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(["chroot", str(live.pool.root), "runuser", "-u", USER, "--", *env,
                                 str(Path(sys.prefix) / "bin" / "python"), "-m", "osep", *args],
                                cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, before)


def local(shared: Path, tmp_path: Path) -> dict:
    result = cli_runner().invoke(cli, [*tune_args(shared), "--journal", str(tmp_path / "local.journal")])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def without_bookkeeping(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "runs"}


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_a_sweep_on_the_pool_gives_the_local_document(live: Live, shared: Path, tmp_path: Path):
    done, seconds = on_pool(live, shared, "--batch", "2", "--pool-submit", "request_memory = 64")
    assert done.returncode == 0, done.stderr
    pooled = json.loads(done.stdout)
    print(f"on the pool: {pooled['runs']['candidates']} candidates, {seconds:.0f} s")
    assert len({row["pv"] for row in pooled["candidates"]}) > 1
    assert without_bookkeeping(pooled) == without_bookkeeping(local(shared, tmp_path))
    assert live.jobs() == []
    assert not [p for p in shared.iterdir() if p.name.startswith("osep-tune-")], "the scratch directory is removed"


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_a_job_that_fails_is_submitted_again(live: Live, shared: Path, tmp_path: Path):
    # The Python the jobs run fails the first time it is started, then runs as the pool's own does:
    # mkdir makes the mark once, whichever job comes first.
    mark = shared / "failed-once"
    flaky = shared / "flaky-python"
    flaky.write_text(f"#!/bin/sh\nif mkdir {mark} 2>/dev/null; then echo failing once >&2; exit 3; fi\n"
                     'exec /usr/bin/python3 "$@"\n')
    flaky.chmod(0o755)
    done, _ = on_pool(live, shared, "--pool-python", str(flaky))
    assert done.returncode == 0, done.stderr
    assert mark.is_dir()
    again = [line for line in done.stderr.splitlines() if "submitted again, try 2 of 3" in line]
    assert len(again) == 1, done.stderr
    assert "it said: failing once" in again[0]  # the job's own stderr comes back with the hold
    print(again[0])
    assert without_bookkeeping(json.loads(done.stdout)) == without_bookkeeping(local(shared, tmp_path))
    assert live.jobs() == []


@pytest.mark.parametrize("live", [SETUP], indirect=True)
def test_an_interrupted_sweep_leaves_no_job_and_goes_on_from_its_journal(live: Live, shared: Path,
                                                                          tmp_path: Path):
    # The first two jobs run at once, the others would take ten minutes.
    slow = shared / "slow-python"
    slow.write_text('#!/bin/sh\ncase "$3" in spec-0.json|spec-1.json) ;; *) sleep 600 ;; esac\n'
                    'exec /usr/bin/python3 "$@"\n')
    slow.chmod(0o755)
    journal = shared / "pool.journal"
    proc = start_on_pool(live, shared, "--pool-python", str(slow))
    try:
        live.wait_until(lambda: journal.exists() and len(journal.read_text().splitlines()) == 3
                        and live.running(USER) == 3, 120, "two runs in the journal and three jobs running")
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "2 finished runs are kept in" in err
    took = live.wait_until(lambda: live.jobs() == [], 60, "the interrupted sweep's jobs to leave the queue")
    print(f"queue empty {took:.0f} s after the interrupt")
    done, _ = on_pool(live, shared, fresh=False)
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout)
    assert resumed["runs"] == {"candidates": 5, "from_journal": 2}
    assert without_bookkeeping(resumed) == without_bookkeeping(local(shared, tmp_path))
    assert live.jobs() == []

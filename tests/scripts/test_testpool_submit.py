"""scripts/testpool.py's ``submit`` without a pool: the submit descriptions it writes (what ``--show``
prints), the options that do not go together, and a ``--help`` for every subcommand. The live check
that the jobs reach a queue is in tests/live/test_trees.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import testpool  # noqa: E402


def run_testpool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/testpool.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("args, lines", [
    # Nothing asked for: condor_submit's defaults, as a user's plain submit file has them.
    ((), ["executable = /bin/sleep", "arguments = 3600", "log = /home/alice/jobs.log", "queue 1"]),
    (("--owner", "alice", "--group", "group_physics", "--cpus", "2", "--memory", "1024", "--count", "5",
      "--duration", "600"),
     ["executable = /bin/sleep", "arguments = 600", "request_cpus = 2", "request_memory = 1024",
      "accounting_group = group_physics", "accounting_group_user = alice", "log = /home/alice/jobs.log",
      "queue 5"]),
    (("--owner", "bob", "--gpus", "1", "--request", "fpgas=2", "--disk", "2048", "--duration", "0"),
     ["executable = /bin/sleep", "arguments = 0", "request_disk = 2048", "request_gpus = 1",
      "request_fpgas = 2", "log = /home/bob/jobs.log", "queue 1"]),
])
def test_show_prints_the_submit_description_a_user_would_write(args, lines):
    done = run_testpool("submit", *args, "--show")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == lines and done.stderr == ""


def test_the_harness_jobs_are_the_descriptions_they_always_were():
    """What the live tests queue (TestPool.submit) has not changed: sized jobs, or stock ones."""
    sized = testpool.submit_description("carol", 3, 60, {"cpus": 2, "memory": 32, "disk": 1024},
                                        log="other.log", extra="priority = 5\n")
    assert sized == ("executable = /bin/sleep\narguments = 60\nrequest_cpus = 2\nrequest_memory = 32\n"
                     "request_disk = 1024\nlog = /home/carol/other.log\npriority = 5\nqueue 3\n")
    assert testpool.submit_description("alice", 2, 5, {}) == (
        "executable = /bin/sleep\narguments = 5\nlog = /home/alice/jobs.log\nqueue 2\n")


@pytest.mark.parametrize("call, message", [
    (lambda: testpool.submit_description("alice", 0), "a count of at least 1"),
    (lambda: testpool.submit_description("alice", 1, -1), "a duration of 0 s or more"),
    (lambda: testpool.submit_description("alice", requests={"cpus\nqueue 99": 1}), "not a request"),
    (lambda: testpool.submit_description("alice", requests={"cpus": -1}), "not a request"),
    (lambda: testpool.submit_description("alice", group="group physics"), "not an accounting group"),
    (lambda: testpool.submit_description("alice", group="g\nqueue 99"), "not an accounting group"),
    (lambda: testpool.TestPool().submit_file("mallory", "queue\n"), "no user 'mallory'"),
])
def test_what_is_not_a_description_is_refused_before_anything_is_submitted(call, message):
    with pytest.raises(testpool.PoolError, match=message):
        call()


@pytest.mark.parametrize("args, message", [
    (("submit", "--count", "0"), "--count: expected a whole number of at least 1, not '0'"),
    (("submit", "--cpus", "two"), "--cpus: expected a whole number of at least 0"),
    (("submit", "--request", "gpus"), "--request: expected NAME=COUNT (as gpus=1), not 'gpus'"),
    (("submit", "--request", "a b=1"), "--request: expected NAME=COUNT"),
    (("submit", "--owner", "mallory"), "--owner: invalid choice: 'mallory'"),
    (("submit", "FILE.sub", "--cpus", "2", "--group", "g"),
     "submit: not with a FILE, which is queued as it is: --cpus, --group"),
])
def test_usage_errors_end_in_one_line_and_status_2(args, message):
    done = run_testpool(*args, "--show")
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr.splitlines()[-1], done.stderr


def test_a_file_is_submitted_as_it_is(tmp_path):
    path = tmp_path / "mine.sub"
    path.write_text("universe = vanilla\nexecutable = run.sh\nrequest_gpus = 1\nqueue 3\n")
    done = run_testpool("submit", "--owner", "bob", str(path), "--show")
    assert done.returncode == 0 and done.stdout == path.read_text()
    done = run_testpool("submit", str(tmp_path / "missing.sub"), "--show")
    assert done.returncode == 1 and done.stderr.startswith("testpool: submit: cannot read ")


@pytest.mark.parametrize("command", ["build", "isolate", "start", "stop", "env", "status", "version",
                                     "submit"])
def test_every_subcommand_says_what_it_does(command):
    done = run_testpool(command, "--help")
    assert done.returncode == 0 and done.stderr == ""
    usage, _, rest = done.stdout.partition("\n\n")
    assert usage.startswith(f"usage: testpool.py {command}")
    assert len(rest.split("\n\n")[0]) > 40  # a sentence or more, not the bare usage line
    listed = run_testpool("--help").stdout
    assert f"    {command} " in listed  # and the overview lists it with its summary


@pytest.mark.parametrize(("status", "left"), [
    ("install ok installed", True),
    ("deinstall ok config-files", True),  # removed, its edited conffile kept: a later install keeps it
    ("install ok half-configured", True),
    ("install reinstreq half-installed", True),
    ("unknown ok not-installed", False),
    ("deinstall ok not-installed", False),
    ("", False),  # dpkg does not know the package
])
def test_a_fresh_pool_purges_whatever_dpkg_has_of_osep(status, left):
    assert testpool.left_behind(status) is left

"""scripts/testpool.py's namespaces, without a pool: ``isolate`` runs a command where the network is a
loopback interface of its own and this host's name is 127.0.0.1, hands back its exit status, and
leaves nothing behind; ``start`` refuses the host's network. Needs root (unshare), as the live tests
do."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import testpool  # noqa: E402

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="unshare needs root")

PROBE = """
import socket, sys
sys.path.insert(0, "scripts")
import testpool
print(testpool.isolated())
print(socket.gethostbyname(socket.gethostname()))
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); c = socket.create_connection(s.getsockname())
print("loopback up")
sys.exit(7)
"""


def isolate(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/testpool.py", "isolate", "--", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)


def mounts() -> list[str]:
    return Path("/proc/self/mounts").read_text().splitlines()


@root_only
def test_isolate_gives_a_loopback_of_its_own_and_the_host_name_and_passes_the_status_back():
    before = mounts()
    done = isolate(sys.executable, "-c", PROBE)
    assert done.returncode == 7, done.stderr
    assert done.stdout.splitlines() == ["True", "127.0.0.1", "loopback up"]
    assert mounts() == before, "the hosts file and /proc stay inside the namespace"


@root_only
def test_what_the_command_leaves_running_ends_with_it():
    done = isolate("sh", "-c", "sleep 300 & echo $! $(readlink /proc/self/ns/pid)")
    assert done.returncode == 0, done.stderr
    inner, namespace = done.stdout.split()
    # PID 1 was the init: the sleep, numbered inside, is gone with the namespace; no process on this
    # machine is left in that namespace (whatever else may be sleeping here).
    assert int(inner) > 1 and namespace.startswith("pid:[")
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") == namespace:
                    left.append(entry.name)
            except OSError:
                continue
    assert left == [], f"left running in the command's namespace: {left}"


def test_the_host_network_is_not_isolated():
    if testpool.isolated():
        pytest.skip("this test runs in a namespace of its own already")
    pool = testpool.TestPool(Path("/nonexistent"), "forky")
    env = os.environ.pop("OSEP_TESTPOOL_HOST_NETWORK", None)
    try:
        with pytest.raises(testpool.PoolError, match="isolate"):
            pool.start()
    finally:
        if env is not None:
            os.environ["OSEP_TESTPOOL_HOST_NETWORK"] = env


def test_a_suite_of_its_own_cache_and_an_unknown_one_refused():
    pool = testpool.TestPool(Path("/cache"), "forky")
    assert pool.root == Path("/cache/forky/root") and pool.run == Path("/cache/forky/run")
    assert pool.recipe.startswith("forky ")
    with pytest.raises(testpool.PoolError, match="unknown suite"):
        testpool.TestPool(Path("/cache"), "buster")


def test_the_hosts_file_names_this_host_on_a_line_of_its_own():
    lines = testpool.hosts_file().splitlines()
    assert f"127.0.0.1\t{socket.gethostname()}" in lines

"""A real HTCondor pool for the live tests (scripts/testpool.py), started fresh for every test.

These tests fail, never skip, when the pool cannot be built or started: a live test that did not run
proves nothing. They need root and debootstrap, which scripts/test installs.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from harness import Live, TestPool, TestPoolError


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/live/" in str(item.fspath):
            item.add_marker(pytest.mark.live)


@pytest.fixture
def live(request, tmp_path) -> Live:
    """A fresh pool; ``param`` is its slot layout, or a dict of keyword arguments for
    TestPool.start (layout, cpus, binds, extra_config)."""
    param = getattr(request, "param", "static")
    options = {"cpus": 20, **(param if isinstance(param, dict) else {"layout": param})}
    pool = TestPool()
    if os.geteuid() != 0:
        pytest.fail("the live tests need root (chroot and mount for the test pool)")
    try:
        pool.start(**options)
    except (TestPoolError, OSError, subprocess.SubprocessError) as exc:
        pytest.fail(f"the HTCondor test pool could not be started: {exc}")
    harness = Live(pool, tmp_path)
    try:
        yield harness
    finally:
        harness.close()

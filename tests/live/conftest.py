"""A real HTCondor pool for the live tests (scripts/testpool.py), started fresh for every test.

The pool is built from the Debian suite that ``--testpool-suite`` (or OSEP_TESTPOOL_SUITE) names,
trixie (HTCondor 23.9) or forky (25.x), and every live test's id says which HTCondor it ran on
(``test_x[static-forky-25.14.1]``). The pool must run in a network namespace of its own: run pytest
under ``scripts/testpool.py isolate -- ...`` (scripts/test does).

These tests fail, never skip, when the pool cannot be built or started: a live test that did not run
proves nothing. They need root and debootstrap, which scripts/test installs.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from harness import DEFAULT_SUITE, Live, TestPool, TestPoolError


def suite_of(config) -> str:
    return config.getoption("--testpool-suite") or DEFAULT_SUITE


def pool_label(config) -> str:
    """``forky-25.14.1``, or the suite alone while its root is not built (collection builds
    nothing: it also runs for the tests that need no pool)."""
    label = getattr(config, "_osep_pool_label", None)
    if label is None:
        try:
            pool = TestPool(suite=suite_of(config))
            label = f"{pool.suite}-{pool.version()}" if pool.built() else pool.suite
        except (TestPoolError, OSError):
            label = suite_of(config)
        config._osep_pool_label = label
    return label


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/live/" in str(item.fspath):
            item.add_marker(pytest.mark.live)


def pytest_generate_tests(metafunc):
    """Every test that uses the pool gets the suite and its HTCondor version in its id."""
    if "testpool_suite" in metafunc.fixturenames:
        metafunc.parametrize("testpool_suite", [suite_of(metafunc.config)],
                             ids=[pool_label(metafunc.config)])


@pytest.fixture
def testpool_suite(request) -> str:
    return suite_of(request.config)


@pytest.fixture
def live(request, tmp_path, testpool_suite) -> Live:
    """A fresh pool; ``param`` is its slot layout, or a dict of keyword arguments for
    TestPool.start (layout, cpus, binds, extra_config)."""
    param = getattr(request, "param", "static")
    options = {"cpus": 20, **(param if isinstance(param, dict) else {"layout": param})}
    if os.geteuid() != 0:
        pytest.fail("the live tests need root (chroot and mount for the test pool)")
    try:
        pool = TestPool(suite=testpool_suite)
        pool.start(**options)
    except (TestPoolError, OSError, subprocess.SubprocessError) as exc:
        pytest.fail(f"the HTCondor test pool could not be started: {exc}")
    request.node.user_properties.append(("htcondor", pool.label()))
    harness = Live(pool, tmp_path)
    try:
        yield harness
    finally:
        harness.close()

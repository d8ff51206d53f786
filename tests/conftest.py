"""Fixtures shared by the tests. Helpers live in builders.py: conftest modules are not for importing."""

from __future__ import annotations

import logging
import os
import signal
import time

import pytest
import structlog


def pytest_addoption(parser):
    parser.addoption(
        "--testpool-suite", default=None, metavar="SUITE",
        help="the Debian suite the live tests' HTCondor pool is built from (scripts/testpool.py): "
             "trixie (HTCondor 23.9) or forky (25.x); default: OSEP_TESTPOOL_SUITE, else trixie")


def pytest_report_header(config):
    suite = config.getoption("--testpool-suite") or os.environ.get("OSEP_TESTPOOL_SUITE", "trixie")
    return f"live tests' pool: Debian {suite} (--testpool-suite, OSEP_TESTPOOL_SUITE)"


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """The recorded event logs (tests/data/) carry local times from a test pool that ran in UTC, so
    their absolute dates read the same on every machine only in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(autouse=True)
def quiet_logs():
    """Tests see no log output unless they capture it themselves."""
    structlog.configure(
        processors=[structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
        cache_logger_on_first_use=False,
    )
    yield
    structlog.reset_defaults()


@pytest.fixture
def verbose_logs():
    """Let every level through, for tests that read events with structlog.testing.capture_logs."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))


@pytest.fixture
def signals_restored():
    """``osep run`` installs its signal handlers in this very process: put the old ones back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)

"""Fixtures shared by the tests. Helpers live in builders.py: conftest modules are not for importing."""

from __future__ import annotations

import logging
import pytest
import structlog



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

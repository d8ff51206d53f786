"""The one piece of the probes that is not the bindings': a child process per daemon, given a time and
killed after it (the bindings' ping waits for ever on a daemon that never answers)."""

from __future__ import annotations

import time

import pytest

from osep.htcondor.probe import bounded
from osep.htcondor.rights import DaemonProbe, Ping


def test_what_the_child_returned_comes_back_whole():
    probe = DaemonProbe("schedd", "s@cm", "<cm:2>", None, {"QUERY_JOB_ADS": Ping(True, "osep@cm")})
    assert bounded(lambda: probe, 10) == probe


def test_a_child_that_does_not_answer_in_time_is_killed_and_none_comes_back():
    started = time.monotonic()
    assert bounded(lambda: time.sleep(60), 0.5) is None
    assert time.monotonic() - started < 5


def test_what_the_child_raised_is_raised_here_as_its_text():
    def fails() -> None:
        raise ValueError("bad ad")

    with pytest.raises(RuntimeError, match="ValueError: bad ad"):
        bounded(fails, 10)


def test_a_large_answer_is_read_whole():
    assert bounded(lambda: "x" * 1_000_000, 10) == "x" * 1_000_000

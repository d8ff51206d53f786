"""Where a cycle's time goes (osep/timing.py), on clocks the tests turn by hand."""

from __future__ import annotations

import pytest

from osep.timing import Clocks, Phases


class Hand:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_phases_add_up_and_the_rest_is_other():
    wall, cpu = Hand(), Hand()
    phases = Phases(Clocks(wall, cpu))
    wall.now += 0.5  # before the first phase: the cycle's, no phase's
    with phases.timing("query", "collector"):
        wall.now += 1.0
        cpu.now += 0.25
    with phases.timing("query", "schedd a"):
        wall.now += 2.0
    with phases.timing("translate"):
        wall.now += 0.5
        cpu.now += 0.5
    with phases.timing("query", "schedd a"):  # a daemon asked twice: its seconds add up
        wall.now += 1.0
    fields = phases.fields()
    assert fields["seconds"] == {"query": 4.0, "translate": 0.5, "other": 0.5, "cycle": 5.0}
    assert fields["cpu_seconds"] == {"query": 0.25, "translate": 0.5, "other": 0.0, "cycle": 0.75}
    assert fields["query_seconds"] == {"collector": 1.0, "schedd a": 3.0}


def test_a_phase_that_raises_is_timed_all_the_same():
    wall = Hand()
    phases = Phases(Clocks(wall, Hand()))
    with pytest.raises(OSError), phases.timing("query", "schedd b"):
        wall.now += 20.0
        raise OSError("timed out")
    assert phases.fields()["query_seconds"] == {"schedd b": 20.0}


def test_seconds_are_rounded_to_a_tenth_of_a_millisecond():
    wall = Hand()
    phases = Phases(Clocks(wall, Hand()))
    with phases.timing("decide"):
        wall.now += 1 / 3
    assert phases.fields()["seconds"]["decide"] == 0.3333

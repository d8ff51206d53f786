"""The pool's totals made from the owners' figures."""

from __future__ import annotations

import math

from osep.measure.metrics import OwnerMetrics, totals


def owner(name: str, violation: float, lost: float, saved: float) -> OwnerMetrics:
    return OwnerMetrics(name, 1.0, 1, 1, 100.0, violation, 1, lost, saved_work=saved)


def test_totals_are_correctly_rounded_sums_and_pc_is_lost_work_plus_vacate_time():
    # Ten parts of 0.1: math.fsum gives 1.0 exactly, whichever Python runs it.
    owners = tuple(owner(f"o{k}", 0.1, 0.1, 0.1) for k in range(10))
    result = totals(owners, capacity_loss=3.0, vacate_time=2.0, vacates=10, makespan=7.0)
    assert result.violation == result.lost_work == result.saved_work == 1.0
    assert result.violation == math.fsum([0.1] * 10)
    assert result.cost == 3.0
    assert (result.capacity_loss, result.vacate_time, result.vacates, result.makespan) == (3.0, 2.0,
                                                                                          10, 7.0)
    assert result.owners is owners

"""OwnerView, Reason and Vacate made the fast way are the ones the dataclasses make."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from osep.core.model import JobId
from osep.core.plan import OwnerView, Reason, Vacate, owner_view, reason, vacate

FIGURES = ("a", 2.5, 3, 4, 1, 1, 8.0, 3.0, 2.5, 3.0, 4.0, 4, 1, (4.0, 4.0, 0.0, 0.0, 0.0),
           {"slots": 2.5})


def test_owner_view_is_the_dataclass():
    made, built = owner_view(*FIGURES), OwnerView(*FIGURES)
    assert type(made) is OwnerView
    assert made == built and repr(made) == repr(built)
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert made.gap == built.gap == 2.5 - 4.0
    assert dataclasses.replace(made, owner="b") == dataclasses.replace(built, owner="b")
    assert pickle.loads(pickle.dumps(made)) == built


def test_owner_view_stays_frozen():
    made = owner_view(*FIGURES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.target = 0.0  # type: ignore[misc]


def test_reason_and_vacate_are_the_dataclasses():
    why, told = reason("rule", 3.0, 1.0, 2.0, 5.0), Reason("rule", 3.0, 1.0, 2.0, 5.0)
    assert type(why) is Reason and why == told and hash(why) == hash(told)
    assert reason("rule", 3.0, 1.0, None, None) == Reason("rule", 3.0, 1.0)
    figures = (JobId("s", 1, 0), "a", "slot1@h", "b", 10.0, 5.0, 4.0, told, "slot1@h", (1, 0, 0, 0), 2)
    made, built = vacate(*figures), Vacate(*figures)
    assert type(made) is Vacate
    assert made == built and repr(made) == repr(built) and hash(made) == hash(built)
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert pickle.loads(pickle.dumps(made)) == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.owner = "c"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        why.rule = "other"  # type: ignore[misc]

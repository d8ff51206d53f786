"""OwnerView made the fast way is the OwnerView the dataclass makes."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from osep.core.plan import OwnerView, owner_view

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

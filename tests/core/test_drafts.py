"""The fast maker of frozen dataclasses gives what the class's own constructor gives."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass

import pytest

from osep.core.drafts import maker
from osep.core.model import JobId
from osep.core.plan import Claim, OwnerView, Reason, Vacate, claim, owner_view, reason, vacate
from osep.core.reservations import Reservation, ReservationBook


def test_made_objects_are_the_frozen_class_and_equal_to_its_own() -> None:
    why = reason("rule", 3.0, 1.0, 2.0, 4.0)
    assert type(why) is Reason and why == Reason("rule", 3.0, 1.0, 2.0, 4.0)
    assert hash(why) == hash(Reason("rule", 3.0, 1.0, 2.0, 4.0))
    made = vacate(JobId("s", 1, 0), "a", "slot1", "b", 10.0, 5.0, 5.0, why, "slot1", (1, 0, 0, 0), 2)
    assert made == Vacate(JobId("s", 1, 0), "a", "slot1", "b", 10.0, 5.0, 5.0, why, "slot1",
                          (1, 0, 0, 0), 2)
    assert claim("slot2", "b", why, (1, 0, 0, 0), None) == Claim("slot2", "b", why, (1, 0, 0, 0), None)
    view = owner_view("a", 2.0, 1, 0, 0, 0, 1.0, 1.0, 2.0, 1.0, 1.0, 0, 0, (1.0, 0.0, 0.0, 0.0, 0.0),
                      {"slots": 2.0})
    assert type(view) is OwnerView and view.gap == 1.0
    with pytest.raises(FrozenInstanceError):
        view.running = 3  # type: ignore[misc]


def test_the_book_hands_out_reservations_of_the_frozen_class() -> None:
    book = ReservationBook(lifetime=60.0)
    book.reserve("slot1", "a", 0.0, 2)
    taken = book.take("slot1", 10.0)
    assert type(taken) is Reservation and taken == Reservation("a", "slot1", 60.0, 3)


def test_a_class_without_slots_or_not_a_dataclass_has_no_maker() -> None:
    @dataclass(frozen=True)
    class Loose:
        a: int

    class Plain:
        __slots__ = ("a",)

    with pytest.raises(TypeError):
        maker(Loose)
    with pytest.raises(TypeError):
        maker(Plain)

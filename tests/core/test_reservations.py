"""The one reservation-and-hold book both pools keep: its rules, with the time passed in."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from osep.core.model import Slot
from osep.core.reservations import Reservation, ReservationBook

SLOTS = [Slot("s0"), Slot("s1"), Slot("s2")]


def marked(book: ReservationBook, occupied=()) -> dict[str, str | None]:
    shown = {k.place: k.owner for k in book.mark(SLOTS, occupied)}
    return {s.name: shown.get(s.name) for s in SLOTS}


def test_a_reservation_is_shown_on_its_slot_until_it_times_out():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    assert book.expire(50, running={}, idle={"b": 1}) == []
    assert marked(book) == {"s0": None, "s1": "b", "s2": None}
    (late,) = book.expire(101, running={}, idle={"b": 1})
    assert (late.owner, late.slot) == ("b", "s1") and marked(book)["s1"] is None


def test_it_ends_once_the_owner_runs_what_it_ran_plus_the_reservations_of_that_cycle():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=3)
    book.reserve("s2", "b", now=0, running=3)  # the same cycle: fulfilled at 5, not 4
    book.expire(10, running={"b": 4}, idle={"b": 1})
    assert marked(book)["s2"] == "b"
    book.expire(20, running={"b": 5}, idle={"b": 1})
    assert set(marked(book).values()) == {None}


def test_it_ends_when_its_owner_has_nothing_idle_to_put_there():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    assert book.expire(10, running={}, idle={}) == []  # ended as it should, not timed out
    assert marked(book)["s1"] is None


def test_a_busy_or_vanished_slot_hands_its_reservation_to_another_free_one():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    book.reserve("gone", "c", now=0, running=0)
    assert marked(book, occupied={"s1"}) == {"s0": "b", "s1": None, "s2": "c"}


def test_the_negotiator_takes_a_reservation_once_whether_or_not_it_is_used():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    assert book.take("s0", now=10) is None
    taken = book.take("s1", now=10)
    assert taken is not None and taken.owner == "b"
    assert book.take("s1", now=10) is None
    book.reserve("s2", "b", now=0, running=0)
    assert book.take("s2", now=101) is None  # too late: the slot is anybody's


def test_holds_cap_new_matches_until_replaced():
    book = ReservationBook(lifetime=100)
    book.hold({"a": 1, "c": 0})
    assert book.may_match("a") and not book.may_match("c") and book.may_match("b")
    book.matched("a")
    book.matched("b")  # not held: nothing to count
    assert not book.may_match("a") and book.holds == {"a": 0, "c": 0}
    book.hold({})
    assert book.may_match("a") and book.may_match("c")


def test_clear_forgets_everything():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    book.hold({"a": 0})
    book.clear()
    assert set(marked(book).values()) == {None} and book.holds == {}


def test_a_handover_does_not_fulfil_the_owners_other_reservations():
    """A vacate and two claims in one cycle; the negotiator hands over the two claimed slots, and
    the owner runs two more jobs: the vacated slot is still on its way, as a live pool (whose
    negotiator the book does not see) would count it."""
    book = ReservationBook(lifetime=100)
    book.reserve("s0", "b", now=0, running=0)  # the vacate's slot, still being vacated
    book.reserve("s1", "b", now=0, running=0)
    book.reserve("s2", "b", now=0, running=0)
    for slot in ("s1", "s2"):
        taken = book.take(slot, now=10)
        assert taken is not None
        book.handed_over(taken)
    book.expire(20, running={"b": 2}, idle={"b": 5})
    assert marked(book)["s0"] == "b"
    book.expire(30, running={"b": 3}, idle={"b": 5})
    assert marked(book)["s0"] is None


def test_handovers_in_order_leave_later_reservations_as_they_were():
    """Two reservations made at running 0 end at 1 and 2. The first slot is handed over: the
    second still ends when the owner runs 2 (that slot, or an equivalent one, reached it)."""
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    book.reserve("s2", "b", now=0, running=0)
    taken = book.take("s1", now=10)
    assert taken is not None
    book.handed_over(taken)
    book.expire(20, running={"b": 2}, idle={"b": 5})
    assert marked(book)["s2"] is None


def test_a_slot_taken_but_not_used_changes_no_other_reservation():
    book = ReservationBook(lifetime=100)
    book.reserve("s0", "b", now=0, running=0)
    book.reserve("s1", "b", now=0, running=0)
    assert book.take("s1", now=10) is not None  # b had nothing that fit there
    book.expire(20, running={"b": 1}, idle={"b": 5})
    assert marked(book)["s0"] is None  # b runs 1: the first reservation is fulfilled


def test_a_lapsed_reservation_does_not_stand_in_the_way_of_a_live_one():
    book = ReservationBook(lifetime=100)
    book.reserve("m0", "a", now=0, running=0, shape=(1, 0, 0, 0))
    book.reserve("m0", "b", now=50, running=0, shape=(1, 0, 0, 0))
    taken = book.take_fitting("m0", 120, (4, 0, 0, 0))
    assert taken is not None and taken.owner == "b"
    assert book.take_fitting("m0", 120, (4, 0, 0, 0)) is None


def test_the_book_makes_real_frozen_reservations() -> None:
    book = ReservationBook(lifetime=60.0)
    book.reserve("s1", "a", now=0.0, running=2, shape=(2, 0, 0, 0))
    book.reserve("s2", "a", now=0.0, running=2)
    first, second = book.standing()
    assert first == Reservation("a", "s1", 60.0, 3, (2, 0, 0, 0)) and type(first) is Reservation
    assert hash(second) == hash(Reservation("a", "s2", 60.0, 4))
    book.handed_over(first)
    moved = book.standing()[0]
    assert moved == Reservation("a", "s1", 60.0, 4, (2, 0, 0, 0)) and type(moved) is Reservation
    with pytest.raises(FrozenInstanceError):
        moved.owner = "b"  # type: ignore[misc]

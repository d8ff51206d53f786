"""The one reservation-and-hold book both pools keep: its rules, with the time passed in."""

from __future__ import annotations

from collections import Counter
from dataclasses import FrozenInstanceError, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.model import Job, JobId, JobState, Slot
from osep.core.reservations import Reservation, ReservationBook
from osep.core.resources import fits, less
from osep.core.view import PoolView

SLOTS = [Slot("s0"), Slot("s1"), Slot("s2")]


def view(slots, running=()) -> PoolView:
    """The pool view of ``slots`` with a job running on each slot named in ``running``."""
    jobs = [Job(JobId("q", k, 0), "x", JobState.RUNNING, slot=name, start_time=0.0, cpus=1)
            for k, name in enumerate(sorted(running))]
    return PoolView.of(slots, jobs)


def marked(book: ReservationBook, occupied=()) -> dict[str, str | None]:
    kept, _lost = book.mark(view(SLOTS, occupied))
    shown = {k.place: k.owner for k in kept}
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


def test_a_busy_or_vanished_slot_ends_its_reservation_at_once():
    """Room taken by someone else is not room kept: the owner's deficit must show in this cycle."""
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    book.reserve("gone", "c", now=0, running=0)
    book.reserve("s2", "d", now=0, running=0)
    kept, lost = book.mark(view(SLOTS, {"s1"}))
    assert [(k.owner, k.place) for k in kept] == [("d", "s2")]
    assert [(r.owner, r.slot) for r in lost] == [("b", "s1"), ("c", "gone")]
    assert [r.owner for r in book.standing()] == ["d"]  # ended for good, not just hidden
    assert marked(book) == {"s0": None, "s1": None, "s2": "d"}


def test_a_static_slot_is_kept_for_one_reservation_only():
    book = ReservationBook(lifetime=100)
    book.reserve("s1", "b", now=0, running=0)
    book.reserve("s1", "c", now=0, running=0)
    kept, lost = book.mark(view(SLOTS))
    assert [k.owner for k in kept] == ["b"] and [r.owner for r in lost] == ["c"]


MACHINE = Slot("m", cpus=0, partitionable=True)  # nothing left unclaimed
ON_IT = [Slot(f"m/{k}", cpus=1, parent="m") for k in range(4)]


@pytest.mark.parametrize(("running", "shapes", "kept_owners"), [
    # Four victims leaving: room for a 3-core job and a 1-core one, not for a second 3-core one.
    ((), [(3, None, 0, None), (1, None, 0, None)], ["b", "c"]),
    ((), [(3, None, 0, None), (3, None, 0, None)], ["b"]),
    # One of the four dynamic slots taken again (the victim's schedd, or anyone): no 4 cores.
    ({"m/2"}, [(4, None, 0, None)], []),
    # ... but the smaller job still fits what is left, in the order the book made them.
    ({"m/2"}, [(4, None, 0, None), (3, None, 0, None)], ["c"]),
    ({"m/0", "m/1", "m/2", "m/3"}, [(1, None, 0, None), (1, None, 0, None)], []),
])
def test_room_on_a_partitionable_slot_is_kept_while_it_is_there(running, shapes, kept_owners):
    book = ReservationBook(lifetime=100)
    for owner, shape in zip("bc", shapes, strict=False):
        book.reserve("m", owner, now=0, running=0, shape=shape)
    kept, lost = book.mark(view([MACHINE, *ON_IT], running))
    assert [k.owner for k in kept] == kept_owners
    assert sorted(r.owner for r in lost) == sorted(set("bc"[:len(shapes)]) - set(kept_owners))
    assert [r.owner for r in book.standing()] == kept_owners


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


OWNERS = ["a", "b", "c", "d"]


@given(st.dictionaries(st.sampled_from(OWNERS), st.integers(-2, 2)),
       st.sets(st.sampled_from(OWNERS)))
def test_whether_any_owner_may_match_is_may_match_of_each(holds, owners):
    book = ReservationBook(lifetime=100)
    book.hold(holds)
    assert book.may_match_any(owners) == any(book.may_match(o) for o in owners)


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


class ListBook:
    """The book's rules kept the plain way, one list walked whole by every call: what the indexed
    book must do exactly (it stood so until 2026-11-25)."""

    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self.items: list[Reservation] = []
        self.this_cycle: dict[str, int] = {}

    def reserve(self, slot, owner, now, running, shape):
        made = self.this_cycle.get(owner, 0) + 1
        self.this_cycle[owner] = made
        self.items.append(Reservation(owner, slot, now + self.lifetime, running + made, shape))

    def expire(self, now, running, idle):
        self.this_cycle.clear()
        timed_out = [r for r in self.items if r.expires < now]
        self.items = [r for r in self.items if r.expires >= now
                      and running.get(r.owner, 0) < r.until_running and idle.get(r.owner, 0) > 0]
        return timed_out

    def take(self, slot, now):
        for k, res in enumerate(self.items):
            if res.slot == slot:
                del self.items[k]
                return res if now <= res.expires else None
        return None

    def take_fitting(self, slot, now, room):
        found, kept = None, []
        for res in self.items:
            if res.slot == slot and res.expires < now:
                continue
            if found is None and res.slot == slot and fits(res.shape, room):
                found = res
            else:
                kept.append(res)
        self.items = kept
        return found

    def mark(self, slots, running):
        """The rules of :meth:`ReservationBook.mark`, walked the plain way over slot objects."""
        by_name = {s.name: s for s in slots}
        left, static, kept, lost = {}, set(), [], []
        for res in self.items:
            place = by_name.get(res.slot)
            if place is None or place.parent is not None:
                lost.append(res)
            elif place.partitionable:
                room = left.get(res.slot, place.room)
                if res.slot not in left:
                    for kid in slots:
                        if kid.parent == res.slot and kid.name not in running:
                            room = (room[0] + kid.cpus, None, room[2] + kid.gpus, None)
                if fits(res.shape, room):
                    left[res.slot] = less(room, res.shape)
                    kept.append((res.owner, res.slot, res.shape))
                else:
                    lost.append(res)
            elif res.slot in running or res.slot in static:
                lost.append(res)
            else:
                static.add(res.slot)
                kept.append((res.owner, res.slot, res.shape))
        self.items = [r for r in self.items if not any(r is gone for gone in lost)]  # (equal ones may differ)
        return kept, lost

    def handed_over(self, taken):
        self.items = [replace(r, until_running=r.until_running + 1)
                      if r.owner == taken.owner and r.until_running <= taken.until_running else r
                      for r in self.items]


PLACES = [Slot("s0"), Slot("s1"), Slot("s2"), Slot("m0", cpus=4, partitionable=True),
          Slot("m0/1", parent="m0")]
NAMES = ["s0", "s1", "s2", "m0", "gone"]
SHAPES = [(1, None, 0, None), (2, None, 0, None), (4, None, 0, None)]
steps = st.lists(st.one_of(
    st.tuples(st.just("reserve"), st.sampled_from(NAMES), st.sampled_from("abc"),
              st.integers(0, 6), st.sampled_from(SHAPES)),
    st.tuples(st.just("expire"), st.dictionaries(st.sampled_from("abc"), st.integers(0, 8)),
              st.dictionaries(st.sampled_from("abc"), st.integers(0, 2))),
    st.tuples(st.just("take"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("take_fitting"), st.sampled_from(NAMES), st.integers(0, 4)),
    st.tuples(st.just("mark"), st.sets(st.sampled_from(NAMES))),
    st.tuples(st.just("tick"), st.integers(1, 60)),
), max_size=60)


@settings(max_examples=400, deadline=None)
@given(steps)
def test_the_indexed_book_does_what_the_plain_list_did(program) -> None:
    """Every call, in any order, answers as the list walked whole answered, and leaves the same
    reservations standing, in the same order (which :meth:`ReservationBook.mark` follows)."""
    book, plain = ReservationBook(lifetime=100.0), ListBook(lifetime=100.0)
    now = 0.0
    for step in program:
        match step:
            case ("reserve", slot, owner, running, shape):
                book.reserve(slot, owner, now, running, shape)
                plain.reserve(slot, owner, now, running, shape)
            case ("expire", running, idle):
                assert book.expire(now, running, idle) == plain.expire(now, running, idle)
            case ("take", slot, use):
                got, want = book.take(slot, now), plain.take(slot, now)
                assert got == want
                if use and got is not None:
                    book.handed_over(got)
                    plain.handed_over(want)
            case ("take_fitting", slot, cpus):
                got, want = (book.take_fitting(slot, now, (cpus, None, 0, None)),
                             plain.take_fitting(slot, now, (cpus, None, 0, None)))
                assert got == want
                if got is not None:
                    book.handed_over(got)
                    plain.handed_over(want)
            case ("mark", occupied):
                kept, lost = book.mark(view(PLACES, occupied - {"gone"}))
                assert ([(k.owner, k.place, k.shape) for k in kept], list(lost)) == \
                    plain.mark(PLACES, occupied)
            case ("tick", seconds):
                now += seconds
        assert list(book.standing()) == plain.items
        assert book.pending() == bool(plain.items)
        assert book.kept_places() == Counter(r.slot for r in plain.items)


def test_the_state_file_gets_back_what_it_saved() -> None:
    book = ReservationBook(lifetime=60.0)
    book.reserve("s1", "a", now=0.0, running=2)
    book.reserve("m0", "b", now=5.0, running=0, shape=(2, 0, 0, 0))
    book.reserve("s1", "a", now=5.0, running=2)
    saved = book.entries()
    again = ReservationBook(lifetime=60.0)
    again.restore(saved)
    assert again.entries() == saved == list(book.standing())
    taken = again.take("s1", now=10.0)
    assert taken == saved[0] and again.entries() == saved[1:]

"""The wants book (osep.core.wants): an owner's idle jobs per shape in queue order, the room kept
for it taken off first, and the beneficiaries ranked by gap, then by name."""

from __future__ import annotations

from builders import machines
from osep.core.ledger import Ledger
from osep.core.plan import owner_view
from osep.core.resources import ZERO
from osep.core.view import view_of
from osep.core.wants import Wants, WantsBook, beneficiaries

SMALL, BIG = (1, 128, 0), (4, 1024, 0)


def tally(idle):
    return view_of(machines({"m": (8, 8192, 0)}, [], idle=idle)).tallies


def test_shapes_keep_queue_order_and_the_kept_room_takes_the_smallest():
    tallies = tally([("a", BIG), ("a", SMALL), ("a", SMALL)])
    assert list(Wants(tallies["a"], 0).shapes.items()) == [((4, 1024, 0, 0), 1), ((1, 128, 0, 0), 2)]
    assert Wants(tallies["a"], 2).shapes == {(4, 1024, 0, 0): 1}
    assert not Wants(tallies["a"], 5)


def test_the_largest_shape_that_fits_is_given_and_consumed():
    wants = Wants(tally([("a", BIG), ("a", SMALL)])["a"], 0)
    assert wants.fitting((2, 4096, 0, 0)) == (1, 128, 0, 0)
    assert wants.fitting((8, 8192, 0, 0)) == (4, 1024, 0, 0)
    wants.consume((4, 1024, 0, 0))
    assert wants.fitting((8, 8192, 0, 0)) == (1, 128, 0, 0)


def test_beneficiaries_rank_by_gap_then_name_and_leave_out_those_at_target():
    tallies = tally([("a", SMALL), ("b", SMALL), ("c", SMALL), ("d", SMALL)])
    views = {o: owner_view(o, 0.0, 0, 1, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, ZERO, {}) for o in tallies}
    ledger = Ledger({}, {}, {"a": 1.0, "b": 2.0, "c": 1.0, "d": 0.0}, None, 0)
    book = WantsBook(sorted(tallies), tallies, views)
    assert book.smallest() == (1, 128, 0, 0)
    heap = beneficiaries(book, ledger)
    assert sorted(heap) == [(-2.0, "b"), (-1.0, "a"), (-1.0, "c")]
    assert sorted(beneficiaries(book, ledger, passed={"b"})) == [(-1.0, "a"), (-1.0, "c")]

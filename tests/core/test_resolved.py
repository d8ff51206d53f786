"""Shares resolved for a pool's capacity, kept between decisions (osep.core.resolved)."""

from __future__ import annotations

from osep.core.resolved import resolved_shares
from osep.core.resources import Unit
from osep.core.shares import ShareTable


def test_resolved_shares_are_kept_per_table_capacity_and_unit():
    table = ShareTable({"b": 6, "a": {"cpus": 4}})
    pool = (10.0, 20.0, 0.0, 0.0, 0.0)
    first = resolved_shares(table, pool, Unit.SLOTS)
    assert first.resolved == table.resolve_all(pool) and first.owners == ["a", "b"]
    assert first.entitled == {"a": 0.0, "b": 6.0}
    assert resolved_shares(table, pool, Unit.SLOTS) is first  # the same table, pool and unit
    assert resolved_shares(table, pool, Unit.CPUS).entitled == {"a": 4.0, "b": 0.0}
    smaller = resolved_shares(table, (5.0, 2.0, 0.0, 0.0, 0.0), Unit.SLOTS)
    assert smaller.entitled == {"a": 0.0, "b": 5.0}
    # An equal table is another object: resolved afresh (tables are not compared entry by entry).
    assert resolved_shares(ShareTable({"b": 6, "a": {"cpus": 4}}), pool, Unit.SLOTS) is not first

"""The last few results, by the object's identity and the key's values."""

from __future__ import annotations

from osep.core.recent import Recent
from osep.core.shares import ShareTable


def test_a_result_is_found_for_the_same_object_and_an_equal_key_only() -> None:
    recent: Recent[int] = Recent()
    table = ShareTable({"a": 1.0})
    twin = ShareTable({"a": 1.0})  # equal, but another object: another entry
    assert recent.put(table, (10.0, "slots"), 1) == 1
    assert recent.get(table, (10.0, "slots")) == 1
    assert recent.get(table, (float(10), "slots")) == 1
    assert recent.get(twin, (10.0, "slots")) is None
    assert recent.get(table, (11.0, "slots")) is None


def test_only_the_last_few_are_kept_the_latest_first() -> None:
    recent: Recent[str] = Recent(keep=2)
    owner = object()
    for n in range(3):
        recent.put(owner, (n,), f"r{n}")
    assert recent.get(owner, (0,)) is None
    assert [recent.get(owner, (n,)) for n in (1, 2)] == ["r1", "r2"]
    recent.put(owner, (2,), "again")  # the latest put is found first
    assert recent.get(owner, (2,)) == "again"

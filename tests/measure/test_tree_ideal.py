"""The tree's ideal as the meter asks for it (:func:`osep.measure.trees.tree_ideal`): the tree's own
feasible targets, number for number, however demand moves between calls."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from osep.core.tree import ROOT, ShareTree, TreeNode
from osep.measure.trees import tree_ideal


@st.composite
def trees(draw: st.DrawFn) -> ShareTree:
    """Up to three levels: groups with members (some of them groups), shares amounts or percentages."""
    nodes: dict[str, TreeNode] = {}

    def grow(parent: str, depth: int) -> tuple[str, ...]:
        names = []
        for k in range(draw(st.integers(1, 4))):
            name = f"{parent}.n{k}" if parent != ROOT else f"g{k}"
            percent = draw(st.booleans())
            share = float(draw(st.integers(0, 100 if percent else 12)))
            kids = grow(name, depth + 1) if depth < 3 and draw(st.integers(0, 2)) == 0 else ()
            nodes[name] = TreeNode(name, parent, share, percent, kids)
            names.append(name)
        return tuple(names)

    top = grow(ROOT, 1)
    return ShareTree(nodes, "slots", top)


def owners(tree: ShareTree) -> list[str]:
    """The leaves, and owners the tree does not list: one in a group, one at the top."""
    groups = [n for n, node in tree.nodes.items() if node.children]
    return [*tree.shares, *(f"{g}.guest" for g in groups[:1]), "stranger"]


def move(data: st.DataObject, names: list[str], demand: dict[str, float], most: int) -> set[str]:
    """A few owners' demand moved, as events move it (0: the owner asks for nothing now): which."""
    moved = set()
    for owner in data.draw(st.lists(st.sampled_from(names), max_size=most)):
        amount = data.draw(st.sampled_from([0.0, 1.0, 2.0, 3.5, 10.0, 1000.0]))
        if amount:
            demand[owner] = amount
        else:
            demand.pop(owner, None)
        moved.add(owner)
    return moved


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_ideal_is_the_trees_feasible_targets_call_after_call(data: st.DataObject) -> None:
    tree = data.draw(trees())
    ideal = tree_ideal(tree)
    assert ideal is not None
    names = owners(tree)
    capacity = float(data.draw(st.sampled_from([1, 7, 40, 1580])))
    demand: dict[str, float] = {}
    for _ in range(data.draw(st.integers(1, 12))):  # a few changes at a time, as events make them
        move(data, names, demand, 3)
        if data.draw(st.integers(0, 9)) == 0:
            capacity = float(data.draw(st.sampled_from([1, 7, 40, 1580])))
        got = dict(ideal(dict(demand), capacity))
        want = tree.entitlements(demand, capacity, feasible=True).entitled
        expected = {o: want.get(o, 0.0) for o in set(demand) | set(tree.shares)}
        assert got == expected
        assert all(str(got[o]) == str(expected[o]) for o in got)  # the same bits, not only close


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_told_only_what_moved_it_gives_what_changed_bit_for_bit(data: st.DataObject) -> None:
    """The meter's way of asking (:meth:`update`): the owners whose demand moved since the last call,
    answered with the values that changed. Applied to the last answer, they give the tree's own
    feasible targets, the same bits, whatever moves: owners joining and leaving demand (those the
    tree does not list among them, which moves the groups' members), whole groups falling idle or
    waking, the capacity."""
    tree = data.draw(trees())
    ideal = tree_ideal(tree)
    assert ideal is not None
    update = ideal.update  # type: ignore[attr-defined]
    names = owners(tree)
    capacity = float(data.draw(st.sampled_from([1, 7, 40, 1580])))
    demand: dict[str, float] = {}
    seen: dict[str, float] = {}
    for _ in range(data.draw(st.integers(1, 20))):
        moved = move(data, names, demand, 4)
        if data.draw(st.integers(0, 14)) == 0:
            capacity = float(data.draw(st.sampled_from([1, 7, 40, 1580])))
        for owner, value in update(demand, moved, capacity).items():
            assert value != seen.get(owner, 0.0), owner  # only what changed
            seen[owner] = value
        want = tree.entitlements(demand, capacity, feasible=True).entitled
        expected = {o: want.get(o, 0.0) for o in set(demand) | set(tree.shares)}
        for owner in set(seen) | set(expected):
            assert str(seen.get(owner, 0.0)) == str(expected.get(owner, 0.0)), owner


def test_a_whole_group_falling_idle_and_waking_again():
    nodes = {
        "a": TreeNode("a", ROOT, 1.0, False, ("a.x", "a.y")),
        "a.x": TreeNode("a.x", "a", 1.0, False, ()),
        "a.y": TreeNode("a.y", "a", 1.0, False, ()),
        "b": TreeNode("b", ROOT, 1.0, False, ()),
    }
    tree = ShareTree(nodes, "slots", ("a", "b"))
    ideal = tree_ideal(tree)
    assert ideal is not None
    update = ideal.update  # type: ignore[attr-defined]
    assert update({"a.x": 5.0, "a.y": 5.0, "b": 5.0}, {"a.x", "a.y", "b"}, 10.0) == {
        "a.x": 2.5, "a.y": 2.5, "b": 5.0}
    assert update({"b": 5.0}, {"a.x", "a.y"}, 10.0) == {"a.x": 0.0, "a.y": 0.0}
    assert update({"b": 5.0, "a.y": 1.0}, {"a.y"}, 10.0) == {"a.y": 1.0}
    assert update({"b": 20.0, "a.y": 1.0}, {"b"}, 10.0) == {"b": 9.0}
    assert update({"b": 5.0, "a.y": 1.0}, set(), 10.0) == {}

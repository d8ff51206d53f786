"""``osep shares``' table fits a 100-column terminal for any tree (hypothesis): names of any length
and depth, shares and usage of any size; only ``--wide`` may be wider."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from osep.bounds import MAX_NAME
from osep.config.policy import MAX_DEPTH
from osep.config.sharesfile import MAX_USAGE, SharesFile
from osep.fairshare import MODELS, Params
from osep.fairshare.hierarchy import ROOT, Hierarchy
from osep.ui.shares import TABLE_WIDTH, shares_document, shares_table

own_names = st.text(st.characters(codec="utf-8", exclude_characters="."), min_size=1, max_size=MAX_NAME)
amounts = st.one_of(st.just(0.0), st.floats(1e-300, 1e15), st.sampled_from([1.0, 30.0, 1 / 3]))


@st.composite
def shares_files(draw):
    """A tree of up to MAX_DEPTH levels (a chain first, so that the deepest level is reached), the
    other nodes hung anywhere; some leaves with usage, some not."""
    parents: dict[str, str] = {}
    shares: dict[str, float] = {}
    percent = set()
    depth = draw(st.integers(1, MAX_DEPTH))
    extra = draw(st.integers(0, 6))
    chain = ROOT
    for k in range(depth + extra):
        parent = chain if k < depth else draw(st.sampled_from([ROOT, *parents]))
        if parent != ROOT and parent.count(".") + 2 > MAX_DEPTH:
            parent = ROOT
        own = draw(own_names)
        name = f"{parent}.{own}" if parent else own
        if name in parents:
            continue
        parents[name] = parent
        chain = name
        if draw(st.booleans()):
            percent.add(name)
            shares[name] = draw(st.floats(0, 100))
        else:
            shares[name] = draw(amounts)
    tree = Hierarchy(parents, shares, frozenset(percent))
    usage = {leaf: draw(st.one_of(st.just(0.0), st.floats(0, MAX_USAGE))) for leaf in tree.leaves()
             if draw(st.booleans())}
    path = draw(st.text(min_size=1, max_size=300))
    return SharesFile(path, "cpus", tree, usage, None, usage_given=draw(st.booleans()))


@settings(max_examples=150, deadline=None)
@given(shares_files(), st.sets(st.sampled_from(MODELS), min_size=1))
def test_no_line_of_the_table_is_wider_than_100_columns(loaded, models):
    chosen = [m for m in MODELS if m in models]
    text = shares_table(shares_document(loaded, chosen, Params()))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= TABLE_WIDTH, max(lines, key=len)
    rows = lines[lines.index("", 1) + 4:]
    assert len(rows[:rows.index("")]) == len(loaded.tree.parents)  # one row per node, none wrapped

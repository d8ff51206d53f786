"""Generated, hostile group-quota configurations: whatever the names and values, the text is TOML
that Python's parser reads, keeps osep's rules for owner trees, and drops nothing unsaid."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import check_osep_rules, nodes
from osep.config.toml import escape
from osep.htcondor.quota_knobs import SHOWN, fold
from osep.htcondor.quota_shares import PoolSize, translate
from osep.htcondor.reading import classad_value

# Parts of names: a few short ones (so that parents exist and trees form), anything at all, and
# the ones osep or HTCondor treat specially.
PARTS = st.one_of(
    st.sampled_from(["a", "b", "B", "cms", "share", "cpus", "(own)", "<none>", "", "x" * 300, 'q"uote',
                     "back\\slash", "new\nline", "tab\t", "é", "日本", "\u202e", "\x00", "\ud800", "#", "[", "="]),
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=4),
)
def _with_parents(paths: list[list[str]]) -> list[str]:
    """Every path and each of its prefixes: a tree whose parents exist."""
    return list(dict.fromkeys(".".join(p[:k]) for p in paths for k in range(1, len(p) + 1)))


NAMES = st.one_of(
    st.lists(st.lists(PARTS, min_size=1, max_size=4).map(".".join), max_size=14),
    st.lists(st.lists(st.one_of(st.sampled_from(["a", "b", "B", "c"]), PARTS), min_size=1, max_size=5),
             max_size=6).map(_with_parents),
)
VALUES = st.one_of(
    st.floats(min_value=0, max_value=1).map(repr),  # in range for either kind of quota
    st.integers(min_value=0, max_value=10_000).map(str),
    st.sampled_from(["0", "1", "0.5", "1.5", "-1", "nan", "NaN", "inf", "-inf", "1e12", "1e999", "abc", "",
                     " 7 ", "0x10", "2*100", "true", "False", "1/0", "real(\"nan\")", "10 +", '"str"', "0.333335"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.text(max_size=20),
)
KINDS = ["GROUP_QUOTA_", "GROUP_QUOTA_DYNAMIC_", "GROUP_ACCEPT_SURPLUS_", "GROUP_AUTOREGROUP_", "GROUP_PRIO_FACTOR_"]
GLOBALS = ["GROUP_ACCEPT_SURPLUS", "GROUP_AUTOREGROUP", "SLOT_WEIGHT", "NEGOTIATOR_USE_SLOT_WEIGHTS",
           "FORCE_NEGOTIATOR_SLOT_WEIGHT", "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", "NEGOTIATOR_STRICT_ENFORCE_QUOTA",
           "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT", "GROUP_SORT_EXPR", "GROUP_QUOTA_ROUND_ROBIN_RATE"]


@st.composite
def configurations(draw: st.DrawFn) -> dict[str, str]:
    names = draw(NAMES)
    separator = draw(st.sampled_from([",", ", ", " ", "\n", " ,\t"]))
    knobs = {"GROUP_NAMES": separator.join(names)}
    for name in names:
        for kind in draw(st.lists(st.sampled_from(KINDS), max_size=3, unique=True)):
            knobs[kind + name] = draw(VALUES)
    for name in draw(st.lists(st.sampled_from(GLOBALS), max_size=4, unique=True)):
        knobs[name] = draw(st.one_of(VALUES, st.sampled_from(["Cpus", "Memory", "gpus", "Disk", "Cpus*2"])))
    for _ in range(draw(st.integers(0, 2))):  # knobs of no listed group, in any case
        knobs[draw(st.sampled_from(KINDS)).lower() + draw(PARTS)] = draw(VALUES)
    return knobs


POOLS = st.builds(
    PoolSize,
    weighted=st.one_of(st.none(), st.floats(min_value=0, max_value=1e9)),
    effective=st.one_of(st.none(), st.floats(min_value=0, max_value=1e9)),
    weighs=st.one_of(st.none(), st.frozensets(st.sampled_from(["slots", "cpus", "memory", "gpus", "disk"]))),
    source=st.text(max_size=30),
    problem=st.one_of(st.none(), st.text(max_size=30)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configurations(), POOLS, st.booleans())
def test_hostile_configurations_are_always_readable_toml(knobs, pool, evaluate):
    result = translate(knobs, pool, classad_value if evaluate else None)
    doc = check_osep_rules(result.text)
    written = set(nodes(doc["owners"]))
    assert result.groups == len(written)
    problems = result.text.split("\n[policy]")[0]
    assert (f"# {len(result.problems):,} problem" in problems) == bool(result.problems)
    # Every listed group is written (as its spelled path) or said: by name, or as a subgroup of one
    # that is said not to be written (counted there).
    said = " ".join(line.lstrip("#- ").strip() for line in result.text.splitlines() if line.startswith("#"))
    folded_written = {fold(w) for w in written}
    for name in set(_tokens(knobs["GROUP_NAMES"])):
        if fold(name) in folded_written:
            continue
        parts = name.split(".")
        prefixes = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
        assert any(escape(p, SHOWN) in said for p in prefixes), name


def _tokens(text: str) -> list[str]:
    return [t.strip(" \t\n\v\f\r") for t in re.split(r"[, \t\r\n]+", text) if t.strip(" \t\n\v\f\r")]

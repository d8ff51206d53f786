"""The negotiator's group-quota knobs read as HTCondor reads them (osep.htcondor.quota_knobs): its
literals, bounds and booleans, its tree of groups, names it ignores, and every bad value a problem,
seen directly and in the policy text they come to."""

from __future__ import annotations

import math

import pytest

from builders import comments, header, shares_of, translated
from osep.htcondor.quota_knobs import GroupTree, Knobs, literal, split_names
from osep.htcondor.quota_shares import PoolSize
from osep.htcondor.reading import classad_value

# -- values as param_double and param_boolean read them ---------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("7", 7.0), (" 1.5e2 \n", 150.0), ("+.5", 0.5), ("5.", 5.0), ("0x10", 16.0), ("-0x1p-1", -0.5),
    ("inf", math.inf), ("-Infinity", -math.inf), ("nan", math.nan), ("NaN(x1)", math.nan),
    ("", None), ("1e", None), ("0x", None), ("2*3", None), ("1,5", None), ("infinite", None),
    ("\u00a07", None),  # only C's white space is trimmed
])
def test_literals_are_the_whole_text_as_strtod_reads_it(text, value):
    read = literal(text)
    if value is None or not math.isnan(value):
        assert read == value
    else:
        assert read is not None and math.isnan(read)


@pytest.mark.parametrize(("given", "read"), [
    (None, None),
    ("0.5", (0.5, None)),
    ("nan", None),  # NaN passes the bounds, as it does in HTCondor
    ("-1", (0.0, "q = -1 is below 0")),
    ("2", (1.0, "q = 2 is above 1")),
    ("x", (0.0, "q = x is not a number")),
    ("", (0.0, "q = '' is not a number")),
])
def test_numbers_are_bounded_as_param_double_bounds_them(given, read):
    knobs = Knobs({} if given is None else {"Q": given}, None)  # names have no case
    got = knobs.number("q", 0.0, 1.0)
    if given == "nan":
        assert got is not None and math.isnan(got[0]) and got[1] is None
    else:
        assert got == read


@pytest.mark.parametrize(("given", "evaluate", "read"), [
    (None, None, (False, None)), ("TRUE", None, (True, None)), ("1", None, (True, None)),
    ("false \t", None, (False, None)), ("0", None, (False, None)),
    ("yes", None, (False, "f = yes is not true or false")),
    ("1 == 1", classad_value, (True, None)), ("2", classad_value, (True, None)),
    ('real("nan")', classad_value, (False, 'f = real("nan") is not true or false')),
])
def test_booleans_are_read_as_param_boolean_reads_them(given, evaluate, read):
    knobs = Knobs({} if given is None else {"F": given}, evaluate)
    assert knobs.flag("f", False) == read


def test_group_names_split_at_commas_and_white_space():
    assert split_names(" a,b\tc\n, ,\vd ,") == ["a", "b", "c", "d"]
    assert split_names("") == []


def test_the_tree_is_the_negotiators_with_each_quota_as_configured():
    knobs = {"GROUP_NAMES": "b.x, a b", "GROUP_QUOTA_a": "3", "GROUP_QUOTA_DYNAMIC_b": "0.5",
             "group_quota_dynamic_B.X": "1", "GROUP_ACCEPT_SURPLUS": "true", "GROUP_ACCEPT_SURPLUS_b": "false"}
    tree = GroupTree(Knobs(knobs, None))
    assert [g.name for g in tree.groups] == ["a", "b", "b.x"]  # parents first, whatever the order given
    a, b, bx = tree.groups
    assert (a.static, a.config, a.surplus) == (True, 3.0, True)
    assert (b.static, b.config, b.surplus) == (False, 0.5, False)
    assert (bx.static, bx.config, bx.surplus, bx.parent) == (False, 1.0, True, b)
    assert tree.root.children == [a, b] and tree.problems == []
    assert all(g.quota is None for g in tree.groups)  # handed down by quota_shares, not here


# -- what the knobs come to in the policy text ------------------------------------------------------


def test_surplus_and_autoregroup_per_group_and_overall():
    knobs = {"GROUP_NAMES": "a b c", "GROUP_QUOTA_a": "1", "GROUP_QUOTA_b": "1", "GROUP_QUOTA_c": "1",
             "GROUP_ACCEPT_SURPLUS": "TRUE", "GROUP_ACCEPT_SURPLUS_b": "false", "GROUP_AUTOREGROUP_c": "1"}
    result = translated(knobs)
    assert "ceiling" not in comments(result, "a") and "autoregroup" not in comments(result, "a")
    assert "a ceiling, as it accepts no surplus: it and its subgroups together never use more" in comments(
        result, "b")
    assert "autoregroup (past its quota its jobs also compete as jobs of no group)" in comments(result, "c")
    knobs["NEGOTIATOR_STRICT_ENFORCE_QUOTA"] = "false"
    result = translated(knobs)
    assert "a ceiling, as it accepts no surplus: it never uses more" in comments(result, "b")
    assert "NEGOTIATOR_STRICT_ENFORCE_QUOTA is false" in header(result)


def test_static_beats_dynamic_and_the_priority_factor_is_said():
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "7", "GROUP_QUOTA_DYNAMIC_a": "0.5", "GROUP_PRIO_FACTOR_a": "2.0"}
    result = translated(knobs)
    assert shares_of(result) == {"a": 7}
    note = comments(result, "a")
    assert "GROUP_QUOTA_DYNAMIC_a is ignored: a static quota wins" in note
    assert "GROUP_PRIO_FACTOR_a = 2.0 sets its users' priority factor" in note


def test_knobs_of_no_listed_group_are_said_and_names_have_no_case():
    knobs = {"group_names": "Group_A", "group_quota_group_a": "3", "GROUP_QUOTA_gone": "9",
             "GROUP_ACCEPT_SURPLUS_gone": "true"}
    result = translated(knobs)
    assert shares_of(result) == {"Group_A": 3}
    assert "GROUP_QUOTA_gone is set, for no group in the tree: HTCondor ignores it" in header(result)
    assert "GROUP_ACCEPT_SURPLUS_gone is set" in header(result)


def test_a_subgroup_spelled_in_another_case_than_its_parent():
    result = translated({"GROUP_NAMES": "physics, PHYSICS.cms", "GROUP_QUOTA_physics": "10",
                         "GROUP_QUOTA_physics.cms": "4"})
    assert shares_of(result) == {"physics": 10, "physics.cms": 4}
    assert "HTCondor names it PHYSICS.cms (the same group, case aside)" in comments(result, "physics.cms")


@pytest.mark.parametrize(("given", "share", "problems"), [
    # A bad static quota: the negotiator stops on it; were it to go on, it would read 0 (the default,
    # -1, raised to the bound): a static 0, which among dynamic siblings is 0%.
    ({"GROUP_QUOTA_a": "abc"}, "0%", ["GROUP_QUOTA_a = abc is not a number; the negotiator stops"]),
    ({"GROUP_QUOTA_a": "-5"}, "0%", ["GROUP_QUOTA_a = -5 is below 0; the negotiator stops"]),
    ({"GROUP_QUOTA_a": "2*100"}, "0%", ["GROUP_QUOTA_a = 2*100 is not a number"]),  # no evaluator given
    # Past INT_MAX: read as INT_MAX, beside a dynamic sibling (an amount at the pool's size), and more
    # than osep takes.
    ({"GROUP_QUOTA_a": "inf"}, 10_000_000, ["GROUP_QUOTA_a = inf is above 2,147,483,647",
                                            "a share of 2,147,483,647 cpus is more than osep takes"]),
    ({"GROUP_QUOTA_a": "1e12"}, 10_000_000, ["GROUP_QUOTA_a = 1e12 is above 2,147,483,647",
                                             "a share of 2,147,483,647 cpus is more than osep takes: "
                                             "written as 10,000,000"]),
    # NaN passes param_double and fails the static test: the dynamic quota counts, or none.
    ({"GROUP_QUOTA_a": "nan"}, "25%", ["GROUP_QUOTA_a is NaN, which HTCondor takes as unset, and its dynamic"]),
    ({"GROUP_QUOTA_a": "nan", "GROUP_QUOTA_DYNAMIC_a": None}, "0%",
     ["GROUP_QUOTA_a is NaN, which HTCondor takes as unset, and no quota is set: HTCondor gives it a quota of 0"]),
    ({"GROUP_QUOTA_DYNAMIC_a": None}, "0%", ["no quota is set: HTCondor gives it a quota of 0"]),
    ({"GROUP_QUOTA_DYNAMIC_a": "NaN"}, "0%", ["GROUP_QUOTA_DYNAMIC_a is NaN: HTCondor gives it a quota of 0"]),
    # Past 1: read as 1, then 1 and b's 0.5 are scaled to add up to 1.
    ({"GROUP_QUOTA_DYNAMIC_a": "1.5"}, "66.6667%", ["GROUP_QUOTA_DYNAMIC_a = 1.5 is above 1; the negotiator stops"]),
    ({"GROUP_QUOTA_DYNAMIC_a": "-0.1"}, "0%", ["GROUP_QUOTA_DYNAMIC_a = -0.1 is below 0"]),
    ({"GROUP_ACCEPT_SURPLUS_a": "maybe"}, "25%", ["GROUP_ACCEPT_SURPLUS_a = maybe is not true or false"]),
    ({"GROUP_AUTOREGROUP_a": "yes"}, "25%", ["GROUP_AUTOREGROUP_a = yes is not true or false"]),
])
def test_bad_values_are_problems(given, share, problems):
    knobs = {"GROUP_NAMES": "a b", "GROUP_QUOTA_DYNAMIC_a": "0.25", "GROUP_QUOTA_DYNAMIC_b": "0.5", **given}
    result = translated({k: v for k, v in knobs.items() if v is not None}, PoolSize(weighted=1000))
    assert shares_of(result)["a"] == share
    assert len(result.problems) == len(problems), result.problems
    for said, problem in zip(result.problems, problems, strict=True):
        assert said.startswith("group a: ") and problem in said
        assert f"problem: {problem}" in comments(result, "a")


@pytest.mark.parametrize(("knob", "value", "share"), [
    ("GROUP_QUOTA_a", "2*100", 200), ("GROUP_QUOTA_a", " 1.5e2 ", 150), ("GROUP_QUOTA_a", "0x10", 16),
    ("GROUP_QUOTA_a", "int(7.9)", 7), ("GROUP_QUOTA_a", "true", 1),  # a ClassAd bool is a number, 1
    ("GROUP_ACCEPT_SURPLUS_a", "1 == 1", 4),
])
def test_expressions_are_read_as_htcondor_reads_them(knob, value, share):
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "4", knob: value}
    result = translated(knobs, evaluate=classad_value)
    assert shares_of(result) == {"a": share} and result.problems == ()
    if knob.startswith("GROUP_ACCEPT"):
        assert "accepts no surplus" not in result.text


def test_an_evaluator_that_fails_is_a_bad_value():
    def broken(text: str) -> object:
        raise RuntimeError("no")

    result = translated({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "2*3"}, evaluate=broken)
    assert "is not a number" in result.problems[0]


def test_bad_globals_are_problems_too():
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "4", "GROUP_ACCEPT_SURPLUS": "sure",
             "NEGOTIATOR_USE_SLOT_WEIGHTS": "often", "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION": "2x"}
    result = translated(knobs)
    assert len(result.problems) == 3
    assert all("the negotiator stops with an error on it" in p for p in result.problems)


def test_pool_wide_group_quota_knobs_are_not_taken_for_a_groups():
    knobs = {"GROUP_NAMES": "group_a", "GROUP_QUOTA_group_a": "4",
             "GROUP_QUOTA_ROUND_ROBIN_RATE": "1.0e100", "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS": "3"}
    result = translated(knobs, PoolSize(weighted=10))
    assert "for no group in the tree" not in result.text
    assert "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS = 3 how often" in result.text.replace("\n#   ", " ")


@pytest.mark.parametrize(("names", "written", "problem"), [
    ("a a.b c.d", {"a", "a.b"}, "group c.d is ignored by HTCondor: its parent c is not a group"),
    ("a A", {"a"}, "GROUP_NAMES lists A besides a: names do not differ by case"),
    ("a <none>", {"a"}, "GROUP_NAMES lists <none>, the name of the root"),
])
def test_names_htcondor_ignores(names, written, problem):
    """Names the negotiator leaves out of its tree: said, not written."""
    knobs = {"GROUP_NAMES": names, **{f"GROUP_QUOTA_{n}": "1" for n in names.split()}}
    result = translated(knobs)
    assert set(shares_of(result)) == written
    assert any(problem in p for p in result.problems), result.problems

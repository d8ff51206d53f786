"""The negotiator's group quotas written as an osep policy tree (osep.htcondor.groups): worked
examples from HTCondor's manual and source, every setting osep has no equal for, and bad values."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

import pytest

from builders import check_osep_rules, nodes
from osep.config.bounds import MAX_OWNERS, MAX_TABLES
from osep.config.policy import MAX_DEPTH, parse_policy
from osep.config.toml import Table
from osep.htcondor.groups import PoolSize, Translation, translate
from osep.htcondor.reading import classad_value

MANUAL_STATIC = {  # the manual's hierarchical example (cm-configuration.rst)
    "GROUP_NAMES": "group_physics, group_physics.hep, group_physics.lep, group_chemistry",
    "GROUP_QUOTA_group_physics": "20",
    "GROUP_QUOTA_group_physics.hep": "15",
    "GROUP_QUOTA_group_physics.lep": "5",
    "GROUP_QUOTA_group_chemistry": "10",
}
MANUAL_DYNAMIC = {
    "GROUP_NAMES": "group_physics, group_physics.hep, group_physics.lep, group_chemistry",
    "GROUP_QUOTA_DYNAMIC_group_chemistry": "0.33334",
    "GROUP_QUOTA_DYNAMIC_group_physics": "0.66667",
    "GROUP_QUOTA_DYNAMIC_group_physics.hep": "0.75",
    "GROUP_QUOTA_DYNAMIC_group_physics.lep": "0.25",
}


# -- helpers: what the text says --------------------------------------------------------------------


def shares(result: Translation) -> dict[str, Any]:
    return nodes(tomllib.loads(result.text)["owners"])


def comments(result: Translation, node: str) -> str:
    """The comments written on ``node`` (the lines between its table's header and its share), joined
    into one line of text."""
    lines = result.text.splitlines()
    header = f"[owners.{node}]"
    start = lines.index(header)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("share = "))
    return " ".join(line.lstrip("#").strip() for line in lines[start + 1:end])


def header(result: Translation) -> str:
    lines = result.text.split("\n[policy]")[0].splitlines()
    return " ".join(line.lstrip("#").strip() for line in lines)


def run(knobs: Mapping[str, str], pool: PoolSize = PoolSize(), **options: Any) -> Translation:
    result = translate(knobs, pool, **options)
    check_osep_rules(result.text)
    assert f"{len(result.problems):,} problem" in result.text or not result.problems
    return result


# -- worked examples ---------------------------------------------------------------------------------


def test_the_manuals_static_example_is_its_tree_in_cores():
    result = run(MANUAL_STATIC, PoolSize(weighted=30, source="the negotiator negotiator@cm"))
    doc = tomllib.loads(result.text)
    assert doc["policy"] == {"unit": "cpus"}  # SLOT_WEIGHT's default, Cpus
    assert shares(result) == {"group_chemistry": 10, "group_physics": 20, "group_physics.hep": 15,
                              "group_physics.lep": 5}
    assert result.problems == () and result.groups == 4
    assert "Read from the negotiator negotiator@cm." in result.text
    assert "GROUP_QUOTA_group_physics.hep = 15 (static)" in comments(result, "group_physics.hep")
    # Surplus is off by default: every group is a ceiling in HTCondor, and its comment says so.
    for node in shares(result):
        assert "a ceiling, as it accepts no surplus" in comments(result, node)
    # The root: 30 - 20 - 10 = 0 cores left for jobs of no group.
    assert "<none> group, which gets what the groups leave, 0 cpus now" in header(result)


def test_the_manuals_dynamic_example_is_percentages_scaled_to_add_up_to_100():
    result = run(MANUAL_DYNAMIC)
    # 0.33334 + 0.66667 = 1.00001 > 1: HTCondor divides each by 1.00001 (hgq_assign_quotas' Zd).
    assert shares(result) == {"group_chemistry": "33.3337%", "group_physics": "66.6663%",
                              "group_physics.hep": "75%", "group_physics.lep": "25%"}
    assert "add up to 1.00001, so it scales each by 1/1.00001" in comments(result, "group_physics")
    assert "scales" not in comments(result, "group_physics.hep")


def test_three_levels_static_and_dynamic_levels_in_turn():
    knobs = {"GROUP_NAMES": "a a.b a.b.c a.b.d a.e", "GROUP_QUOTA_a": "100", "GROUP_QUOTA_DYNAMIC_a.b": "0.6",
             "GROUP_QUOTA_DYNAMIC_a.e": "0.4", "GROUP_QUOTA_a.b.c": "30", "GROUP_QUOTA_a.b.d": "40",
             "GROUP_ACCEPT_SURPLUS": "true"}
    result = run(knobs, PoolSize(weighted=200))
    assert shares(result) == {"a": 100, "a.b": "60%", "a.b.c": 30, "a.b.d": 40, "a.e": "40%"}
    assert result.problems == ()
    assert "accepts no surplus" not in result.text
    assert "<none> group, which gets what the groups leave, 100 cpus now" in header(result)
    # a.b comes to 60 of a's 100; its static 30 and 40 stay whole in HTCondor, osep scales them.
    assert ("the static quotas under a.b add up to 70, more than its 60: it keeps each whole"
            in comments(result, "a.b.c"))


@pytest.mark.parametrize(("oversubscribe", "says"), [
    (None, "it keeps each whole (NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION); osep scales them to fit"),
    ("false", "it scales them to fit, as osep does"),
])
def test_static_quotas_past_their_parent(oversubscribe, says):
    knobs = {"GROUP_NAMES": "p p.x p.y", "GROUP_QUOTA_p": "100", "GROUP_QUOTA_p.x": "80", "GROUP_QUOTA_p.y": "40"}
    if oversubscribe:
        knobs["NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION"] = oversubscribe
    result = run(knobs, PoolSize(weighted=500))
    # The amounts as configured either way: osep scales siblings past their parent itself.
    assert shares(result) == {"p": 100, "p.x": 80, "p.y": 40}
    assert says in comments(result, "p.x")
    assert "add up to 120, more than its 100" in comments(result, "p.x")


def test_top_level_statics_past_the_pool():
    result = run({"GROUP_NAMES": "a b", "GROUP_QUOTA_a": "20", "GROUP_QUOTA_b": "10"}, PoolSize(weighted=15))
    assert shares(result) == {"a": 20, "b": 10}
    assert ("the static quotas under the pool add up to 30, more than its 15: it keeps each whole"
            in comments(result, "a"))


def test_mixed_static_and_dynamic_siblings_are_amounts_at_the_pools_size():
    knobs = {"GROUP_NAMES": "cms atlas lhcb", "GROUP_QUOTA_cms": "500", "GROUP_QUOTA_DYNAMIC_atlas": "0.5",
             "GROUP_QUOTA_DYNAMIC_lhcb": "0.25"}
    result = run(knobs, PoolSize(weighted=1000))
    # Dynamic quotas share what the static ones leave: 0.5 and 0.25 of 1000 - 500.
    assert shares(result) == {"atlas": 250, "cms": 500, "lhcb": 125}
    assert result.problems == ()
    note = comments(result, "atlas")
    assert "0.5 of what the static quotas beside it leave of the pool, 250 cpus now" in note
    assert "stays when the pool's size changes" in note
    assert "<none> group, which gets what the groups leave, 125 cpus now" in header(result)


def test_mixed_siblings_without_the_pools_size_are_a_problem_not_a_guess():
    knobs = {"GROUP_NAMES": "cms atlas", "GROUP_QUOTA_cms": "500", "GROUP_QUOTA_DYNAMIC_atlas": "0.5"}
    result = run(knobs)
    assert shares(result) == {"atlas": 0, "cms": 500}
    assert len(result.problems) == 1 and "unknown here: written as 0" in result.problems[0]
    assert "problem:" in comments(result, "atlas")


def test_mixed_siblings_without_oversubscription_scale_the_statics_first():
    knobs = {"GROUP_NAMES": "p p.x p.y p.z", "GROUP_QUOTA_p": "100", "GROUP_QUOTA_p.x": "60",
             "GROUP_QUOTA_p.y": "20", "GROUP_QUOTA_DYNAMIC_p.z": "0.5",
             "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION": "False"}
    result = run(knobs, PoolSize(weighted=1000))
    assert shares(result) == {"p": 100, "p.x": 60, "p.y": 20, "p.z": 10}  # 0.5 of 100 - 80
    # Without oversubscription a group's own jobs get what its subgroups leave of its quota.
    assert "what its subgroups leave of its quota" in header(result)


def test_a_zero_of_either_kind_fits_any_sibling_set():
    """A dynamic 0 is 0 whatever the pool, and so is a static 0: neither makes a set mixed."""
    result = run({"GROUP_NAMES": "a b c", "GROUP_QUOTA_a": "10", "GROUP_QUOTA_DYNAMIC_b": "0", "GROUP_QUOTA_c": "5"})
    assert shares(result) == {"a": 10, "b": 0, "c": 5}
    result = run({"GROUP_NAMES": "a b", "GROUP_QUOTA_a": "0", "GROUP_QUOTA_DYNAMIC_b": "0.5"})
    assert shares(result) == {"a": "0%", "b": "50%"}
    assert result.problems == ()


def test_percentages_never_add_up_to_more_than_100():
    knobs = {"GROUP_NAMES": "a b c", **{f"GROUP_QUOTA_DYNAMIC_{g}": "0.333335" for g in "abc"}}
    result = run(knobs)
    assert shares(result) == {"a": "33.3333%", "b": "33.3333%", "c": "33.3333%"}  # each 33.33333...
    knobs = {"GROUP_NAMES": "a b", "GROUP_QUOTA_DYNAMIC_a": "0.8", "GROUP_QUOTA_DYNAMIC_b": "0.6"}
    assert shares(run(knobs)) == {"a": "57.1429%", "b": "42.8571%"}


# -- settings osep has no equal for -------------------------------------------------------------------


def test_surplus_and_autoregroup_per_group_and_overall():
    knobs = {"GROUP_NAMES": "a b c", "GROUP_QUOTA_a": "1", "GROUP_QUOTA_b": "1", "GROUP_QUOTA_c": "1",
             "GROUP_ACCEPT_SURPLUS": "TRUE", "GROUP_ACCEPT_SURPLUS_b": "false", "GROUP_AUTOREGROUP_c": "1"}
    result = run(knobs)
    assert "ceiling" not in comments(result, "a") and "autoregroup" not in comments(result, "a")
    assert "a ceiling, as it accepts no surplus: it and its subgroups together never use more" in comments(
        result, "b")
    assert "autoregroup (past its quota its jobs also compete as jobs of no group)" in comments(result, "c")
    knobs["NEGOTIATOR_STRICT_ENFORCE_QUOTA"] = "false"
    result = run(knobs)
    assert "a ceiling, as it accepts no surplus: it never uses more" in comments(result, "b")
    assert "NEGOTIATOR_STRICT_ENFORCE_QUOTA is false" in header(result)


def test_static_beats_dynamic_and_the_priority_factor_is_said():
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "7", "GROUP_QUOTA_DYNAMIC_a": "0.5", "GROUP_PRIO_FACTOR_a": "2.0"}
    result = run(knobs)
    assert shares(result) == {"a": 7}
    note = comments(result, "a")
    assert "GROUP_QUOTA_DYNAMIC_a is ignored: a static quota wins" in note
    assert "GROUP_PRIO_FACTOR_a = 2.0 sets its users' priority factor" in note


def test_knobs_of_no_listed_group_are_said_and_names_have_no_case():
    knobs = {"group_names": "Group_A", "group_quota_group_a": "3", "GROUP_QUOTA_gone": "9",
             "GROUP_ACCEPT_SURPLUS_gone": "true"}
    result = run(knobs)
    assert shares(result) == {"Group_A": 3}
    assert "GROUP_QUOTA_gone is set, for no group in the tree: HTCondor ignores it" in header(result)
    assert "GROUP_ACCEPT_SURPLUS_gone is set" in header(result)


def test_a_subgroup_spelled_in_another_case_than_its_parent():
    result = run({"GROUP_NAMES": "physics, PHYSICS.cms", "GROUP_QUOTA_physics": "10", "GROUP_QUOTA_physics.cms": "4"})
    assert shares(result) == {"physics": 10, "physics.cms": 4}
    assert "HTCondor names it PHYSICS.cms (the same group, case aside)" in comments(result, "physics.cms")


def test_the_root_and_no_groups_at_all():
    result = run({})
    assert tomllib.loads(result.text) == {"policy": {"unit": "cpus"}, "owners": {}}
    assert "GROUP_NAMES names no group" in result.text and result.groups == 0
    assert parse_policy(Table("x", {"unit": "cpus"}, "policy"), Table("x", {}, "owners")).settings.unit.value == "cpus"


@pytest.mark.parametrize(("knobs", "unit", "share", "says"), [
    ({"SLOT_WEIGHT": "Memory"}, "memory", 4096, "quotas count memory"),
    ({"SLOT_WEIGHT": " ( gpus ) "}, "gpus", 4096, "quotas count gpus"),
    ({"SLOT_WEIGHT": "disk"}, "disk", 4096, "quotas count disk"),
    ({"SLOT_WEIGHT": "1"}, "slots", 4096, "every slot weighs 1"),
    ({"SLOT_WEIGHT": "2"}, "slots", 2048, "the quotas divided by 2, in slots"),
    ({"NEGOTIATOR_USE_SLOT_WEIGHTS": "false", "SLOT_WEIGHT": "Memory"}, "slots", 4096,
     "NEGOTIATOR_USE_SLOT_WEIGHTS is false"),
    ({"SLOT_WEIGHT": "Cpus", "FORCE_NEGOTIATOR_SLOT_WEIGHT": "true"}, "cpus", 4096, "quotas count cpus"),
])
def test_the_unit_is_what_slot_weight_counts(knobs, unit, share, says):
    result = run({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "4096", **knobs})
    assert tomllib.loads(result.text)["policy"]["unit"] == unit
    assert shares(result) == {"a": share}
    assert says in header(result) and result.problems == ()
    assert ("only for slots without one" in header(result)) == ("FORCE_NEGOTIATOR_SLOT_WEIGHT" not in knobs
                                                                 and "NEGOTIATOR_USE_SLOT_WEIGHTS" not in knobs)


def test_a_slot_weight_osep_cannot_count_and_slots_that_weigh_otherwise():
    result = run({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8", "SLOT_WEIGHT": "Cpus + 10 * Gpus"})
    assert tomllib.loads(result.text)["policy"]["unit"] == "cpus"
    assert len(result.problems) == 1 and "is no one resource osep counts" in result.problems[0]
    result = run({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8", "SLOT_WEIGHT": "2.2e-311"})  # 1 / it is inf
    assert shares(result) == {"a": 8} and "is no one resource osep counts" in result.problems[0]
    result = run({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8"}, PoolSize(weighs=frozenset({"memory"})))
    assert len(result.problems) == 1 and "the startds' SLOT_WEIGHT is not the negotiator's" in result.problems[0]
    assert run({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8"}, PoolSize(weighs=frozenset({"cpus", "slots"}))).problems == ()


def test_the_pools_constraints_and_the_negotiators_mechanics_are_said():
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8", "GROUP_DYNAMIC_MACH_CONSTRAINT": "Cpus > 2",
             "NEGOTIATOR_SLOT_CONSTRAINT": "true", "GROUP_QUOTA_ROUND_ROBIN_RATE": "10",
             "GROUP_SORT_EXPR": 'ifThenElse(AccountingGroup=?="<none>",3.4e+38,ifThenElse(GroupQuota>0,'
                                'GroupResourcesInUse/GroupQuota,3.3e+38))'}
    said = header(run(knobs))
    assert "GROUP_DYNAMIC_MACH_CONSTRAINT = Cpus > 2: only the slots it matches size the pool" in said
    assert "NEGOTIATOR_SLOT_CONSTRAINT = true" in said
    assert "GROUP_QUOTA_ROUND_ROBIN_RATE = 10 paces" in said
    assert "GROUP_SORT_EXPR" not in said  # its default says nothing
    knobs["NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT"] = "Memory > 1"  # the newer name wins
    said = header(run(knobs))
    assert "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT = Memory > 1" in said and "GROUP_DYNAMIC_MACH" not in said


# -- bad values: counted and commented, never a traceback ----------------------------------------


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
    result = run({k: v for k, v in knobs.items() if v is not None}, PoolSize(weighted=1000))
    assert shares(result)["a"] == share
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
    result = run(knobs, evaluate=classad_value)
    assert shares(result) == {"a": share} and result.problems == ()
    if knob.startswith("GROUP_ACCEPT"):
        assert "accepts no surplus" not in result.text


def test_an_evaluator_that_fails_is_a_bad_value():
    def broken(text: str) -> object:
        raise RuntimeError("no")

    result = run({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "2*3"}, evaluate=broken)
    assert "is not a number" in result.problems[0]


def test_bad_globals_are_problems_too():
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "4", "GROUP_ACCEPT_SURPLUS": "sure",
             "NEGOTIATOR_USE_SLOT_WEIGHTS": "often", "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION": "2x"}
    result = run(knobs)
    assert len(result.problems) == 3
    assert all("the negotiator stops with an error on it" in p for p in result.problems)


# -- names: what HTCondor ignores, and what osep's files cannot hold -----------------------------------


@pytest.mark.parametrize(("names", "written", "problem"), [
    ("a a.b c.d", {"a", "a.b"}, "group c.d is ignored by HTCondor: its parent c is not a group"),
    ("a A", {"a"}, "GROUP_NAMES lists A besides a: names do not differ by case"),
    ("a <none>", {"a"}, "GROUP_NAMES lists <none>, the name of the root"),
    ("a a.share a.share.x", {"a"}, "group a.share is not written, nor its 1 subgroups: a part of its name is 'share'"),
    ("a a.cpus", {"a"}, "a part of its name is 'cpus', which osep's policy files keep"),
    ("a a.(own)", {"a"}, "a part of its name is '(own)'"),
    ("a a. a..b", {"a"}, "group a. is not written, nor its 1 subgroups: a part of its name is empty"),
    ("a a.\x01", {"a"}, "group a.\\x01 is not written: a part of its name has control or invisible"),
    (f"a a.{'x' * 300}", {"a"}, "a part of its name is 300 characters long"),
])
def test_names(names, written, problem):
    knobs = {"GROUP_NAMES": names, **{f"GROUP_QUOTA_{n}": "1" for n in names.split()}}
    result = run(knobs)
    assert set(shares(result)) == written
    assert any(problem in p for p in result.problems), result.problems


def test_names_that_need_quoting_are_quoted():
    names = ['g"q', "g'q", "g\\q", "grüppe", "g#x", "g=y", "g[z]", "日本"]
    result = run({"GROUP_NAMES": ",".join(names), **{f"GROUP_QUOTA_{n}": "2" for n in names}})
    assert shares(result) == dict.fromkeys(names, 2) and result.problems == ()


def test_deeper_than_osep_takes():
    path = [f"l{k}" for k in range(MAX_DEPTH + 2)]
    names = [".".join(path[:k + 1]) for k in range(len(path))]
    result = run({"GROUP_NAMES": " ".join(names), **{f"GROUP_QUOTA_DYNAMIC_{n}": "1" for n in names}})
    assert len(shares(result)) == MAX_DEPTH
    assert any(f"is not written, nor its 1 subgroups: it is deeper than the {MAX_DEPTH} levels" in p
               for p in result.problems)


def test_many_groups_are_dotted_keys_and_at_most_osep_takes():
    count = MAX_TABLES + 10
    knobs = {"GROUP_NAMES": ",".join(f"g{k}" for k in range(count)),
             **{f"GROUP_QUOTA_g{k}": str(k) for k in range(count)}}
    result = run(knobs)
    assert "[owners.g1]" not in result.text and "g1.share = 1" in result.text
    assert len(shares(result)) == count and result.problems == ()
    assert len(re.findall(r"^\[", result.text, re.MULTILINE)) == 2  # [policy] and [owners]
    many = MAX_OWNERS + 5
    knobs = {"GROUP_NAMES": ",".join(f"g{k}" for k in range(many)), **{f"GROUP_QUOTA_g{k}": "1" for k in range(many)}}
    result = translate(knobs)
    assert len(shares(result)) == MAX_OWNERS
    assert any("5 more groups are not written" in p for p in result.problems)
    assert any("more than the 524,288 osep reads in a policy file" in p for p in result.problems)


def test_a_flat_tree_is_a_policy_osep_reads_today():
    """Groups without subgroups are a flat owner list: osep's own parser reads the text."""
    knobs = {"GROUP_NAMES": 'a, "b", c', "GROUP_QUOTA_DYNAMIC_a": "0.2", 'GROUP_QUOTA_DYNAMIC_"b"': "0.3",
             "GROUP_QUOTA_DYNAMIC_c": "0.5"}
    doc = tomllib.loads(run(knobs).text)
    policy = parse_policy(Table("x", doc["policy"], "policy"), Table("x", doc["owners"], "owners"))
    assert policy.settings.shares.shares == {"a": {"cpus": 20.0}, '"b"': {"cpus": 30.0}, "c": {"cpus": 50.0}}
    assert policy.settings.shares.percent


def test_pool_wide_group_quota_knobs_are_not_taken_for_a_groups():
    knobs = {"GROUP_NAMES": "group_a", "GROUP_QUOTA_group_a": "4",
             "GROUP_QUOTA_ROUND_ROBIN_RATE": "1.0e100", "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS": "3"}
    result = run(knobs, PoolSize(weighted=10))
    assert "for no group in the tree" not in result.text
    assert "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS = 3 how often" in result.text.replace("\n#   ", " ")

"""The negotiator's group quotas handed down and written as an osep policy tree
(osep.htcondor.quota_shares): worked examples from HTCondor's manual and source, the unit and the
pool's size, the settings osep has no equal for, and what osep's policy files cannot hold."""

from __future__ import annotations

import re
import tomllib

import pytest

from builders import comments, header, shares_of, translated
from osep.bounds import MAX_OWNERS, MAX_TABLES
from osep.config.policy import MAX_DEPTH, parse_policy
from osep.config.toml import Table
from osep.htcondor.quota_shares import PoolSize, translate

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


# -- worked examples ---------------------------------------------------------------------------------


def test_the_manuals_static_example_is_its_tree_in_cores():
    result = translated(MANUAL_STATIC, PoolSize(weighted=30, source="the negotiator negotiator@cm"))
    doc = tomllib.loads(result.text)
    assert doc["policy"] == {"unit": "cpus"}  # SLOT_WEIGHT's default, Cpus
    assert shares_of(result) == {"group_chemistry": 10, "group_physics": 20, "group_physics.hep": 15,
                              "group_physics.lep": 5}
    assert result.problems == () and result.groups == 4
    assert "Read from the negotiator negotiator@cm." in result.text
    assert "GROUP_QUOTA_group_physics.hep = 15 (static)" in comments(result, "group_physics.hep")
    # Surplus is off by default: every group is a ceiling in HTCondor, and its comment says so.
    for node in shares_of(result):
        assert "a ceiling, as it accepts no surplus" in comments(result, node)
    # The root: 30 - 20 - 10 = 0 cores left for jobs of no group.
    assert "<none> group, which gets what the groups leave, 0 cpus now" in header(result)


def test_the_manuals_dynamic_example_is_percentages_scaled_to_add_up_to_100():
    result = translated(MANUAL_DYNAMIC)
    # 0.33334 + 0.66667 = 1.00001 > 1: HTCondor divides each by 1.00001 (hgq_assign_quotas' Zd).
    assert shares_of(result) == {"group_chemistry": "33.3337%", "group_physics": "66.6663%",
                              "group_physics.hep": "75%", "group_physics.lep": "25%"}
    assert "add up to 1.00001, so it scales each by 1/1.00001" in comments(result, "group_physics")
    assert "scales" not in comments(result, "group_physics.hep")


def test_three_levels_static_and_dynamic_levels_in_turn():
    knobs = {"GROUP_NAMES": "a a.b a.b.c a.b.d a.e", "GROUP_QUOTA_a": "100", "GROUP_QUOTA_DYNAMIC_a.b": "0.6",
             "GROUP_QUOTA_DYNAMIC_a.e": "0.4", "GROUP_QUOTA_a.b.c": "30", "GROUP_QUOTA_a.b.d": "40",
             "GROUP_ACCEPT_SURPLUS": "true"}
    result = translated(knobs, PoolSize(weighted=200))
    assert shares_of(result) == {"a": 100, "a.b": "60%", "a.b.c": 30, "a.b.d": 40, "a.e": "40%"}
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
    result = translated(knobs, PoolSize(weighted=500))
    # The amounts as configured either way: osep scales siblings past their parent itself.
    assert shares_of(result) == {"p": 100, "p.x": 80, "p.y": 40}
    assert says in comments(result, "p.x")
    assert "add up to 120, more than its 100" in comments(result, "p.x")


def test_top_level_statics_past_the_pool():
    result = translated({"GROUP_NAMES": "a b", "GROUP_QUOTA_a": "20", "GROUP_QUOTA_b": "10"}, PoolSize(weighted=15))
    assert shares_of(result) == {"a": 20, "b": 10}
    assert ("the static quotas under the pool add up to 30, more than its 15: it keeps each whole"
            in comments(result, "a"))


def test_mixed_static_and_dynamic_siblings_are_amounts_at_the_pools_size():
    knobs = {"GROUP_NAMES": "cms atlas lhcb", "GROUP_QUOTA_cms": "500", "GROUP_QUOTA_DYNAMIC_atlas": "0.5",
             "GROUP_QUOTA_DYNAMIC_lhcb": "0.25"}
    result = translated(knobs, PoolSize(weighted=1000))
    # Dynamic quotas share what the static ones leave: 0.5 and 0.25 of 1000 - 500.
    assert shares_of(result) == {"atlas": 250, "cms": 500, "lhcb": 125}
    assert result.problems == ()
    note = comments(result, "atlas")
    assert "0.5 of what the static quotas beside it leave of the pool, 250 cpus now" in note
    assert "stays when the pool's size changes" in note
    assert "<none> group, which gets what the groups leave, 125 cpus now" in header(result)


def test_mixed_siblings_without_the_pools_size_are_a_problem_not_a_guess():
    knobs = {"GROUP_NAMES": "cms atlas", "GROUP_QUOTA_cms": "500", "GROUP_QUOTA_DYNAMIC_atlas": "0.5"}
    result = translated(knobs)
    assert shares_of(result) == {"atlas": 0, "cms": 500}
    assert len(result.problems) == 1 and "unknown here: written as 0" in result.problems[0]
    assert "problem:" in comments(result, "atlas")


def test_mixed_siblings_without_oversubscription_scale_the_statics_first():
    knobs = {"GROUP_NAMES": "p p.x p.y p.z", "GROUP_QUOTA_p": "100", "GROUP_QUOTA_p.x": "60",
             "GROUP_QUOTA_p.y": "20", "GROUP_QUOTA_DYNAMIC_p.z": "0.5",
             "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION": "False"}
    result = translated(knobs, PoolSize(weighted=1000))
    assert shares_of(result) == {"p": 100, "p.x": 60, "p.y": 20, "p.z": 10}  # 0.5 of 100 - 80
    # Without oversubscription a group's own jobs get what its subgroups leave of its quota.
    assert "what its subgroups leave of its quota" in header(result)


def test_a_zero_of_either_kind_fits_any_sibling_set():
    """A dynamic 0 is 0 whatever the pool, and so is a static 0: neither makes a set mixed."""
    result = translated({"GROUP_NAMES": "a b c", "GROUP_QUOTA_a": "10", "GROUP_QUOTA_DYNAMIC_b": "0",
                         "GROUP_QUOTA_c": "5"})
    assert shares_of(result) == {"a": 10, "b": 0, "c": 5}
    result = translated({"GROUP_NAMES": "a b", "GROUP_QUOTA_a": "0", "GROUP_QUOTA_DYNAMIC_b": "0.5"})
    assert shares_of(result) == {"a": "0%", "b": "50%"}
    assert result.problems == ()


def test_percentages_never_add_up_to_more_than_100():
    knobs = {"GROUP_NAMES": "a b c", **{f"GROUP_QUOTA_DYNAMIC_{g}": "0.333335" for g in "abc"}}
    result = translated(knobs)
    assert shares_of(result) == {"a": "33.3333%", "b": "33.3333%", "c": "33.3333%"}  # each 33.33333...
    knobs = {"GROUP_NAMES": "a b", "GROUP_QUOTA_DYNAMIC_a": "0.8", "GROUP_QUOTA_DYNAMIC_b": "0.6"}
    assert shares_of(translated(knobs)) == {"a": "57.1429%", "b": "42.8571%"}


# -- the root, the unit, the pool's size and what the negotiator does besides ------------------------


def test_the_root_and_no_groups_at_all():
    result = translated({})
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
    result = translated({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "4096", **knobs})
    assert tomllib.loads(result.text)["policy"]["unit"] == unit
    assert shares_of(result) == {"a": share}
    assert says in header(result) and result.problems == ()
    assert ("only for slots without one" in header(result)) == ("FORCE_NEGOTIATOR_SLOT_WEIGHT" not in knobs
                                                                 and "NEGOTIATOR_USE_SLOT_WEIGHTS" not in knobs)


def test_a_slot_weight_osep_cannot_count_and_slots_that_weigh_otherwise():
    result = translated({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8", "SLOT_WEIGHT": "Cpus + 10 * Gpus"})
    assert tomllib.loads(result.text)["policy"]["unit"] == "cpus"
    assert len(result.problems) == 1 and "is no one resource osep counts" in result.problems[0]
    result = translated({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8", "SLOT_WEIGHT": "2.2e-311"})  # 1 / it is inf
    assert shares_of(result) == {"a": 8} and "is no one resource osep counts" in result.problems[0]
    result = translated({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8"}, PoolSize(weighs=frozenset({"memory"})))
    assert len(result.problems) == 1 and "the startds' SLOT_WEIGHT is not the negotiator's" in result.problems[0]
    result = translated({"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8"}, PoolSize(weighs=frozenset({"cpus", "slots"})))
    assert result.problems == ()


def test_the_pools_constraints_and_the_negotiators_mechanics_are_said():
    knobs = {"GROUP_NAMES": "a", "GROUP_QUOTA_a": "8", "GROUP_DYNAMIC_MACH_CONSTRAINT": "Cpus > 2",
             "NEGOTIATOR_SLOT_CONSTRAINT": "true", "GROUP_QUOTA_ROUND_ROBIN_RATE": "10",
             "GROUP_SORT_EXPR": 'ifThenElse(AccountingGroup=?="<none>",3.4e+38,ifThenElse(GroupQuota>0,'
                                'GroupResourcesInUse/GroupQuota,3.3e+38))'}
    said = header(translated(knobs))
    assert "GROUP_DYNAMIC_MACH_CONSTRAINT = Cpus > 2: only the slots it matches size the pool" in said
    assert "NEGOTIATOR_SLOT_CONSTRAINT = true" in said
    assert "GROUP_QUOTA_ROUND_ROBIN_RATE = 10 paces" in said
    assert "GROUP_SORT_EXPR" not in said  # its default says nothing
    knobs["NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT"] = "Memory > 1"  # the newer name wins
    said = header(translated(knobs))
    assert "NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT = Memory > 1" in said and "GROUP_DYNAMIC_MACH" not in said


# -- names and sizes osep's policy files cannot hold -------------------------------------------------


@pytest.mark.parametrize(("names", "written", "problem"), [
    ("a a.share a.share.x", {"a"}, "group a.share is not written, nor its 1 subgroups: a part of its name is 'share'"),
    ("a a.cpus", {"a"}, "a part of its name is 'cpus', which osep's policy files keep"),
    ("a a.(own)", {"a"}, "a part of its name is '(own)'"),
    ("a a. a..b", {"a"}, "group a. is not written, nor its 1 subgroups: a part of its name is empty"),
    ("a a.\x01", {"a"}, "group a.\\x01 is not written: a part of its name has control or invisible"),
    (f"a a.{'x' * 300}", {"a"}, "a part of its name is 300 characters long"),
])
def test_names_osep_files_cannot_hold(names, written, problem):
    """Names HTCondor takes and osep's policy files refuse: said, not written."""
    knobs = {"GROUP_NAMES": names, **{f"GROUP_QUOTA_{n}": "1" for n in names.split()}}
    result = translated(knobs)
    assert set(shares_of(result)) == written
    assert any(problem in p for p in result.problems), result.problems


def test_names_that_need_quoting_are_quoted():
    names = ['g"q', "g'q", "g\\q", "grüppe", "g#x", "g=y", "g[z]", "日本"]
    result = translated({"GROUP_NAMES": ",".join(names), **{f"GROUP_QUOTA_{n}": "2" for n in names}})
    assert shares_of(result) == dict.fromkeys(names, 2) and result.problems == ()


def test_deeper_than_osep_takes():
    path = [f"l{k}" for k in range(MAX_DEPTH + 2)]
    names = [".".join(path[:k + 1]) for k in range(len(path))]
    result = translated({"GROUP_NAMES": " ".join(names), **{f"GROUP_QUOTA_DYNAMIC_{n}": "1" for n in names}})
    assert len(shares_of(result)) == MAX_DEPTH
    assert any(f"is not written, nor its 1 subgroups: it is deeper than the {MAX_DEPTH} levels" in p
               for p in result.problems)


def test_many_groups_are_dotted_keys_and_at_most_osep_takes():
    count = MAX_TABLES + 10
    knobs = {"GROUP_NAMES": ",".join(f"g{k}" for k in range(count)),
             **{f"GROUP_QUOTA_g{k}": str(k) for k in range(count)}}
    result = translated(knobs)
    assert "[owners.g1]" not in result.text and "g1.share = 1" in result.text
    assert len(shares_of(result)) == count and result.problems == ()
    assert len(re.findall(r"^\[", result.text, re.MULTILINE)) == 2  # [policy] and [owners]
    many = MAX_OWNERS + 5
    knobs = {"GROUP_NAMES": ",".join(f"g{k}" for k in range(many)), **{f"GROUP_QUOTA_g{k}": "1" for k in range(many)}}
    result = translate(knobs)
    assert len(shares_of(result)) == MAX_OWNERS
    assert any("5 more groups are not written" in p for p in result.problems)
    assert any("more than the 524,288 osep reads in a policy file" in p for p in result.problems)


def test_a_flat_tree_is_a_policy_osep_reads_today():
    """Groups without subgroups are a flat owner list: osep's own parser reads the text."""
    knobs = {"GROUP_NAMES": 'a, "b", c', "GROUP_QUOTA_DYNAMIC_a": "0.2", 'GROUP_QUOTA_DYNAMIC_"b"': "0.3",
             "GROUP_QUOTA_DYNAMIC_c": "0.5"}
    doc = tomllib.loads(translated(knobs).text)
    policy = parse_policy(Table("x", doc["policy"], "policy"), Table("x", doc["owners"], "owners"))
    assert policy.settings.shares.shares == {"a": {"cpus": 20.0}, '"b"': {"cpus": 30.0}, "c": {"cpus": 50.0}}
    assert policy.settings.shares.percent

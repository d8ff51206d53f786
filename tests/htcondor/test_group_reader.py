"""Reading the negotiator's group quotas through the bindings (osep.htcondor.group_reader.read_group_quotas),
against the fake pool: the negotiator's own configuration, not this machine's; and the pool's size
as the negotiator counts it."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest

from builders import check_osep_rules, nodes
from fakecondor import FakeCondor, classad
from osep.config.livepool import LiveSettings
from osep.errors import PoolError
from osep.htcondor import group_reader, quota_shares, reading

QUICK = LiveSettings(retries=2, retry_wait=0.0)


@pytest.fixture
def fake(monkeypatch) -> FakeCondor:
    pool = FakeCondor(knobs={"GROUP_NAMES": "local_only", "GROUP_QUOTA_local_only": "1"})
    pool.install(monkeypatch)
    return pool


def test_the_negotiators_own_configuration_is_read_not_this_machines(fake):
    fake.negotiator_config.update({
        "GROUP_NAMES": "group_physics, group_physics.cms, group_chem",
        "GROUP_QUOTA_group_physics": "12",
        "NEGOTIATOR.GROUP_QUOTA_group_physics": "16",  # the negotiator's own: it wins there
        "SCHEDD.GROUP_QUOTA_group_chem": "99",  # another daemon's: not the negotiator's
        "group_quota_dynamic_group_physics.cms": "0.5",  # names have no case in HTCondor
        "GROUP_QUOTA_DYNAMIC_group_chem": None,  # set, but empty: the daemon says "Not defined"
        "NEGOTIATOR.GROUP_ACCEPT_SURPLUS": "True",
        "OSEP_INTERVAL": "60",  # not read
        "COLLECTOR_HOST": "cm",
    })
    read = group_reader.read_group_quotas(QUICK)
    assert read.knobs == {
        "GROUP_NAMES": "group_physics, group_physics.cms, group_chem",
        "GROUP_QUOTA_group_physics": "16",
        "group_quota_dynamic_group_physics.cms": "0.5",
        "GROUP_ACCEPT_SURPLUS": "True",
    }
    # One request for the key list, then one per knob read: the prefixed key where there is one.
    assert sorted(fake.config_reads) == sorted([
        "GROUP_NAMES", "NEGOTIATOR.GROUP_QUOTA_group_physics", "group_quota_dynamic_group_physics.cms",
        "GROUP_QUOTA_DYNAMIC_group_chem", "NEGOTIATOR.GROUP_ACCEPT_SURPLUS"])
    assert read.pool_size.source == "the negotiator negotiator@cm's own configuration"
    result = quota_shares.translate(read.knobs, read.pool_size, reading.classad_value)
    doc = check_osep_rules(result.text)
    assert nodes(doc["owners"]) == {"group_chem": 0, "group_physics": 16, "group_physics.cms": "50%"}
    assert "Read from the negotiator negotiator@cm's own configuration." in result.text
    assert len(result.problems) == 1 and "group group_chem: no quota is set" in result.problems[0]


def test_this_machines_configuration_when_asked(fake):
    fake.negotiator_config["GROUP_NAMES"] = "elsewhere"
    read = group_reader.read_group_quotas(QUICK, remote=False)
    assert read.knobs == {"GROUP_NAMES": "local_only", "GROUP_QUOTA_local_only": "1"}
    assert "this machine's configuration" in read.pool_size.source
    assert fake.config_reads == []


def test_the_pools_size_as_the_negotiator_counts_it(fake):
    fake.run("alice", 3)  # three one-core static slots, SlotWeight 1
    fake.slots.append(classad(Name="slot1@big", Cpus=8, Memory=8192, SlotType="Partitionable",
                              PartitionableSlot=True, State="Unclaimed", SlotWeight=8))
    fake.slots.append(classad(Name="ghost@offline", Cpus=2, Memory=64, SlotWeight=2, GhostMultiplier=3))
    fake.slots.append(classad(Name="noweight@node", Cpus=4, Memory=4096))  # weighs the negotiator's SLOT_WEIGHT
    fake.negotiator_config["GROUP_NAMES"] = "a"
    size = group_reader.read_group_quotas(QUICK).pool_size
    assert size.weighted == 3 + 8 + 2 * 3 + 4
    assert size.effective == 3 + 8 + 1 + 1  # a partitionable slot counts as its cores
    assert size.weighs == frozenset({"cpus"})
    fake.negotiator_config["SLOT_WEIGHT"] = "Memory / 1024"
    assert group_reader.read_group_quotas(QUICK).pool_size.weighted == 3 + 8 + 6 + 4
    fake.negotiator_config.update({"FORCE_NEGOTIATOR_SLOT_WEIGHT": "true", "SLOT_WEIGHT": "1"})
    size = group_reader.read_group_quotas(QUICK).pool_size
    assert size.weighted == 3 + 1 + 3 + 1  # every slot weighs 1, the offline one three times
    assert size.weighs == frozenset({"cpus"})  # what the slots say of themselves, still


def test_only_the_slots_that_size_the_pool_count(fake):
    fake.run("alice", 2)
    fake.slots.append(classad(Name="big@node", Cpus=16, Memory=1, SlotWeight=16))
    fake.negotiator_config.update({"GROUP_NAMES": "a", "GROUP_DYNAMIC_MACH_CONSTRAINT": "Cpus < 16"})
    assert group_reader.read_group_quotas(QUICK).pool_size.weighted == 2
    fake.negotiator_config["NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT"] = "Cpus >= 16"  # the newer name wins
    assert group_reader.read_group_quotas(QUICK).pool_size.weighted == 16
    fake.negotiator_config["NEGOTIATOR_SLOT_CONSTRAINT"] = "Cpus < 16"  # and slots never negotiated
    assert group_reader.read_group_quotas(QUICK).pool_size.weighted == 0


def test_a_pool_that_cannot_be_counted_still_gives_its_knobs(fake, monkeypatch):
    fake.negotiator_config.update({"GROUP_NAMES": "a b", "GROUP_QUOTA_a": "5", "GROUP_QUOTA_DYNAMIC_b": "0.5"})
    fake.negotiator_config["NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT"] = "Cpus >"  # the collector refuses it
    read = group_reader.read_group_quotas(QUICK)
    assert read.pool_size.weighted is None and "counting the pool's slots" in (read.pool_size.problem or "")
    result = quota_shares.translate(read.knobs, read.pool_size)
    assert any(p.startswith("the pool could not be counted: counting the pool's slots") for p in result.problems)
    assert nodes(tomllib.loads(result.text)["owners"]) == {"a": 5, "b": 0}  # b needs the pool's size


@pytest.mark.parametrize("down", ["negotiator", "collector"])
def test_a_negotiator_that_cannot_be_asked_is_a_pool_error(fake, down):
    fake.negotiator_config["GROUP_NAMES"] = "a"
    fake.down.add(down)
    with pytest.raises(PoolError, match=r"asking the collector .* for the negotiator|asking the negotiator at"):
        group_reader.read_group_quotas(QUICK)


@pytest.mark.parametrize("pool, knob, named", [
    ("cm.example:9619", "other:9618", "the collector at cm.example:9619"),  # --pool, OSEP_POOL
    (None, "cm.example:9618", "the collector at cm.example:9618"),  # the configuration's COLLECTOR_HOST
    (None, None, "the collector (no --pool, OSEP_POOL or COLLECTOR_HOST set)"),
])
def test_a_collector_that_cannot_be_reached_is_named_with_its_address(fake, pool, knob, named):
    if knob is not None:
        fake.knobs["COLLECTOR_HOST"] = knob
    fake.down.add("collector")
    with pytest.raises(PoolError) as raised:
        group_reader.read_group_quotas(replace(QUICK, pool=pool))
    assert str(raised.value).startswith(f"asking {named} for the negotiator: ")


def test_no_groups_at_all(fake):
    fake.negotiator_config["SLOT_WEIGHT"] = "Cpus"
    read = group_reader.read_group_quotas(QUICK)
    assert read.knobs == {"SLOT_WEIGHT": "Cpus"}
    result = quota_shares.translate(read.knobs, read.pool_size)
    assert tomllib.loads(result.text)["owners"] == {} and result.groups == 0


@pytest.mark.parametrize(("text", "value"), [
    ("2 * 100", 200), ("true && false", False), ('"s"', "s"), ("real(\"nan\") > 1", False), ("abc", None),
    ("1 +", None), ("1/0", None), ("int(7.9)", 7),
])
def test_classad_values(text, value):
    assert reading.classad_value(text) == value

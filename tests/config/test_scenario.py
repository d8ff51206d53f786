"""Scenario files, good and bad."""

from __future__ import annotations

from pathlib import Path

import pytest

from osep.config.scenario import load_scenario
from osep.errors import ConfigError
from osep.sim.specs import Checkpointing

ROOT = Path(__file__).parents[2]
BASE = """
[pool]
slots = 4
[owners]
a = 2
b = 2
[[submit]]
owner = "a"
count = 2
runtime = 100
"""


def write(tmp_path, text):
    path = tmp_path / "scn.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["paper-job-size", "paper-general", "machines"])
def test_bundled_scenarios_load(name):
    scenario = load_scenario(ROOT / "config" / "scenarios" / f"{name}.toml")
    assert scenario.policies == ("none", "fairshare", "osep", "osep-ckpt")
    assert scenario.pool.checkpointing is Checkpointing.ON_VACATE


def test_paper_general_matches_the_paper():
    s = load_scenario(ROOT / "config" / "scenarios" / "paper-general.toml")
    assert s.capacity == 20
    assert s.policy.shares.resolve(20) == {"owner1": 6, "owner2": 8, "owner3": 3, "owner4": 3}
    assert len(s.jobs) == 60
    assert {j.submit for j in s.jobs if j.owner == "owner4"} == {210}
    assert min(j.runtime for j in s.jobs) == 600 and max(j.runtime for j in s.jobs) == 3600


def test_minimal_scenario_defaults(tmp_path):
    s = load_scenario(write(tmp_path, BASE))
    assert [str(j.id) for j in s.jobs] == ["a#0.0", "a#0.1"]
    assert s.pool.negotiation_interval == 60 and s.pool.vacate_delay == 10
    assert s.policies == ("none", "fairshare", "osep", "osep-ckpt")


def test_partitionable_machines(tmp_path):
    s = load_scenario(ROOT / "config" / "scenarios" / "machines.toml")
    assert [(x.cpus, x.memory, x.gpus, x.partitionable) for x in s.slots] == [(5, 5120, 1, True)] * 4
    assert s.capacity == 20  # one slot per core
    assert {(j.cpus, j.memory) for j in s.jobs if j.owner == "owner2"} == {(4, 2048)}
    bad = BASE.replace("slots = 4", "") + "[[pool.slots]]\ncpus = 4\npartitionable = \"yes\"\n"
    with pytest.raises(ConfigError) as info:
        load_scenario(write(tmp_path, bad))
    assert info.value.key == "pool.slots[0].partitionable"


def test_slot_groups(tmp_path):
    text = (BASE.replace("slots = 4", "")
            + "[[pool.slots]]\ncount = 2\ncpus = 4\nmemory = 8192\n[[pool.slots]]\ncount = 1\n")
    s = load_scenario(write(tmp_path, text))
    assert [(x.cpus, x.memory) for x in s.slots] == [(4, 8192), (4, 8192), (1, None)]


@pytest.mark.parametrize(
    "change, key, reason",
    [
        (lambda t: t.replace("a = 2", "a = -2"), "owners.a", "negative"),
        (lambda t: t.replace("b = 2", 'b = "50%"'), "owners.b", "different kinds"),
        (lambda t: "[scenario]\npolicies = [\"osep\", \"fairshare\", \"osepp\"]\n" + t,
         "scenario.policies", "did you mean 'osep'"),
        (lambda t: "[scenario]\npolicy = [\"osep\"]\n" + t, "scenario.policy", "unknown key"),
        (lambda t: t.replace("runtime = 100", "runtime = -5"), "submit[0].runtime", "greater than 0"),
        (lambda t: t.replace("runtime = 100", "runtimes = [1, 2, 3]"), "submit[0].count", "runtimes has 3"),
        (lambda t: t.replace("runtime = 100", "runtime = 100\nruntimes = [1, 2]"), "submit[0].runtime", "not both"),
        (lambda t: t.replace("runtime = 100", "runtimes = [1, 0]"), "submit[0].runtimes[1]", "positive"),
        (lambda t: t.replace("count = 2", "cuont = 2"), "submit[0].cuont", "did you mean 'count'"),
        (lambda t: t.replace("slots = 4", "slots = 0"), "pool.slots", "greater than 0"),
        (lambda t: t.replace("slots = 4", "negotiation_interval = 60"), "pool.slots", "missing"),
        (lambda t: t.split("[[submit]]")[0], "submit", "no [[submit]]"),
        (lambda t: t + "[checkpoint]\nmode = \"periodic\"\n", "checkpoint.interval", "needs an interval"),
        (lambda t: t + "[checkpoint]\nmode = \"always\"\n", "checkpoint.mode", "expected one of"),
        (lambda t: t + "[fairshare]\nusage = { a = -1 }\n", "fairshare.usage.a", "at least 0"),
        (lambda t: t + "[policy]\ntarget = \"fair\"\n", "policy.target", "expected one of"),
    ],
)
def test_bad_scenario(tmp_path, change, key, reason):
    path = write(tmp_path, change(BASE))
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert info.value.path == str(path)
    assert info.value.key == key
    assert reason in info.value.reason

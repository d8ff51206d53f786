"""Policy files: good ones load into frozen settings, bad ones fail naming the file, key and reason."""

from __future__ import annotations

import dataclasses

import pytest

from osep import bounds as B
from osep.config.policy import load_policy
from osep.core.plan import Target, VictimOrder
from osep.core.resources import Unit
from osep.errors import ConfigError

GOOD = """
[policy]
target = "feasible"
victim_order = "lost-work"
max_vacates = 3
interval = 120

[owners]
atlas = 10
cms = { share = 6 }
"""


def write(tmp_path, text, name="policy.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_policy_loads(tmp_path):
    loaded = load_policy(write(tmp_path, GOOD))
    settings = loaded.settings
    assert settings.target is Target.FEASIBLE
    assert settings.victim_order is VictimOrder.LOST_WORK
    assert settings.max_vacates == 3 and loaded.interval == 120
    assert dict(settings.shares.shares) == {"atlas": 10, "cms": 6}
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.interval = 1  # type: ignore[misc]


def test_defaults_follow_the_paper(tmp_path):
    settings = load_policy(write(tmp_path, '[owners]\na = "60%"\nb = "40%"\n')).settings
    assert settings.target is Target.OWNER
    assert settings.victim_order is VictimOrder.WALLCLOCK
    assert settings.max_vacates is None
    assert settings.vacate_budget(10) == 6  # the largest share


def test_shares_in_resources_load_with_their_units(tmp_path):
    text = """
[policy]
unit = "dominant"

[owners]
physics = { cpus = 400, memory = "1.5 TiB", gpus = 8, disk = "20 TiB" }
chemistry = { cpus = 100, memory = 262144, disk = 1048576 }
biology = { gpus = 2, memory = "512G", disk = "512 MiB" }
"""
    settings = load_policy(write(tmp_path, text)).settings
    assert settings.unit is Unit.DOMINANT
    # Memory in MiB and disk in KiB, as HTCondor counts them.
    assert settings.shares.shares == {
        "physics": {"cpus": 400, "memory": 1.5 * 1024 * 1024, "gpus": 8, "disk": 20 * 1024**3},
        "chemistry": {"cpus": 100, "memory": 262144, "disk": 1048576},
        "biology": {"gpus": 2, "memory": 512 * 1024, "disk": 512 * 1024},
    }
    cores = load_policy(write(tmp_path, '[policy]\nunit = "cpus"\n[owners]\na = 40\nb = { cpus = 8 }\n'))
    assert cores.settings.shares.shares == {"a": {"cpus": 40}, "b": {"cpus": 8}}
    memory = load_policy(write(tmp_path, '[policy]\nunit = "memory"\n[owners]\na = "25%"\nb = "64 GiB"\n'
                               .replace('"64 GiB"', '"75%"')))
    assert memory.settings.shares.percent and memory.settings.shares.shares["a"] == {"memory": 25}


def test_bundled_policy_example_is_valid():
    from pathlib import Path

    settings = load_policy(Path(__file__).parents[2] / "osep" / "data" / "policy.toml").settings
    assert settings.shares.shares


@pytest.mark.parametrize(
    "text, key, reason",
    [
        ('[owners]\na = -3\n', "owners.a", "negative"),
        ('[owners]\na = "-5%"\n', "owners.a", "negative"),
        ('[owners]\na = 5\nb = "50%"\n', "owners.b", "different kinds"),
        ('[owners]\na = "70%"\nb = "40%"\n', "owners", "more than 100%"),
        ('[owners]\na = "lots"\n', "owners.a", "a share is a number"),
        ('[owners]\na = "x%"\n', "owners.a", "not a percentage"),
        ('[owners]\na = true\n', "owners.a", "a share is a number"),
        ('[owners]\na = { shar = 3 }\n', "owners.a.shar", "unknown key"),
        ('[owners]\na = {}\n', "owners.a", "names at least one of: slots"),
        # Resources: what the unit cannot weigh, mixtures, sizes.
        ('[policy]\nunit = "cpus"\n[owners]\na = { cpus = 4, gpus = 1 }\n', "owners.a.gpus",
         "a share in gpus would be ignored"),
        ('[owners]\na = { cpus = 4 }\n', "owners.a.cpus", "policy.unit is 'slots'"),
        ('[policy]\nunit = "dominant"\n[owners]\na = 4\n', "owners.a", "names the resources"),
        ('[policy]\nunit = "dominant"\n[owners]\na = { share = 4 }\n', "owners.a.share",
         "names the resources"),
        ('[policy]\nunit = "dominant"\n[owners]\na = { slots = 4 }\n', "owners.a.slots",
         "names the resources"),
        ('[policy]\nunit = "dominant"\ntarget = "feasible"\n[owners]\na = { cpus = 4 }\n',
         "policy.target", "only \"owner\" targets"),
        ('[policy]\nunit = "memory"\n[owners]\na = "1.5 TB of it"\n', "owners.a", "not a memory size"),
        ('[policy]\nunit = "gpus"\n[owners]\na = "2 GiB"\n', "owners.a", "number of GPUs"),
        ('[policy]\nunit = "disk"\n[owners]\na = "lots"\n', "owners.a", "not a disk size"),
        ('[policy]\nunit = "disk"\n[owners]\na = { memory = 4 }\n', "owners.a.memory",
         "a share in memory would be ignored"),
        ('[policy]\nunit = "dominant"\n[owners]\na = { cpus = "60%" }\nb = { cpus = "50%" }\n',
         "owners", "percentages of cpus add up to 110%"),
        ('[policy]\nunit = "dominant"\n[owners]\na = { cpus = "60%", gpus = 2 }\n', "owners.a.cpus",
         "different kinds"),
        ('[policy]\nunit = "dominant"\n[owners]\na = { cpus = 4, cpu = 2 }\n', "owners.a.cpu",
         "unknown key"),
        ('[owners]\na = { share = 3, weight = 2 }\n', "owners.a.weight", "unknown key"),
        ('[policy]\ntarget = "ownr"\n[owners]\na = 1\n', "policy.target", "expected one of owner, feasible"),
        ('[policy]\nvictim_order = "random"\n[owners]\na = 1\n', "policy.victim_order", "wallclock, lost-work"),
        ('[policy]\nmax_vacates = 2.5\n[owners]\na = 1\n', "policy.max_vacates", "whole number"),
        ('[policy]\nmax_vacates = -1\n[owners]\na = 1\n', "policy.max_vacates", "at least 0"),
        ('[policy]\ninterval = 0\n[owners]\na = 1\n', "policy.interval", "at least 1"),
        ('[policy]\ninterval = "5m"\n[owners]\na = 1\n', "policy.interval", "expected a number"),
        ('[policy]\nintervall = 60\n[owners]\na = 1\n', "policy.intervall", "did you mean 'interval'"),
        ('[policy]\nunit = "cores"\n[owners]\na = 1\n', "policy.unit",
         "one of slots, cpus, memory, gpus, disk, dominant"),
        ('[owner]\na = 1\n', "owners", "missing"),
        ('[owners]\na = 1\n[extra]\nx = 1\n', "extra", "unknown key"),
        ('owners = 3\n', "owners", "expected a table"),
        # Bounds, and names and values from the file shown escaped.
        ('[owners]\n"a\\nb\\u001b[31m" = 1\n', 'owners."a\\nb\\x1b[31m"', "must be printable"),
        ('[owners]\n"" = 1\n', 'owners.""', "must not be empty"),
        ('[owners]\n"\\u202eevil" = 1\n', 'owners."\\u202eevil"', "must be printable"),
        (f'[owners]\n{"n" * 256} = 1\n', "owners." + "n" * 256, "at most 255 characters"),
        ('[owners]\na = 10000001\n', "owners.a", "at most 10,000,000 (slots)"),
        ('[owners]\na = 1e300\n', "owners.a", "at most 10,000,000"),
        ('[owners]\na = 0x' + "f" * 2000 + '\n', "owners.a", "at most 10,000,000"),
        ('[owners]\na = "101%"\n', "owners.a", "at most 100%"),
        ('[owners]\na = "1e300%"\n', "owners.a", "at most 100%"),
        ('[owners]\na = "' + "1" * 100 + '%"\n', "owners.a", "at most 64 characters"),
        ('[policy]\nunit = "memory"\n[owners]\na = "2 EiB"\n', "owners.a", "not a memory size"),
        ('[policy]\nunit = "memory"\n[owners]\na = "2000000 TiB"\n', "owners.a", "at most 1,099,511,627,776"),
        ('[policy]\nunit = "gpus"\n[owners]\na = 1000001\n', "owners.a", "at most 1,000,000 (gpus)"),
        ('[policy]\nmax_vacates = 1000001\n[owners]\na = 1\n', "policy.max_vacates", "at most 1,000,000"),
        ('[policy]\ninterval = 1e-300\n[owners]\na = 1\n', "policy.interval", "at least 1"),
        ('[policy]\ninterval = 86401\n[owners]\na = 1\n', "policy.interval", "at most 86,400"),
        ('[policy]\ninterval = nan\n[owners]\na = 1\n', "policy.interval", "finite"),
        ('[policy]\nexcess = "slurrm"\n[owners]\na = 1\n', "policy.excess", "expected one of"),
        ('[policy]\nmin_run_time = -1\n[owners]\na = 1\n', "policy.min_run_time", "at least 0"),
        ('[policy]\nmin_run_time = 100000001\n[owners]\na = 1\n', "policy.min_run_time",
         "at most 100,000,000"),
        ('[policy]\nmin_run_time = "10m"\n[owners]\na = 1\n', "policy.min_run_time", "expected a number"),
        ('[policy]\nmin_run_time = true\n[owners]\na = 1\n', "policy.min_run_time", "expected a number"),
        ('[policy]\nmin_run_time = inf\n[owners]\na = 1\n', "policy.min_run_time", "finite"),
        ('[policy]\nexcess = "slurm"\ntarget = "feasible"\n[owners]\na = 1\n', "policy.excess",
         'needs target = "owner"'),
    ],
)
def test_bad_policy_names_file_key_and_reason(tmp_path, text, key, reason):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_policy(path)
    err = info.value
    assert err.path == str(path)
    assert err.key == key
    assert reason in err.reason
    assert str(path) in str(err) and key in str(err)
    assert "\n" not in str(err) and str(err).isprintable()


def test_too_many_owners(tmp_path):
    text = "[owners]\n" + "".join(f"o{n} = 1\n" for n in range(B.MAX_OWNERS + 1))
    err = _raises(load_policy, write(tmp_path, text))
    assert err.key == "owners" and "at most 10,000 owners" in err.reason


def _raises(load, path):
    with pytest.raises(ConfigError) as info:
        load(path)
    return info.value


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_policy(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_policy(write(tmp_path, "[owners\na = 1\n"))


@pytest.mark.parametrize("given, seconds", [
    ("", 0.0), ("min_run_time = 0", 0.0), ("min_run_time = 600", 600.0), ("min_run_time = 1.5", 1.5),
    ("min_run_time = 100000000", 1e8),
])
def test_min_run_time_is_read_in_seconds(tmp_path, given, seconds):
    loaded = load_policy(write(tmp_path, f"[policy]\n{given}\n[owners]\na = 1\n"))
    assert loaded.min_run_time == seconds and isinstance(loaded.min_run_time, float)


def test_excess_names_the_negotiator_osep_runs_over(tmp_path):
    from osep.sim.specs import Order

    assert load_policy(write(tmp_path, "[owners]\na = 1\n")).excess is Order.FAIRSHARE
    loaded = load_policy(write(tmp_path, '[policy]\nexcess = "grid"\n[owners]\na = 1\n'))
    assert loaded.excess is Order.GRID

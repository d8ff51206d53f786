"""Policy files: good ones load into frozen settings, bad ones fail naming the file, key and reason."""

from __future__ import annotations

import dataclasses

import pytest

from osep.config.policy import load_policy
from osep.core.plan import Target, VictimOrder
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


def test_bundled_policy_example_is_valid():
    from pathlib import Path

    settings = load_policy(Path(__file__).parents[2] / "config" / "policy.toml").settings
    assert settings.shares.shares


@pytest.mark.parametrize(
    "text, key, reason",
    [
        ('[owners]\na = -3\n', "owners.a", "negative"),
        ('[owners]\na = "-5%"\n', "owners.a", "negative"),
        ('[owners]\na = 5\nb = "50%"\n', "owners.b", "different units"),
        ('[owners]\na = "70%"\nb = "40%"\n', "owners", "more than 100%"),
        ('[owners]\na = "lots"\n', "owners.a", "a share is a number"),
        ('[owners]\na = "x%"\n', "owners.a", "not a percentage"),
        ('[owners]\na = true\n', "owners.a", "a share is a number"),
        ('[owners]\na = { shar = 3 }\n', "owners.a.share", "missing"),
        ('[owners]\na = { share = 3, weight = 2 }\n', "owners.a.weight", "unknown key"),
        ('[policy]\ntarget = "ownr"\n[owners]\na = 1\n', "policy.target", "expected one of owner, feasible"),
        ('[policy]\nvictim_order = "random"\n[owners]\na = 1\n', "policy.victim_order", "wallclock, lost-work"),
        ('[policy]\nmax_vacates = 2.5\n[owners]\na = 1\n', "policy.max_vacates", "whole number"),
        ('[policy]\nmax_vacates = -1\n[owners]\na = 1\n', "policy.max_vacates", "at least 0"),
        ('[policy]\ninterval = 0\n[owners]\na = 1\n', "policy.interval", "greater than 0"),
        ('[policy]\ninterval = "5m"\n[owners]\na = 1\n', "policy.interval", "expected a number"),
        ('[policy]\nintervall = 60\n[owners]\na = 1\n', "policy.intervall", "did you mean 'interval'"),
        ('[policy]\nunit = "cores"\n[owners]\na = 1\n', "policy.unit", "only \"slots\""),
        ('[owner]\na = 1\n', "owners", "missing"),
        ('[owners]\na = 1\n[extra]\nx = 1\n', "extra", "unknown key"),
        ('owners = 3\n', "owners", "expected a table"),
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


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_policy(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_policy(write(tmp_path, "[owners\na = 1\n"))

"""Policy files rewritten with new settings: owners, comments and layout kept; layouts that cannot be
rewritten refused, never written wrong."""

from __future__ import annotations

import pytest

from osep.config.policy import load_policy
from osep.config.rewrite import rewrite, write_policy
from osep.errors import ConfigError

VALUES = {"max_vacates": 4, "interval": 120.0, "victim_order": "lost-work", "target": "owner",
          "min_run_time": 600.0, "excess": "fairshare"}
OWNERS = "[owners]\nalice = 2 # the lab\nbob = 2\n"


@pytest.mark.parametrize("text", [
    "[policy]\ninterval = 300\nmax_vacates = 1\n\n" + OWNERS,
    "# head\n[policy] # the settings\n  interval=300\n# max_vacates = 10\nunit = \"slots\"\n" + OWNERS,
    OWNERS,  # no [policy] table: one is added
    OWNERS + "[policy]\ntarget = \"feasible\"\n",  # after the owners
])
def test_the_settings_are_set_and_everything_else_kept(tmp_path, text):
    source = tmp_path / "policy.toml"
    source.write_text(text)
    target = tmp_path / "tuned.toml"
    write_policy(source, target, VALUES, "tuned")
    made = target.read_text()
    loaded = load_policy(target)
    assert (loaded.settings.max_vacates, loaded.interval, loaded.settings.victim_order.value,
            loaded.min_run_time) == (4, 120.0, "lost-work", 600.0)
    assert "alice = 2 # the lab" in made and "# tuned" in made
    for line in text.splitlines():
        if not line.strip().startswith(("interval", "max_vacates", "target")):
            assert line in made.splitlines()


def test_auto_p_leaves_the_key_out(tmp_path):
    source = tmp_path / "policy.toml"
    source.write_text("[policy]\nmax_vacates = 3\n" + OWNERS)
    made = rewrite(source, {**VALUES, "max_vacates": None}, "tuned")
    assert "max_vacates" not in made


@pytest.mark.parametrize("text", [
    "policy = { interval = 300 }\n" + OWNERS,
    "policy.interval = 300\n" + OWNERS,
])
def test_a_layout_that_cannot_be_rewritten_is_refused(tmp_path, text):
    source = tmp_path / "policy.toml"
    source.write_text(text)
    with pytest.raises(ConfigError, match="cannot rewrite"):
        write_policy(source, tmp_path / "out.toml", VALUES, "tuned")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.toml"]


def test_a_file_that_is_no_policy_file_is_the_readers_one_line_error(tmp_path):
    source = tmp_path / "policy.toml"
    source.write_bytes(b"\xff\xfe[policy]")
    with pytest.raises(ConfigError, match="not UTF-8"):
        rewrite(source, VALUES, "tuned")


def test_a_target_in_a_folder_that_cannot_be_written_is_one_line(tmp_path):
    source = tmp_path / "policy.toml"
    source.write_text(OWNERS)
    with pytest.raises(ConfigError, match="cannot write it"):
        write_policy(source, tmp_path / "none" / "out.toml", VALUES, "tuned")

"""Hostile OSEP_* knob values, as HTCondor's configuration gives them to ``osep run`` (set here through
``_CONDOR_*`` environment variables and read back through the bindings), and OSEP_LOG_LEVEL from the
environment: every bad value is one line naming the knob, and nothing reaches a pool."""

from __future__ import annotations

import signal

import pytest

from builders import cli_runner
from osep.bounds import MAX_INTERVAL, MAX_VACATES, MIN_INTERVAL
from osep.config.knobs import KNOB_SOURCE, KNOBS, Overrides, load_run_settings, parse_knobs
from osep.config.toml import escape
from osep.errors import ConfigError
from osep.ui.cli import cli

htcondor2 = pytest.importorskip("htcondor2")

HOSTILE = [
    "", " ", "nan", "-nan", "inf", "-inf", "infinity", "1e-300", "1e300", "1e999", "-1", "0", "-0", "0.5",
    "9" * 5000, "0x10", "1_000", "\u0661\u0662", "5\n6", "\x1b[31m", "\x1b]0;x\x07", "a" * 100_000,
    "\u202eevil", "'\"", "true\x07", "/dev/zero", "/", "yes please", "1e", ".", "+", "2.5", "3600",
    "86401", "1000001", "TRUE", "debug\n", "x\ry", "\u2028", "\x9b2J",
]


@pytest.fixture
def condor(monkeypatch):
    """Set knobs the way an administrator's configuration would, for the bindings to read."""

    def configure(**knobs: str) -> None:
        for name, value in knobs.items():
            monkeypatch.setenv(f"_CONDOR_{name}", value)
        htcondor2.reload_config()

    yield configure
    monkeypatch.undo()
    htcondor2.reload_config()


def _guarded(args):
    def alarm(signum, frame):
        raise TimeoutError("no answer in 30 s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(30)
    try:
        return cli_runner().invoke(cli, args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("knob", sorted(KNOBS))
def test_hostile_knob_values_are_one_line_naming_the_knob(knob, condor, tmp_path):
    bad_policy = tmp_path / "policy.toml"
    bad_policy.write_text("[owners]\na = -1\n")  # so that a run that gets past its knobs stops here
    from osep.htcondor import reach

    rejected = 0
    for value in HOSTILE:
        condor(**{"OSEP_POLICY_FILE": str(bad_policy), knob: value})
        given = reach.knobs(KNOBS)  # what the bindings make of it
        result = _guarded(["run", "--once"])
        assert result.exception is None or isinstance(result.exception, SystemExit), (value, result.exception)
        assert result.exit_code == 2 and not result.stdout, (value, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].isprintable(), (value, result.stderr)
        with pytest.raises(ConfigError) as info:  # what the same knobs give without the command line
            load_run_settings(given, Overrides())
        assert lines[0] == f"osep: error: {escape(str(info.value))}"
        if info.value.path == KNOB_SOURCE:
            rejected += 1
            assert info.value.key == knob, (value, lines[0])
        else:  # a value the knob takes: the run went on to the policy file, and stopped there
            assert info.value.path == given["OSEP_POLICY_FILE"].strip(), (value, lines[0])
    assert rejected > 0


def test_log_level_from_the_environment_is_one_line(monkeypatch, tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text("[owners]\na = 1\n")
    for value in ["loud", "debug\n\x1b[31m", "x" * 10_000, "DEBUG ", "\u202e"]:
        monkeypatch.setenv("OSEP_LOG_LEVEL", value)
        result = _guarded(["validate", str(policy)])
        lines = result.stderr.splitlines()
        if value.strip().lower() == "debug":
            assert result.exit_code == 0, result.stderr
            continue
        assert result.exit_code == 2 and len(lines) == 1 and lines[0].isprintable(), result.stderr
        assert lines[0].startswith("osep: error: environment: OSEP_LOG_LEVEL: expected one of"), lines[0]
    monkeypatch.setenv("OSEP_LOG_LEVEL", "")  # empty: not set
    assert _guarded(["validate", str(policy)]).exit_code == 0


@pytest.mark.parametrize("knobs, knob, reason", [
    ({"OSEP_INTERVAL": "1e-300"}, "OSEP_INTERVAL", f"at least {MIN_INTERVAL:g}"),
    ({"OSEP_INTERVAL": "86401"}, "OSEP_INTERVAL", f"at most {MAX_INTERVAL:,.0f}"),
    ({"OSEP_INTERVAL": "nan"}, "OSEP_INTERVAL", "number of seconds"),
    ({"OSEP_INTERVAL": "1e999"}, "OSEP_INTERVAL", "finite"),
    ({"OSEP_INTERVAL": "\u0661\u0662"}, "OSEP_INTERVAL", "number of seconds"),
    ({"OSEP_MAX_VACATES": str(MAX_VACATES + 1)}, "OSEP_MAX_VACATES", "at most"),
    ({"OSEP_MAX_VACATES": "9" * 5000}, "OSEP_MAX_VACATES", "whole number"),
    ({"OSEP_MAX_VACATES": "1_000"}, "OSEP_MAX_VACATES", "whole number"),
    ({"OSEP_MAX_VACATES_PER_JOB_PER_HOUR": "3601"}, "OSEP_MAX_VACATES_PER_JOB_PER_HOUR", "at most 3,600"),
    ({"OSEP_MIN_RUN_TIME": "-1"}, "OSEP_MIN_RUN_TIME", "at least 0"),
    ({"OSEP_RESERVATION_TIMEOUT": "0.001"}, "OSEP_RESERVATION_TIMEOUT", "at least 1"),
    ({"OSEP_POLICY_FILE": "a\x00b"}, "OSEP_POLICY_FILE", "printable"),
    ({"OSEP_STATE_FILE": "state\nfile"}, "OSEP_STATE_FILE", "printable"),
    ({"OSEP_LOG": "x" * 5000}, "OSEP_LOG", "at most 4,096 characters"),
    ({"OSEP_POOL": "cm\x1b[31m"}, "OSEP_POOL", "printable"),
    ({"OSEP_NAME": "n" * 300}, "OSEP_NAME", "at most 255 characters"),
    ({"OSEP_DRY_RUN": "x" * 10_000}, "OSEP_DRY_RUN", "true or false"),
    ({"OSEP_METRICS_PORT": "65536"}, "OSEP_METRICS_PORT", "at most 65,535"),
    ({"OSEP_METRICS_PORT": "-1"}, "OSEP_METRICS_PORT", "at least 0"),
    ({"OSEP_METRICS_PORT": "9464.0"}, "OSEP_METRICS_PORT", "whole number"),
    ({"OSEP_METRICS_PORT": "http"}, "OSEP_METRICS_PORT", "whole number"),
    ({"OSEP_METRICS_ADDRESS": "0.0.0.0:9464"}, "OSEP_METRICS_ADDRESS", "an IP address"),
    ({"OSEP_METRICS_ADDRESS": "http://cm"}, "OSEP_METRICS_ADDRESS", "an IP address"),
    ({"OSEP_METRICS_ADDRESS": "cm example"}, "OSEP_METRICS_ADDRESS", "or a host name"),
    ({"OSEP_METRICS_ADDRESS": "cm\x1b[31m"}, "OSEP_METRICS_ADDRESS", "or a host name"),
    ({"OSEP_METRICS_ADDRESS": "-cm"}, "OSEP_METRICS_ADDRESS", "or a host name"),
    ({"OSEP_METRICS_ADDRESS": "c" * 256}, "OSEP_METRICS_ADDRESS", "or a host name"),
])
def test_knob_bounds(knobs, knob, reason):
    with pytest.raises(ConfigError) as info:
        parse_knobs(knobs)
    assert info.value.key == knob and reason in info.value.reason
    text = str(info.value)
    assert "\n" not in text and text.isprintable() and len(text) < 300


@pytest.mark.parametrize("knobs, overrides, port, address", [
    ({}, Overrides(), 0, "127.0.0.1"),  # no endpoint unless a port is given, and then a local one
    ({"OSEP_METRICS_PORT": "9464"}, Overrides(), 9464, "127.0.0.1"),
    ({"OSEP_METRICS_PORT": "0"}, Overrides(), 0, "127.0.0.1"),
    ({"OSEP_METRICS_PORT": "65535", "OSEP_METRICS_ADDRESS": "0.0.0.0"}, Overrides(), 65535, "0.0.0.0"),
    ({"OSEP_METRICS_ADDRESS": "::"}, Overrides(), 0, "::"),
    ({"OSEP_METRICS_ADDRESS": "0:0::1"}, Overrides(), 0, "::1"),  # an IP address as Python writes it
    ({"OSEP_METRICS_ADDRESS": "cm.example.org"}, Overrides(), 0, "cm.example.org"),
    ({"OSEP_METRICS_ADDRESS": " "}, Overrides(), 0, "127.0.0.1"),  # set to nothing: the default
    ({"OSEP_METRICS_PORT": "9464", "OSEP_METRICS_ADDRESS": "0.0.0.0"},
     Overrides(metrics_port=9100, metrics_address="127.0.0.1"), 9100, "127.0.0.1"),  # options win
    ({"OSEP_METRICS_PORT": "9464"}, Overrides(metrics_port=0), 0, "127.0.0.1"),  # --metrics-port 0: off
])
def test_metrics_knobs_and_options(knobs, overrides, port, address):
    settings = parse_knobs(knobs, overrides)
    assert (settings.metrics_port, settings.metrics_address) == (port, address)


@pytest.mark.parametrize("args, names", [
    (["--metrics-port", "65536"], "--metrics-port"),
    (["--metrics-port", "-1"], "--metrics-port"),
    (["--metrics-port", "9464.5"], "--metrics-port"),
    (["--metrics-address", "0.0.0.0:9464"], "--metrics-address: expected an IP address"),
    (["--metrics-address", "cm\nx"], "--metrics-address: expected an IP address"),
    (["--metrics-address", "\x1b[31m"], "or a host name, got '\\x1b[31m'"),
    (["--once", "--metrics-port", "9464"], "--metrics-port does not go with --once"),
])
def test_bad_metrics_options_are_one_line_before_the_pool_is_asked(args, names):
    result = _guarded(["run", *args])
    lines = result.stderr.splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].isprintable(), result.stderr
    assert lines[0].startswith("osep: error: run: ") and names in lines[0], lines[0]

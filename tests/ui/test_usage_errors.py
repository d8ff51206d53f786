"""Every usage error of every command is one line: ``osep: error: ...``, exit status 2; and the
table of what users get wrong, command by command, each with its status from :mod:`osep.ui.exits`.

The cases are generated, with a fixed seed, from the commands' own click definitions: for each
option and argument of each command (and of the ``osep`` group), values its type refuses (choices
not in the list, numbers out of range, not numbers or nan, a directory where a file is wanted),
a missing value, unknown options and commands, extra arguments, hostile text (newlines, terminal
escapes, very long strings), and the option combinations the commands refuse themselves. They run
in-process through click's runner, which goes through the group's ``main`` as the ``osep`` command
does; a sample of them, and the paths that are missing or FIFOs (which must not hang), run as real
``python -m osep`` processes, each within 20 s and 1 GiB.
"""

from __future__ import annotations

import importlib.metadata
import os
import random
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

import osep
from builders import cli_runner
from osep.ui import exits
from osep.ui.cli import cli
from osep.ui.usage import SHOWN, usage_line

ROOT = Path(__file__).parents[2]
SEED = 20261128
TIMEOUT = 20.0  # seconds a child may take
MAX_RSS_KIB = 1024 * 1024  # 1 GiB, as ru_maxrss counts on Linux
HOSTILE = ["a\nb", "\x1b[31mred\x1b[0m", "x\r\ny", "tab\there", "\x07", "\x9b2J", "line\u2028sep",
           "\u202eevil", "é" * 3, "z" * 5000, "'\"\\", "-", "--", ""]
# Placeholders for the files a case needs, made once per module (a FIFO nobody writes to is one).
DIR, FIFO, MISSING, FILE = "{dir}", "{fifo}", "{missing}", "{file}"


@dataclass(frozen=True)
class Case:
    """A command line, what its one line must start with, and what else it must name."""

    args: tuple[str, ...]
    starts: str = "osep: error: "
    names: tuple[str, ...] = ()
    usage: bool = True  # refused by click (or as a usage error): exit 2 and a "see --help"
    choices: tuple[str, ...] = ()  # a bad choice: the line lists them all

    def __str__(self) -> str:
        return " ".join(a[:30] for a in self.args)[:120]


def _long(option: click.Option) -> str:
    longs = [o for o in option.opts if o.startswith("--")]
    return longs[0] if longs else option.opts[0]


def _given(option: click.Option, value: str) -> tuple[str, ...]:
    """The option with ``value``: ``--name=value`` (so that a value starting with "-" is still the
    option's), ``-x value`` for a short-only option."""
    name = _long(option)
    return (f"{name}={value}",) if name.startswith("--") else (name, value)


def _bad_values(param: click.Parameter, rng: random.Random) -> list[str]:
    """Values the parameter's type refuses, a few of each kind, drawn with ``rng``."""
    kind = param.type
    hostile = rng.sample(HOSTILE[:-3], 3)
    if isinstance(kind, click.Choice):
        choices = [str(c) for c in kind.choices]
        return [choices[0] + "x", choices[-1].upper() + "Z", " " + choices[0], *hostile]
    if isinstance(kind, click.IntRange):
        out = ["1.5", "abc", "nan", "9" * 400, *hostile]
        if kind.max is not None:
            out.append(str(kind.max + 1 + rng.randrange(1000)))
        if kind.min is not None:
            out.append(str(kind.min - 1 - rng.randrange(1000)))
        return out
    if isinstance(kind, click.FloatRange):
        out = ["nan", "inf", "-inf", "1e400", "abc", "1,5", *hostile]
        if kind.max is not None:
            out.append(repr(kind.max * (1 + rng.random()) + 1))
        if kind.min is not None:
            out.append(repr(kind.min - 1 - rng.random() * 100))
        return out
    if isinstance(kind, click.Path) and not kind.dir_okay:
        return [DIR]
    return []


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and p.expose_value]


def generate() -> list[Case]:
    """Every kind of usage error for every command, deterministic for the seed."""
    rng = random.Random(SEED)
    cases: list[Case] = []
    commands: list[tuple[tuple[str, ...], click.Command]] = [((), cli)]
    commands += [((name,), command) for name, command in sorted(cli.commands.items())]
    for path, command in commands:
        starts = f"osep: error: {path[0]}: " if path else "osep: error: "
        for option in _options(command):
            opts = tuple(option.opts)
            choices = tuple(f"'{c}'" for c in getattr(option.type, "choices", ()))
            for value in _bad_values(option, rng):
                cases.append(Case((*path, *_given(option, value)), starts, opts, choices=choices))
            if option.is_flag:
                if option.opts[0].startswith("--"):
                    cases.append(Case((*path, f"{option.opts[0]}={rng.choice(HOSTILE[:4])}"), starts))
            else:
                cases.append(Case((*path, option.opts[rng.randrange(len(option.opts))]), starts, opts))
            near = _long(option)[:-1]  # a typo: one letter short, or a dash short
            if near not in (o for p in command.params for o in getattr(p, "opts", ())):
                cases.append(Case((*path, near), starts))
        for argument in (p for p in command.params if isinstance(p, click.Argument)):
            for value in _bad_values(argument, rng):
                cases.append(Case((*path, value), starts))
            if argument.required:
                cases.append(Case(path, starts, (argument.human_readable_name,)))
        for text in HOSTILE[:10]:
            cases.append(Case((*path, f"--{text}"), starts))
            cases.append(Case((*path, f"-{text[:1] or 'Z'}Q"), starts))
        if path and all(p.nargs != -1 for p in command.params if isinstance(p, click.Argument)):
            arguments = sum(1 for p in command.params if isinstance(p, click.Argument))
            extra = [f"extra{n}" for n in range(arguments)] + [rng.choice(HOSTILE[:4])]
            cases.append(Case((*path, *extra), starts, ("unexpected extra",)))
    for text in [*HOSTILE[:10], "simulat", "valid", "Run", "help"]:
        cases.append(Case((text,), "osep: error: no such command "))
    cases += _refused_combinations()
    return cases


def _refused_combinations() -> list[Case]:
    """The option combinations the commands refuse themselves (click.UsageError in osep/ui)."""
    scenario = str(ROOT / "osep" / "data" / "scenarios" / "paper-job-size.toml")
    shares = str(ROOT / "osep" / "data" / "slurm-classic-example.toml")
    trace = str(ROOT / "osep" / "data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz")
    sim = "osep: error: simulate: "
    cases = [
        Case(("simulate",), sim, ("give a SCENARIO",)),
        Case(("simulate", scenario, "--trace", trace), sim, ("not both",)),
        Case(("simulate", "--trace", trace, "--until-second", "50", "--days", "1"), sim, ("--until-second or --days",)),
        Case(("simulate", "--trace", trace, "--from-second", "50", "--until-second", "40"), sim, ("must be after",)),
        Case(("simulate", "--trace", trace, "--least", "0.5", "--policy-file", shares), sim, ("--least",)),
        Case(("simulate", scenario, "--plot", "x.gif"), sim, ("--plot", ".png or .svg")),
        Case(("simulate", scenario, "--plot", "/no/such/dir/\x1b[31m\n.png"), sim, ("no directory",)),
        Case(("shares",), "osep: error: shares: ", ("give a FILE",)),
        Case(("shares", "--from-pool", shares), "osep: error: shares: ", ("do not go together",)),
        Case(("shares", "--pool", "cm\nx", shares), "osep: error: shares: ", ("--pool goes with --from-pool",)),
        Case(("report", "--since", "x\ny"), "osep: error: report: ", ("go with --history",)),
        Case(("report", "--history", "--tree"), "osep: error: report: ", ("do not go with --history",)),
        Case(("run", "--once", "--metrics-port", "9464"), "osep: error: run: ", ("does not go with --once",)),
        Case(("run", "--metrics-address", "a\nb"), "osep: error: run: ", ("--metrics-address",)),
        Case(("--log-file", DIR, "validate", scenario), "osep: error: --log-file: "),
        Case(("--log-file", FIFO, "validate", scenario), "osep: error: --log-file: ", ("nobody reads",)),
        Case(("--log-level", "info"), "osep: error: missing command"),
    ]
    for option in ("--cores", "--owners", "--from-second", "--horizon", "--limit"):
        value = "group" if option == "--owners" else "4"
        cases.append(Case(("simulate", scenario, option, value), sim, (f"{option} goes with --trace",)))
    return cases


# Paths an option or argument takes that click does not check (missing, a FIFO): the command's own
# reading refuses them, in one line, and must not wait on a FIFO for ever. These run as children.
def generate_paths() -> list[Case]:
    cases = []
    for name, command in sorted(cli.commands.items()):
        if name == "doctor":
            continue  # a path it cannot read is one of its failed checks (tests/ui/test_doctor_cli.py)
        for param in command.params:
            if not isinstance(param.type, click.Path) or param.name in ("plot", "state_file", "decisions"):
                continue  # a plot is written, a state file may be missing, decisions need --history
            for value in (MISSING, FIFO):
                if isinstance(param, click.Argument):
                    args = (name, value, *(("--policy-file", FILE) if name == "replay" else ()))
                elif name == "replay":
                    args = (name, FILE, *_given(param, value)) if param.name != "policy_file" else (
                        name, FILE, "--policy-file", value)
                elif name == "simulate" and param.name == "policy_file":
                    args = (name, "--trace", FILE, "--policy-file", value)
                else:
                    args = (name, *_given(param, value))
                cases.append(Case(args, usage=False))
    return cases


CASES = generate()
PATHS = generate_paths()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("usage")
    fifo = folder / "fifo.swf"
    os.mkfifo(fifo)
    plain = folder / "file.log"
    plain.write_text("not a log\n")
    return {DIR: str(folder), FIFO: str(fifo), MISSING: str(folder / "missing.toml"), FILE: str(plain)}


def _args(case: Case, files: dict[str, str]) -> list[str]:
    out = []
    for arg in case.args:
        text = arg
        for key, value in files.items():
            text = text.replace(key, value)
        out.append(text)
    return out


def check(case: Case, status: int, stdout: str, stderr: str) -> None:
    """One line on stderr, osep's form, printable, naming what the case says; status 2."""
    assert status == 2, (case.args, status, stderr)
    assert stderr.endswith("\n") and stderr.count("\n") == 1, (case.args, stderr)
    line = stderr[:-1]
    assert line.startswith(case.starts), (case.args, line)
    assert all(char.isprintable() for char in line), (case.args, line)
    assert "Traceback" not in line and not stdout, (case.args, stdout)
    if case.usage:
        assert line.endswith("--help')"), line
        assert any(name in line for name in case.names) if case.names else True, (case.names, line)
        assert all(choice in line for choice in case.choices), (case.choices, line)
    assert len(line) < 1000, len(line)  # a long argument is cut short


def test_enough_cases_of_every_kind():
    assert len(CASES) >= 300
    assert {c.args[0] for c in CASES if c.args} >= set(cli.commands)
    assert len(PATHS) >= 10


@pytest.mark.parametrize("case", CASES, ids=str)
def test_usage_error_is_one_line(case, files):
    result = cli_runner().invoke(cli, _args(case, files), env={"OSEP_LOG_LEVEL": None})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    check(case, result.exit_code, result.stdout, result.stderr)


def _child(args: list[str], folder: Path) -> tuple[int, str, str, int, float]:
    """``python -m osep ARGS`` as a child: its status, stdout, stderr, peak memory (KiB) and time;
    killed after TIMEOUT seconds (status -9)."""
    out, err = folder / "out", folder / "err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSEP_")}
    start = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen([sys.executable, "-m", "osep", *args], stdin=subprocess.DEVNULL,
                                 stdout=stdout, stderr=stderr, env=env, cwd=ROOT)
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > TIMEOUT:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.02)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return (child.returncode, out.read_text(errors="replace"), err.read_text(errors="replace"),
            usage.ru_maxrss, time.monotonic() - start)


def _sample() -> list[Case]:
    """Every twentieth generated case (at least 30, of every command), and every unchecked path."""
    picked = CASES[::20]
    assert len(picked) >= 30
    return picked + PATHS


def test_as_real_processes(files, tmp_path):
    """The same one line from the real ``osep``, within TIMEOUT seconds and 1 GiB each."""
    cases = _sample()

    def one(index: int) -> tuple[Case, tuple[int, str, str, int, float]]:
        folder = tmp_path / str(index)
        folder.mkdir()
        return cases[index], _child(_args(cases[index], files), folder)

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        results = list(pool.map(one, range(len(cases))))
    assert len(results) >= 30
    for case, (status, stdout, stderr, rss, seconds) in results:
        assert seconds < TIMEOUT and status != -signal.SIGKILL, (case.args, "hung")
        assert rss <= MAX_RSS_KIB, (case.args, rss)
        check(case, status, stdout, stderr)


# The formatter itself: click's exceptions in, osep's line out.
@click.group(name="osep", cls=type(cli))
def toy() -> None:
    pass


@toy.command()
@click.option("--kind", type=click.Choice(["a", "b"]), envvar="TOY_KIND")
@click.option("-n", "--count", type=click.IntRange(0, 9))
@click.argument("name", required=False)
def make(kind: str | None, count: int | None, name: str | None) -> None:
    if name == "both":
        raise click.UsageError("NAME and --kind\ndo not go together.")
    if name == "param":
        raise click.BadParameter("is\nwrong", param_hint=["--kind", "-k"])


@pytest.mark.parametrize("args, env, line", [
    (["make", "--kind", "c"], {}, "make: --kind: 'c' is not one of 'a', 'b'"),
    (["make", "-n", "10"], {}, "make: -n/--count: 10 is not in the range 0<=x<=9"),
    (["make", "-n"], {}, "make: option '-n' requires an argument"),
    (["make", "--kind=a\nb"], {}, "make: --kind: 'a\\nb' is not one of 'a', 'b'"),
    (["make", "--zz\x1b[2J"], {}, "make: --zz\\x1b[2J: no such option"),
    (["make", "--kinds"], {}, "make: --kinds: no such option (did you mean --kind?)"),
    (["make", "x", "y\nz"], {}, "make: got unexpected extra argument (y\\nz)"),
    (["make", "both"], {}, "make: NAME and --kind do not go together"),
    (["make", "param"], {}, "make: --kind/-k: is wrong"),
    (["make"], {"TOY_KIND": "q\n\x1b[1m"}, "make: --kind (from TOY_KIND): 'q\\n\\x1b[1m' is not one of 'a', 'b'"),
    (["mak"], {}, "no such command 'mak' (did you mean make?)"),
    (["m\nk"], {}, "no such command 'm\\nk'"),
    (["make", "--kind=" + "x" * 300], {}, f"make: --kind: '{'x' * SHOWN}... (300 characters)' is not one of 'a', 'b'"),
])
def test_formatter(args, env, line):
    result = cli_runner().invoke(toy, args, env=env)
    assert result.exit_code == 2
    hint = "(see 'osep --help')" if line.startswith("no such command") else "(see 'osep make --help')"
    assert result.stderr == f"osep: error: {line} {hint}\n"


@toy.command()
@click.argument("color", type=click.Choice(["red", "blue"]))
@click.option("--size", type=click.Choice(["s", "m"]), required=True)
def pick(color: str, size: str) -> None:
    pass


@pytest.mark.parametrize("args, line", [
    (["pick"], "pick: COLOR: required, not given (choose from: red, blue) (see 'osep pick --help')"),
    (["pick", "red"], "pick: --size: required, not given (choose from: s, m) (see 'osep pick --help')"),
    (["--", "-x"], "-x: no such option (see 'osep --help')"),
    (["--", "mak"], "no such command 'mak' (did you mean make?) (see 'osep --help')"),
])
def test_what_is_missing_or_unknown(args, line):
    result = cli_runner().invoke(toy, args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"osep: error: {line}\n")


def test_formatter_without_a_context():
    assert usage_line(click.UsageError("Bad\n\tthing.")) == "bad thing"
    assert usage_line(click.ClickException("a\x1b]0;title\x07b")) == "a\\x1b]0;title\\x07b"


def test_help_and_version_are_click_s(tmp_path):
    assert cli_runner().invoke(cli, ["--version"]).stdout == f"osep, version {osep.__version__}\n"
    assert importlib.metadata.version("osep") == osep.__version__  # pyproject reads it from the package
    for args in (["--help"], ["simulate", "--help"], ["simulate", "-h"]):
        result = cli_runner().invoke(cli, args)
        assert result.exit_code == 0 and result.stdout.startswith("Usage: osep")
    assert cli_runner().invoke(cli, ["--", "--help"]).stdout.startswith("Usage: osep")


def test_osep_alone_prints_its_help_as_a_usage_error():
    result = cli_runner().invoke(cli, [])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("Usage: osep [OPTIONS] COMMAND [ARGS]...") and "\nCommands:\n" in result.stderr


def test_a_bad_log_level_in_the_environment_is_one_line():
    result = cli_runner().invoke(cli, ["validate", str(ROOT / "osep" / "data" / "policy.toml")],
                                 env={"OSEP_LOG_LEVEL": "loud\n\x1b[31m"})
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("osep: error: environment: OSEP_LOG_LEVEL: ")
    assert "\x1b" not in result.stderr


def test_ctrl_c_is_one_line_and_status_130(monkeypatch):
    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr("osep.ui.cmd_files.read_toml", interrupted)
    result = cli_runner().invoke(cli, ["validate", "x.toml"])
    assert (result.exit_code, result.stderr) == (130, "osep: error: interrupted\n")


def test_ctrl_c_of_a_real_process(tmp_path):
    """SIGINT to a real osep while a command runs: one line, status 130."""
    # As from a terminal: a background job of a script (scripts/test runs the suites so) starts with
    # SIGINT ignored, and so would this child, where Python then never raises KeyboardInterrupt.
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "import osep.ui.cmd_files as files\n"
            "def wait(path):\n"
            "    print('ready', flush=True)\n"
            "    time.sleep(30)\n"
            "files.read_toml = wait\n"
            "from osep.ui.cli import main\n"
            "sys.argv = ['osep', 'validate', 'x.toml']\n"
            "main()\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=TIMEOUT)
    finally:
        child.kill()
    assert (child.returncode, stderr) == (130, "osep: error: interrupted\n")
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss <= MAX_RSS_KIB


# What users get wrong, command by command: each is one line on stderr with the status the table of
# exit statuses (osep.ui.exits) gives it, and names what is wrong. {policy} is a good policy file,
# {scenario} a good scenario; the placeholders of the generated cases above stand for the rest.
POLICY, SCENARIO = str(ROOT / "osep" / "data" / "policy.toml"), "paper-job-size"
NASA = str(ROOT / "osep" / "data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz")
NASA_RUN = ("--trace", NASA, "--policy-file", POLICY, "--cores-per-machine", "128")  # a window tune can run
USAGE = exits.USAGE.code
MISTAKES = [
    # run
    (("run", "--polcy-file", POLICY), USAGE, "--polcy-file: no such option (did you mean --policy-file?)"),
    (("run", "--once", "-t", "0"), USAGE, "run: -t/--interval: 0.0 is not in the range 1.0<=x<=86400.0"),
    (("run", "--once", "--dry-run", "--policy-file", MISSING), USAGE, "missing.toml"),
    (("run", "--once", "--dry-run", "--policy-file", DIR), USAGE, "is a directory, not a file"),
    (("run", "--once", "--metrics-port", "9464"), USAGE, "does not go with --once"),
    # release
    (("release", "--pool"), USAGE, "release: option '--pool' requires an argument"),
    (("release",), USAGE, "no state file"),
    # report
    (("report", "--sort", "size"), USAGE, "report: --sort: 'size' is not one of 'owner', 'gap', 'running'"),
    (("report", "--policy", POLICY), USAGE,
     "--policy: no such option (did you mean one of --policy-file, --pool?)"),
    (("report", "--policy-file", MISSING), USAGE, "missing.toml"),
    (("report", "--policy-file", DIR), USAGE, "is a directory, not a file"),
    (("report", "--since", "yesterday"), USAGE, "go with --history"),
    (("report", "--history", "--decisions", MISSING), USAGE, "missing.toml"),
    # doctor
    (("doctor", "--format", "csv"), USAGE, "doctor: --format: 'csv' is not one of 'table', 'json'"),
    (("doctor", "--state"), USAGE, "--state: no such option"),
    # shares
    (("shares", "--model", "fifo", str(ROOT / "osep" / "data" / "slurm-classic-example.toml")), USAGE,
     "shares: --model: 'fifo' is not one of"),
    (("shares",), USAGE, "give a FILE, or --from-pool"),
    (("shares", MISSING), USAGE, "missing.toml"),
    (("shares", "--dampening", "0", POLICY), USAGE, "--dampening: 0.0 is not in the range 0<x<=1000000.0"),
    # simulate
    (("simulate", SCENARIO, "--policy", "nonee"), USAGE, "simulate: --policy: 'nonee' is not one of 'greedy', "),
    (("simulate", SCENARIO, "--policy", POLICY), USAGE, "simulate: --policy: "),
    (("simulate",), USAGE, "give a SCENARIO file, or --trace"),
    (("simulate", MISSING), USAGE, "missing.toml"),
    (("simulate", SCENARIO, "-t", "nan"), USAGE, "simulate: -t/--interval: 'nan' is not in the range"),
    (("simulate", SCENARIO, "--cores", "4"), USAGE, "--cores goes with --trace"),
    (("simulate", "--trace", MISSING, "--policy-file", POLICY), USAGE, "missing.toml"),
    (("simulate", "--trace", str(ROOT / "osep" / "data" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"),
      "--cores-per-machine", "128", "--policy-file", DIR), USAGE, "is a directory, not a file"),
    # replay
    (("replay", FILE), USAGE, "replay: --policy-file: required, not given"),
    (("replay", FILE, "--policy", POLICY), USAGE, "--policy: no such option (did you mean --policy-file?)"),
    (("replay", FILE, "--policy-file", POLICY, "--what-if", "fifo"), USAGE,
     "replay: --what-if: 'fifo' is not one of"),
    (("replay", MISSING, "--policy-file", POLICY), USAGE, "missing.toml"),
    (("replay", FILE, "--policy-file", MISSING), USAGE, "missing.toml"),
    (("replay", FILE, "--policy-file", POLICY, "--slots", "0"), USAGE, "replay: --slots: 0 is not in the range"),
    # tune
    (("tune",), USAGE, "tune: --policy-file: required, not given"),
    (("tune", "--policy-file", POLICY), USAGE, "give job event LOGs, or --trace with a workload log"),
    (("tune", FILE, "--trace", NASA, "--policy-file", POLICY), USAGE, "give job event LOGs or --trace, not both"),
    (("tune", FILE, "--policy-file", POLICY, "--cores", "4"), USAGE, "--cores goes with --trace"),
    (("tune", "--trace", NASA, "--policy-file", POLICY, "--slots", "4"), USAGE, "--slots goes with job event LOGs"),
    (("tune", "--trace", MISSING, "--policy-file", POLICY), USAGE, "missing"),
    (("tune", *NASA_RUN, "-p", "1.5"), USAGE, "--max-vacates: '1.5'"),
    (("tune", *NASA_RUN, "--victim-order", "newest"), USAGE, "--victim-order: 'newest' is not one of wallclock"),
    (("tune", *NASA_RUN, "--days", "7", "--tune-days", "7"), USAGE, "nothing is left to check on"),
    (("tune", *NASA_RUN, "--tune-days", "4000"), USAGE, "nothing is left to check on"),
    (("tune", *NASA_RUN, "--write-policy", MISSING + "/x.toml"), USAGE, "--write-policy: no directory"),
    # validate, example, and osep itself
    (("validate",), USAGE, "validate: FILES: required, not given"),
    (("validate", MISSING), USAGE, "missing.toml"),
    (("validate", DIR), USAGE, "is a directory, not a file"),
    (("example", "polcy"), USAGE, "polcy"),
    (("simulat", SCENARIO), USAGE, "no such command 'simulat' (did you mean simulate?)"),
    (("--log-level", "loud", "validate", POLICY), USAGE, "--log-level: 'loud' is not one of"),
]


def test_every_command_has_its_mistakes_in_the_table():
    assert {args[0] for args, _, _ in MISTAKES} >= set(cli.commands)


@pytest.mark.parametrize("args, status, names", MISTAKES,
                         ids=lambda v: " ".join(v)[:60] if isinstance(v, tuple) else None)
def test_a_mistake_is_one_line_with_the_table_s_status(args, status, names, files):
    result = cli_runner().invoke(cli, _args(Case(args), files), env={"OSEP_LOG_LEVEL": None})
    assert result.exit_code == status, (args, result.exit_code, result.stderr)
    assert result.stderr.startswith("osep: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert names in result.stderr, (names, result.stderr)
    assert not result.stdout


def test_the_table_of_exit_statuses():
    """The statuses the documentation lists, one meaning each."""
    assert [(s.code, s.name) for s in exits.STATUSES] == [(0, "done"), (1, "pool"), (2, "usage"),
                                                          (130, "interrupted")]
    assert len({s.meaning for s in exits.STATUSES}) == len(exits.STATUSES)


@pytest.fixture(scope="module")
def closed_port() -> str:
    """An address on this machine where nothing listens: a port the kernel gave and that was closed."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


# A pool that cannot be reached (--pool naming a closed port): status 1 (exits.POOL) in every command
# that reads one, and the collector named by the address tried. Real processes (the real bindings).
UNREACHABLE = [
    ("report", "--policy-file", POLICY),
    ("shares", "--from-pool"),
    ("doctor", "--policy-file", POLICY, "--state-file", MISSING),
    ("run", "--once", "--dry-run", "--policy-file", POLICY),
]


def test_an_unreachable_pool_is_status_1_naming_the_collector_s_address(files, tmp_path, closed_port):
    def one(index: int) -> tuple[tuple[str, ...], tuple[int, str, str, int, float]]:
        folder = tmp_path / str(index)
        folder.mkdir()
        args = [*_args(Case(UNREACHABLE[index]), files), "--pool", closed_port]
        return UNREACHABLE[index], _child(args, folder)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, range(len(UNREACHABLE))))
    named = f"the collector at {closed_port}"
    for args, (status, stdout, stderr, _, seconds) in results:
        assert seconds < TIMEOUT and status == exits.POOL.code, (args, status, stderr)
        if args[0] == "doctor":  # its table says it, on stdout
            assert f"asking {named}: " in stdout, stdout
        elif args[0] == "run":  # a run's errors are events of its log (standard error, at info)
            assert f'"problem": "asking {named} for the schedds: ' in stderr, stderr
        else:
            assert stderr.startswith(f"osep: error: asking {named} for the ") and stderr.count("\n") == 1, stderr

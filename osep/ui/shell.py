"""The ``osep`` command's group and what its commands share: one-line errors, the output-format
option, warnings and progress on stderr. The command modules (:mod:`osep.ui.cmd_study`,
:mod:`osep.ui.cmd_pool`, :mod:`osep.ui.cmd_files`, :mod:`osep.ui.cmd_example`, :mod:`osep.ui.cmd_doctor`)
register on :data:`cli`; :mod:`osep.ui.cli` is the entry point."""

from __future__ import annotations

import errno
import functools
import importlib.util
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar, cast

import click

from osep import __version__, log
from osep.bounds import MAX_SECONDS, MAX_SLOT_CPUS, MAX_SLOTS, MAX_TRACE_SECONDS
from osep.config.knobs import parse_knobs
from osep.config.toml import escape
from osep.errors import ConfigError, OsepError
from osep.ui import exits
from osep.ui.usage import OsepGroup

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("table", "json", "csv")


class Number(click.FloatRange):
    """A number within bounds, both given: click's float range, which lets ``nan`` through (it
    compares false with both bounds), with ``nan`` refused as well (``inf`` is out of any finite
    bound). Every number a command takes is one of these, its bounds those the files have (see
    :mod:`osep.bounds`)."""

    name = "number"

    def __init__(self, min: float, max: float, min_open: bool = False) -> None:
        super().__init__(min=min, max=max, min_open=min_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            low = "<" if self.min_open else "<="
            self.fail(f"{value!r} is not in the range {self.min:g}{low}x<={self.max:g}.", param, ctx)
        return number


def fail(exc: OsepError) -> NoReturn:
    """One line on stderr, whatever a file or a knob put in the message (control characters and
    terminal escapes are shown escaped), and the exit status of the table (:mod:`osep.ui.exits`):
    1 for the pool's errors, 2 for any other."""
    click.echo(f"osep: error: {escape(str(exc))}", err=True)
    sys.exit(exits.status_of(exc))


def fails_cleanly(func: F) -> F:
    """Turn osep's own errors into one line on stderr and their exit status (:func:`fail`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except OsepError as exc:
            fail(exc)

    return cast(F, wrapper)


# One name per meaning across the commands: the options several commands take are made here, each
# one way, with only the sentence on what the command does with it its own.

def pool_option(use: str = "") -> Callable[[F], F]:
    """``--pool HOST[:PORT]``: the collector of the pool a command reads (or acts on)."""
    return click.option("--pool", metavar="HOST[:PORT]",
                        help=f"{use or 'The pool'}'s collector. [knob OSEP_POOL; default: the HTCondor "
                             "configuration's COLLECTOR_HOST]")


def policy_file_option(help: str, knob: bool = False, required: bool = False) -> Callable[[F], F]:
    """``--policy-file PATH``: a policy file (owners and shares, settings), in every command that
    reads one; ``--policy`` is only ``simulate``'s, and names a policy to simulate. What is not a
    readable file is refused by the reader, in one line (``doctor`` makes it one of its checks)."""
    return click.option("--policy-file", type=click.Path(path_type=Path), metavar="PATH",
                        required=required,
                        help=help + (" [knob OSEP_POLICY_FILE]" if knob else ""))


def state_file_option(help: str) -> Callable[[F], F]:
    """``--state-file PATH``: what a run leaves for the next (the ceilings osep set, vacates)."""
    return click.option("--state-file", type=click.Path(path_type=Path), metavar="PATH",
                        help=f"{help} [knob OSEP_STATE_FILE]")


def decisions_option(help: str, knob: bool = False) -> Callable[[F], F]:
    """``--decisions PATH``: the JSON log ``osep run`` wrote (its ``--log-file``, or the knob
    ``OSEP_LOG``), read back."""
    return click.option("--decisions", type=click.Path(path_type=Path), metavar="PATH",
                        help=help + (" [knob OSEP_LOG]" if knob else ""))


def min_run_time_option(default: str, runs: str = "") -> Callable[[F], F]:
    """``--min-run-time SECONDS``: the youngest job a vacate may take (the policy file's
    ``min_run_time``, which this replaces); ``default`` says where the command takes it from
    otherwise, ``runs`` which of its runs it is for."""
    return click.option("--min-run-time", type=Number(min=0, max=MAX_SECONDS), metavar="SECONDS",
                        help=f"Never vacate a job that has run less than this (s){runs and ', in ' + runs}. "
                             f"[{default}]")


def trace_options(func: F) -> F:
    """How ``--trace`` reads a workload log (``simulate`` and ``tune``): who owns a job, the pool's
    cores, and the window of the log (:func:`trace_window` checks the window's options)."""
    from osep.sim.swf import NAMINGS

    options = [
        click.option("--owners", "owners", type=click.Choice(NAMINGS), default="user", show_default=True,
                     help="--trace: the owner of a job is its user, group, queue or partition (fields 12, 13, "
                          "15, 16), or its user as a member of its group (an owner tree)."),
        click.option("--cores", type=click.IntRange(min=1, max=MAX_SLOTS * MAX_SLOT_CPUS),
                     help="--trace: cores in the pool, one-core slots unless --cores-per-machine. Default: the "
                          "log's MaxProcs (or MaxNodes) header, else the most cores its jobs held at once."),
        click.option("--cores-per-machine", type=click.IntRange(min=1, max=MAX_SLOT_CPUS),
                     help="--trace: the cores come as partitionable machines of this many cores each."),
        click.option("--from-second", type=Number(min=0, max=MAX_TRACE_SECONDS), default=0.0,
                     help="--trace: jobs submitted from this second of the log on (times then count from it)."),
        click.option("--until-second", type=Number(min=0, max=MAX_TRACE_SECONDS, min_open=True),
                     help="--trace: jobs submitted before this second of the log only."),
        click.option("--days", type=Number(min=0, max=MAX_TRACE_SECONDS / 86400, min_open=True),
                     help="--trace: jobs submitted in this many days from --from-second (instead of "
                          "--until-second)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def trace_window(from_second: float, until_second: float | None, days: float | None) -> float | None:
    """Where ``--trace``'s window ends (None: the log's end), from ``--until-second`` or ``--days``;
    a usage error for both, or for an end not after ``--from-second``."""
    if days is not None and until_second is not None:
        raise click.UsageError("give --until-second or --days, not both")
    end = from_second + days * 86400 if days is not None else until_second
    if end is not None and end <= from_second:
        raise click.UsageError(f"--until-second ({end:g}) must be after --from-second ({from_second:g})")
    return end


def format_option(func: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="Output format.",
    )(func)


@click.group(name="osep", cls=OsepGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-level",
    type=click.Choice(log.LEVELS),
    default="warning",
    help="Least severe structured log event to write (info: every decision and action). [default: "
         "warning; run: its knob OSEP_LOG_LEVEL, else info; env OSEP_LOG_LEVEL]",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Append JSON log lines here instead of standard error. [run: knob OSEP_LOG]",
)
@click.version_option(__version__, prog_name="osep")
@click.pass_context
def cli(ctx: click.Context, log_level: str, log_file: Path | None) -> None:
    """Owner-Share Enforcement Policy (OSEP) for HTCondor pools."""
    source = ctx.get_parameter_source("log_level")
    given = source is not None and source.name != "DEFAULT"
    env = os.environ.get("OSEP_LOG_LEVEL", "")
    if not given and env:
        try:
            log_level = parse_knobs({"OSEP_LOG_LEVEL": env}).log_level
        except ConfigError as exc:
            fail(ConfigError("environment", "OSEP_LOG_LEVEL", exc.reason))
        given = True
    stream = None
    if log_file is not None:
        try:
            stream = ctx.with_resource(_append(log_file))
        except OSError as exc:
            why = "a FIFO nobody reads" if exc.errno == errno.ENXIO else exc.strerror
            raise click.BadParameter(f"cannot open {log_file}: {why}",
                                     param_hint="--log-file") from None
    # Kept for subcommands whose own configuration (knobs) may name a log or a level.
    ctx.obj = {
        "stream": stream,
        "log_level": log_level,
        "log_level_given": given,
    }
    log.configure(log_level, stream)


def _append(path: Path) -> TextIO:
    """``path`` opened to append text to. Opened without waiting, so that a FIFO nobody reads is
    refused (ENXIO) instead of hanging osep before it starts; then blocking again, so that a pipe
    or a terminal that is read gets every line."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        os.set_blocking(fd, True)
        return open(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


class Warnings:
    """Prints warnings about the logs read on stderr: the first ``limit`` in full, then a count, so
    that a badly damaged log cannot flood the terminal."""

    def __init__(self, limit: int = 20) -> None:
        self.limit = limit
        self.count = 0

    def __call__(self, text: str) -> None:
        self.count += 1
        if self.count <= self.limit:
            click.echo(f"osep: warning: {text}", err=True)

    def close(self) -> None:
        if self.count > self.limit:
            click.echo(f"osep: warning: {self.count - self.limit} more warnings not shown",
                       err=True)


def progress_reporter() -> Callable[[int, float], None] | None:
    """A progress line on a terminal, nothing when stderr is a file or a pipe."""
    if not sys.stderr.isatty():
        return None
    import datetime

    def report(events: int, when: float) -> None:
        stamp = datetime.datetime.fromtimestamp(when, datetime.UTC)
        click.echo(f"\r{events:,} events, log time {stamp:%Y-%m-%d %H:%M} UTC", err=True, nl=False)

    return report


def check_folder(path: Path, option: str) -> None:
    """Refuse, before anything runs, a file ``option`` names in a directory that is not there (or
    cannot be written to)."""
    folder = path.parent
    if not folder.is_dir():
        raise click.BadParameter(f"no directory {escape(str(folder))} to write it in", param_hint=option)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise click.BadParameter(f"cannot write in {escape(str(folder))}", param_hint=option)


def check_plot(plot: Path | None) -> None:
    """Refuse, before anything runs, a plot that could not be written: of another kind than PNG or
    SVG, or in a directory that is not there (or cannot be written to)."""
    if plot is None:
        return
    if plot.suffix.lower() not in (".png", ".svg"):
        raise click.BadParameter("the plot is written as .png or .svg", param_hint="--plot")
    check_folder(plot, "--plot")
    if importlib.util.find_spec("matplotlib") is None:  # optional where osep is packaged for a server
        raise click.BadParameter("plots need matplotlib, which is not installed (pip install "
                                 "matplotlib; on Debian: apt install python3-matplotlib)", param_hint="--plot")


def skipped(scenario: Any) -> None:
    """One line on stderr for what a scenario's workload log left out."""
    if scenario.skipped:
        counts = ", ".join(f"{n} {reason}" for reason, n in sorted(scenario.skipped.items()))
        click.echo(f"{escape(scenario.path)}: workload lines left out: {counts} "
                   f"(e.g. {'; '.join(scenario.examples)})", err=True)

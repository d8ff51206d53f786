"""Usage errors in osep's one-line form, for every command: the ``osep`` group's class.

click prints a usage error as three lines (the usage, a hint, ``Error: ...``) and shows what the user
typed as it came. osep prints every error as one line, ``osep: error: <command>: <option>: <what>``,
with anything a command line (or the environment) carried escaped, as :func:`osep.ui.shell.fail` does
for osep's own errors. The line is built by :func:`usage_line`, a pure function of the exception, and
printed by :class:`OsepGroup`, whose ``main`` every subcommand goes through (click's test runner too).

The same lines, exit statuses and help come out on every click osep runs on, from Debian trixie's
8.1 to the newest: where click's behaviour changed (which exception an unknown command raises, where
``osep`` alone prints its help and with what status, the signature of ``get_missing_message``), osep
does that part itself or asks the installed click which form it has, never its version number.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any, NoReturn

import click
from click.core import ParameterSource

from osep.config.toml import escape
from osep.ui import exits

SHOWN = 100  # characters shown of a long argument, as osep shows a long value from a file
MAX_MESSAGE = 2000  # characters of the message at most, whatever it holds
_LINE_BREAK = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")


class UnknownCommand(click.UsageError):
    """A command the ``osep`` group does not have, with the close matches among those it has.

    Raised by :meth:`OsepGroup.resolve_command` on every click: click 8.4 and later raise their own
    ``NoSuchCommand`` there, older ones a plain usage error whose only trace of the name is in its
    message."""

    def __init__(self, command_name: str, commands: Iterable[str], ctx: click.Context) -> None:
        super().__init__(f"No such command {command_name!r}.", ctx)
        self.command_name = command_name
        self.possibilities = difflib.get_close_matches(command_name, list(commands))


class HelpForNoArguments(click.UsageError):
    """A command that wants arguments was given none: its help stands for the error, on stderr,
    with a usage error's status (2). click 8.2 and later do the same (``NoArgsIsHelpError``); 8.1
    printed the help on stdout and exited 0, as if it had been asked for."""

    def __init__(self, ctx: click.Context) -> None:
        super().__init__(ctx.get_help(), ctx)
        self.color = ctx.color

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.format_message(), file=file, err=True, color=self.color)


class Interrupted(Exception):
    """Ctrl-C, carried past click's own handling of KeyboardInterrupt (which prints a blank line and
    ``Aborted!`` and exits 1) to :meth:`OsepGroup.main`."""


def usage_line(exc: click.ClickException, argv: Sequence[str] = (),
               environ: Mapping[str, str] | None = None) -> str:
    """The one line (without its newline) that stands for click's error ``exc``.

    It names the command, the option or argument at fault and what was wrong (a bad choice keeps
    click's list of the choices), and, for a usage error, where the help is. ``argv`` and the values
    of the command's environment variables (``environ``) are the text the user gave: where click
    quotes such text as it came, it is shown escaped (a newline as ``\\n``) and, when long, cut
    short; any other line break in the message is click's (or osep's) own layout, folded into a
    space. Every other character that is not printable is shown escaped too, so that nothing given
    can end the line or reach the terminal as an escape sequence."""
    ctx = exc.ctx if isinstance(exc, click.UsageError) else None
    given = [*argv, *_values(argv), *_env_values(ctx, environ)]
    message = _one_line(_message(exc, ctx), given)
    command = _command(ctx)
    line = f"{command}: {message}" if command else message
    if isinstance(exc, click.UsageError) and ctx is not None and ctx.command.get_help_option(ctx) is not None:
        helps = ctx.command.get_help_option_names(ctx)
        line += f" (see '{escape(ctx.command_path)} {max(helps, key=len)}')"
    return line


def _message(exc: click.ClickException, ctx: click.Context | None) -> list[str]:
    """The option, argument or command at fault (if any) and what was wrong with it, in pieces: a
    name click took from the command line whole is already escaped (an :class:`_Escaped` piece)."""
    if isinstance(exc, click.MissingParameter):
        extra = _missing_message(exc.param, ctx) if exc.param else None
        what = "required, not given" + (f" ({_prose(extra)})" if extra else "")
        hint = _hint(exc, ctx)
        return [hint, ": " + what] if hint else [what]
    if isinstance(exc, click.BadParameter):
        hint = _hint(exc, ctx)
        return [hint, ": ", _prose(exc.message)] if hint else [_prose(exc.message)]
    if isinstance(exc, click.NoSuchOption):
        return [_Escaped(escape(exc.option_name, SHOWN)), ": no such option" + _did_you_mean(exc.possibilities)]
    if isinstance(exc, UnknownCommand):
        return ["no such command ", _Escaped(f"'{escape(exc.command_name, SHOWN, quote=chr(39))}'"),
                _did_you_mean(exc.possibilities)]
    return [_prose(exc.format_message())]


def _missing_message(param: click.Parameter, ctx: click.Context | None) -> str | None:
    """What the parameter's type adds when it is missing (the choices of a ``Choice``). click 8.2
    and later pass the context too; 8.1's method takes the parameter alone."""
    get_missing_message = param.type.get_missing_message
    if "ctx" in inspect.signature(get_missing_message).parameters:
        return get_missing_message(param=param, ctx=ctx)
    without_context: Callable[..., str | None] = get_missing_message
    return without_context(param)


def _hint(exc: click.BadParameter, ctx: click.Context | None) -> str:
    """The option's names (``-t/--interval``), the argument's metavar, or the hint osep gave; with
    the environment variable the value came from, when it came from one."""
    param = exc.param
    if exc.param_hint is not None:
        hints = [exc.param_hint] if isinstance(exc.param_hint, str) else list(exc.param_hint)
        where = "/".join(h.strip("'") for h in hints)
    elif isinstance(param, click.Option):
        where = "/".join(param.opts)
    elif param is not None:
        where = param.human_readable_name
    else:
        return ""
    if param is not None and param.name and ctx is not None and \
            ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT:
        where += f" (from {'/'.join(_envvars(param))})"
    return where


def _prose(message: str) -> str:
    """click's sentence as a clause of osep's line: no capital to start, no full stop to end."""
    message = message.strip()
    if len(message) > 1 and message[0].isupper() and message[1].islower():
        message = message[0].lower() + message[1:]
    return message[:-1] if message.endswith(".") and not message.endswith("..") else message


def _did_you_mean(possibilities: Iterable[str] | None) -> str:
    close = list(possibilities or ())
    if not close:
        return ""
    return f" (did you mean {close[0]}?)" if len(close) == 1 else f" (did you mean one of {', '.join(close)}?)"


def _one_line(pieces: list[str], given: Sequence[str]) -> str:
    """The pieces as one line: the given strings in them that hold a line break, or are long, shown
    escaped and cut short (as they came or as click quoted them, with ``repr``), the other line
    breaks folded into a space, then whatever else is not printable escaped."""
    for token in sorted({g for g in given if len(g) > SHOWN or _LINE_BREAK.search(g)}, key=len, reverse=True):
        for form, shown in ((repr(token), f"'{escape(token, SHOWN, quote=chr(39))}'"),
                            (token, escape(token, SHOWN))):
            pieces = [part for piece in pieces
                      for part in ([piece] if isinstance(piece, _Escaped) else _split(piece, form, shown))]
    out = "".join(p if isinstance(p, _Escaped) else _LINE_BREAK.sub(" ", p) for p in pieces)
    return escape(out, MAX_MESSAGE)


class _Escaped(str):
    """A piece of the message already escaped: left alone by the folding."""


def _split(text: str, form: str, shown: str) -> list[str]:
    """``text`` with each ``form`` in it replaced by an escaped piece showing ``shown``."""
    parts = text.split(form)
    out = [parts[0]]
    for part in parts[1:]:
        out += [_Escaped(shown), part]
    return out


def _command(ctx: click.Context | None) -> str:
    """The subcommand's path below ``osep`` (``simulate``), empty for the group itself."""
    names = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return escape(" ".join(reversed(names)))


def _values(argv: Sequence[str]) -> list[str]:
    """The values given inside an argument: ``--name=VALUE``, ``-xVALUE``."""
    return [arg.partition("=")[2] if arg.startswith("--") else arg[2:]
            for arg in argv if arg.startswith("-") and len(arg) > 2]


def _envvars(param: click.Parameter) -> list[str]:
    envvar = getattr(param, "envvar", None)
    return [] if not envvar else [envvar] if isinstance(envvar, str) else list(envvar)


def _env_values(ctx: click.Context | None, environ: Mapping[str, str] | None) -> list[str]:
    """The values of the environment variables the failing command's options read."""
    if ctx is None or environ is None:
        return []
    return [environ[name] for param in ctx.command.params for name in _envvars(param) if name in environ]


class _Parsing(click.Command):
    """How every osep command parses: click's parser raises some usage errors (an option without its
    value, a flag given one) without the context, which names the command; it is attached here. A
    command that wants arguments and is given none raises :class:`HelpForNoArguments`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            raise HelpForNoArguments(ctx)
        given = list(args)  # click's parser consumes the list it is given
        with click.core.augment_usage_errors(ctx):
            try:
                return super().parse_args(ctx, args)
            except click.BadParameter as exc:
                param = exc.param
                if param is not None and param.name is not None and ctx.get_parameter_source(param.name) is None:
                    self._record_source(ctx, param, param.name, given)
                raise

    def _record_source(self, ctx: click.Context, param: click.Parameter, name: str, given: list[str]) -> None:
        """Record where the value ``param`` refused came from (the command line, the environment,
        ...), which the error line names. click records it before converting the value, except
        8.4, which records it only once the value is converted; here it is found as click finds it,
        from the arguments parsed again."""
        opts, _, _ = self.make_parser(ctx).parse_args(args=given)
        _, source = param.consume_value(ctx, opts)
        ctx.set_parameter_source(name, source)


class OsepCommand(_Parsing, click.Command):
    """Every osep command below the group."""


class OsepGroup(_Parsing, click.Group):
    """The ``osep`` group: its ``main`` runs click in non-standalone mode and prints click's errors,
    usage errors of every subcommand included, as osep's one line, with the table's status for bad
    input (:data:`osep.ui.exits.USAGE`, 2) whatever click's own would be. Ctrl-C ends with one line and
    :data:`osep.ui.exits.INTERRUPTED` (130). ``--help`` and ``--version``
    print as click prints them; ``osep`` alone prints the group's help on stderr, status 2."""

    command_class = OsepCommand

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """The subcommand ``args`` starts with; :class:`UnknownCommand` for one the group does not
        have. A name that looks like an option (it came after ``--``) is parsed as the group's
        arguments first, as click does, so that ``osep -- --help`` is the group's help."""
        name = click.utils.make_str(args[0])
        if ctx.resilient_parsing or self.get_command(ctx, name) is not None:
            return super().resolve_command(ctx, args)
        if name.startswith("-"):
            self.parse_args(ctx, args)
        raise UnknownCommand(name, self.list_commands(ctx), ctx)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            status = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except HelpForNoArguments as exc:
            exc.show()
            sys.exit(exits.USAGE.code)
        except click.ClickException as exc:
            click.echo(f"osep: error: {usage_line(exc, argv, os.environ)}", err=True)
            sys.exit(exits.USAGE.code)
        except Interrupted:
            _interrupted(blank_line=True)
        except click.exceptions.Abort as exc:  # click's form of an interrupt while it parsed
            if isinstance(exc.__cause__, EOFError):  # osep reads no terminal: an EOFError is a bug
                raise exc.__cause__ from None
            _interrupted(blank_line=False)  # click has ended the ^C line already
        sys.exit(status if isinstance(status, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted() from None


def _interrupted(blank_line: bool) -> NoReturn:
    """One line for Ctrl-C, after ending the terminal's ``^C`` echo line when stderr is a terminal
    (in a file or a pipe the line is the only one)."""
    if blank_line and sys.stderr.isatty():
        click.echo("", err=True)
    click.echo("osep: error: interrupted", err=True)
    sys.exit(exits.INTERRUPTED.code)  # 128 + SIGINT, as a shell reports it

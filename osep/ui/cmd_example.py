"""``osep example``: the files osep ships, shown or copied out to start one's own from (what there
is, and reading it, is :mod:`osep.config.bundled`)."""

from __future__ import annotations

from pathlib import Path

import click

from osep.config import bundled
from osep.config.toml import escape
from osep.errors import OsepError
from osep.ui.shell import cli, fails_cleanly


@cli.command()
@click.argument("words", nargs=-1, metavar="[NAME | scenario NAME]")
@click.option("--list", "listing", is_flag=True, help="List the bundled files, one line each (as with no NAME).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the file here instead of printing it.")
@click.option("--force", is_flag=True, help="--output: overwrite a file that is there.")
@fails_cleanly
def example(words: tuple[str, ...], listing: bool, output: Path | None, force: bool) -> None:
    """Print a bundled file, to start one's own from: the example policy (policy), an owner tree
    (owner-tree), a file for osep shares (slurm-classic), the condor_master snippet (condor-config)
    or a scenario (scenario NAME). With no NAME, or --list: what there is."""
    if listing or not words:
        if words:
            raise click.UsageError("--list takes no NAME")
        if output is not None or force:
            raise click.UsageError("--output and --force go with a NAME")
        entries = bundled.catalogue()
        width = max(len(entry.name) for entry in entries)
        for entry in entries:
            click.echo(f"{entry.name:<{width}}  {entry.about}")
        return
    if force and output is None:
        raise click.UsageError("--force goes with --output")
    entry = bundled.find(words)
    data = entry.path.read_bytes()
    if output is None:
        click.echo(data.decode("utf-8"), nl=False)
    else:
        _write(output, data, force)
        click.echo(f"{entry.name} written to {escape(str(output))}", err=True)
    for name, where in bundled.beside(entry):
        click.echo(f"osep: warning: {entry.words[1]} reads {escape(name)} relative to itself: a copy needs "
                   f"that file there too (the bundled one is {escape(str(where))}), or run the scenario by "
                   f"name (osep simulate {entry.words[1]})", err=True)

def _write(path: Path, data: bytes, force: bool) -> None:
    """``data`` in the file at ``path``: a new file, unless ``force`` lets an existing one be replaced."""
    try:
        with open(path, "wb" if force else "xb") as out:
            out.write(data)
    except FileExistsError:
        raise OsepError(f"{escape(str(path))} is there already: give --force to overwrite it") from None
    except OSError as exc:
        raise OsepError(f"cannot write {escape(str(path))}: {exc.strerror or exc}") from None

"""The ``osep`` command. The only modules that print or exit are this one's: :mod:`osep.ui.shell`
and the command modules it loads; everything they show comes from the pure renderers in
:mod:`osep.ui.render`."""

from __future__ import annotations

from osep.ui import cmd_doctor, cmd_example, cmd_files, cmd_pool, cmd_study, cmd_tune  # noqa: F401  (each registers its commands on cli)
from osep.ui.shell import cli, progress_reporter

__all__ = ["cli", "main", "progress_reporter"]


def main() -> None:
    cli(prog_name="osep")

"""``python -m osep``: the same as the ``osep`` command."""

from osep.ui.cli import main

main()

"""``python -m osep``: the same as the ``osep`` command."""

from osep.cli import main

main()

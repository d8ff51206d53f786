"""The check every script here makes before it imports osep or a third-party package: that it runs on a
Python with the project's dependencies, as .venv/bin/python has them (scripts/setup makes it).

Run as ``scripts/NAME.py``, a script starts ``python3`` from PATH (``sudo`` resets PATH to the
system's), which usually has none of them: the script would stop with an ImportError traceback, or do
part of its work first and fail in a child process. With this check it prints one line saying which
Python to use and exits with status 2, as osep does for a usage error:

    import _env  # scripts/ is sys.path[0] when a script is run

    _env.check()

testpool.py does not call it: it needs the standard library only, and runs on any Python 3.11 or
newer, as ``sudo scripts/testpool.py`` starts it. The dependencies are those of pyproject.toml's
``[project] dependencies``, by distribution name, so that this is never a second list to keep in
step. Only the standard library is used here; a Python older than 3.11 (the project's oldest) has no
``tomllib`` and gets the same line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def missing() -> list[str]:
    """The project's dependencies this Python has not installed ("python>=3.11" when it is older)."""
    try:
        import tomllib
    except ImportError:
        return ["python>=3.11"]
    try:
        with open(ROOT / "pyproject.toml", "rb") as handle:
            wanted = tomllib.load(handle)["project"]["dependencies"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return []  # not a checkout as scripts/setup leaves it: nothing to check against
    lacking = []
    for requirement in wanted:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        if name is not None and not installed(name.group()):
            lacking.append(name.group())
    return lacking


def installed(name: str) -> bool:
    """Whether distribution ``name`` is installed: its module found under its name (as most are), else
    its ``.dist-info`` folder on sys.path (htcondor's modules are htcondor2 and classad2). Not through
    importlib.metadata, whose imports cost 30 ms and 4.5 MiB that the benchmarks' children, which make
    this check too, would count in their figures."""
    if importlib.util.find_spec(name.replace("-", "_").lower()) is not None:
        return True
    prefix = re.sub(r"[-_.]+", "_", name).lower() + "-"
    for entry in sys.path:
        with contextlib.suppress(OSError):
            if any(folder.lower().startswith(prefix) and folder.endswith((".dist-info", ".egg-info"))
                   for folder in os.listdir(entry or ".")):
                return True
    return False


def shown(path: Path) -> str:
    """``path`` as the user would type it where they are: from the checkout, as the docs write
    commands, when they are in it, else in full."""
    return str(path.relative_to(ROOT)) if Path.cwd().resolve() == ROOT else str(path)


def check() -> None:
    """Return when this Python has the project's dependencies; else say, in one line on standard
    error, to run the script with .venv/bin/python, and exit with status 2."""
    lacking = missing()
    if not lacking:
        return
    script = Path(sys.argv[0]).resolve()
    python = ROOT / ".venv" / "bin" / "python"
    print(f"{shown(script)}: run it with {shown(python)} ({shown(ROOT / 'scripts' / 'setup')} makes it);"
          f" {sys.executable or 'this Python'} lacks {', '.join(lacking)}", file=sys.stderr)
    sys.exit(2)

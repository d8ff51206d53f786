"""A pool job of ``osep tune --on-pool``: ``python3 -m osep.htcondor.tunejob SPEC.json OUT.json``.

SPEC holds a history as :meth:`osep.tune.history.History.describe` gives it (``history``), the
files it reads in the order of its ``inputs()`` as they are named in the job's directory
(``files``), and the runs to make (``tasks``: each a ``period`` and a ``candidate`` as
:meth:`osep.tune.candidates.Candidate.as_dict` gives it). The job rebuilds the history, runs every
task with :func:`osep.tune.sweep.run` and writes ``{"results": [{"period", "candidate",
"figures"}...]}`` to OUT, whole or not at all. On any error: one line on stderr, exit status 2, no
OUT.

It runs on an execute machine that may have only Python (3.11 or later) and structlog, and osep's
modules in a zip on PYTHONPATH: it imports neither the HTCondor bindings nor click.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from osep.errors import OsepError
from osep.htcondor.eventlog import read_event_rows
from osep.tune.candidates import Candidate
from osep.tune.history import EventHistory, History, TraceHistory
from osep.tune.sweep import run


def rebuild(data: Mapping[str, Any], files: Sequence[Path]) -> History:
    """The history ``data`` describes, reading ``files``; ValueError for a kind it does not know."""
    kind = data.get("kind")
    if kind == "trace":
        return TraceHistory.described(data, files)
    if kind == "events":
        # What the logs' reader warns of was shown where the sweep started, from the same logs.
        return EventHistory.described(data, files, read_event_rows, lambda _: None)
    raise ValueError(f"a history of kind {kind!r}")


def results(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every task of ``spec`` run, in order, as OUT holds them."""
    history = rebuild(spec["history"], [Path(str(name)) for name in spec["files"]])
    out = []
    for task in spec["tasks"]:
        period, candidate = str(task["period"]), Candidate.from_dict(task["candidate"])
        if period not in history.periods():
            raise ValueError(f"the history has no period {period!r}")
        out.append({"period": period, "candidate": candidate.as_dict(),
                    "figures": run(history, period, candidate).as_dict()})
    return out


def write_atomically(path: Path, data: Any) -> None:
    """``data`` as JSON in ``path``, through a file beside it renamed over it."""
    part = path.with_name(path.name + ".part")
    with part.open("w", encoding="utf-8") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(part, path)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m osep.htcondor.tunejob SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec_path, out_path = Path(argv[0]), Path(argv[1])
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        write_atomically(out_path, {"results": results(spec)})
    except OsepError as exc:
        print(f"osep tunejob: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"osep tunejob: {exc.filename or spec_path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"osep tunejob: {spec_path}: not a sweep job's spec ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

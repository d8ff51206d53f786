"""``osep`` as the live tests run it, killed with SIGKILL at one point of its work, as a crash or an
administrator's kill -9 would: for the tests of what a dead daemon leaves behind. Nothing of this is
in osep itself; it patches the live adapter in this process only.

    python crashing_osep.py POINT [osep arguments...]

POINT is ``after-vacates`` (the first cycle that vacated anything dies once its holds and its vacates
are sent, before it keeps their room and saves) or ``after-ceiling`` (dies right after the first
ceiling command went out, before any vacate and before anything else is recorded).
"""

from __future__ import annotations

import os
import signal
import sys

from osep.htcondor import live, negotiator
from osep.ui.cli import main


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def after_vacates() -> None:
    reserve = live.LivePool.reserve

    def dying_reserve(self: live.LivePool, *args: object) -> None:
        die()  # the first room kept comes after the cycle's last vacate
        reserve(self, *args)  # type: ignore[arg-type]

    live.LivePool.reserve = dying_reserve  # type: ignore[method-assign]


def after_ceiling() -> None:
    set_ceiling = negotiator.LiveNegotiator.set_ceiling

    def dying_set(self: negotiator.LiveNegotiator, submitter: str, value: int, *rest: object) -> None:
        set_ceiling(self, submitter, value, *rest)  # type: ignore[arg-type]
        if value >= 0:
            die()

    negotiator.LiveNegotiator.set_ceiling = dying_set  # type: ignore[method-assign]


if __name__ == "__main__":
    {"after-vacates": after_vacates, "after-ceiling": after_ceiling}[sys.argv[1]]()
    sys.argv = ["osep", *sys.argv[2:]]
    main()

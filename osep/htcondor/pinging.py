"""One ping through the bindings (what ``condor_ping`` sends): whether a daemon grants the identity osep
authenticates as a command, asked without the command being carried out.

:mod:`osep.htcondor.probe` probes every right this way before a run; :mod:`osep.htcondor.negotiator` asks
the negotiator before each round of ceilings, because SET_CEILING is sent without an answer: a
negotiator that no longer grants ADMINISTRATOR drops it in silence, and osep would take the hold for
set and vacate for nothing.
"""

from __future__ import annotations

from typing import Any

import htcondor2 as htcondor

from osep.htcondor.rights import Ping

FAULTS = (htcondor.HTCondorException, OSError, ValueError, RuntimeError, TypeError)


def problem(exc: BaseException) -> str:
    return f"{exc}" if str(exc) else type(exc).__name__


def ping(ad: Any, command: str) -> Ping:
    """Whether the daemon of ``ad`` (or a sinful address) grants ``command`` (a command's name, or a
    level); a refusal and a daemon that does not answer both come back as not granted."""
    try:
        answer = htcondor.ping(ad, command)
    except FAULTS as exc:
        return Ping(False, None, problem(exc))
    identity = answer.get("MyRemoteUserName")
    granted = answer.get("AuthorizationSucceeded") in (True, "True", "true")
    return Ping(granted, str(identity) if identity is not None else None,
                "" if granted else "the daemon refused it")

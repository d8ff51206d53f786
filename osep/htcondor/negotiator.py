"""A real negotiator as :mod:`osep.htcondor.ceilings` drives it: reading and setting submitter
ceilings, as leases that lapse by themselves where the negotiator takes them (HTCondor 25.11 and
later). Every command goes through the pool's retried call, so it fails as a PoolError naming the
right it needed."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import classad2
import htcondor2 as htcondor

from osep.errors import PoolError
from osep.htcondor.ads import integer
from osep.htcondor.ceilings import NO_CEILING
from osep.htcondor.pinging import ping
from osep.htcondor.rights import LEASE_CEILING, READ_CEILINGS, SET_CEILING, needs

T = TypeVar("T")

MANAGE_CEILING = 532  # the negotiator's command for ceiling leases (HTCondor's MANAGE_CEILING)
LEASES_SINCE = (25, 11)  # the first HTCondor version whose negotiator takes it


class Caller(Protocol):
    """What a negotiator needs of its pool: the retried call (:meth:`osep.htcondor.live.LivePool.call`),
    asked at each command, as the pool's settings may have changed since."""

    def call(self, what: str, func: Callable[[], T], attempts: int | None = None) -> T: ...


class LiveNegotiator:
    """The :class:`osep.htcondor.ceilings.NegotiatorLink` of a real negotiator."""

    def __init__(self, pool: Caller, ad: Any) -> None:
        self._pool = pool
        self._daemon = htcondor.Negotiator(ad)
        self.name = str(ad.get("Name", ""))
        self.leases = takes_leases(ad.get("CondorVersion"))
        self._ad = ad
        self._granted = False  # asked once per round of ceilings (osep.htcondor.pinging)

    def ceilings(self) -> dict[str, int]:
        ads = self._pool.call(f"reading submitter ceilings ({needs(READ_CEILINGS, self.name)})",
                              self._daemon.getPriorities)
        out = {}
        for ad in ads:
            name, ceiling = ad.get("Name"), ad.get("Ceiling")
            value = integer(ceiling)
            if isinstance(name, str) and value is not None:
                out[name] = value
        return out

    def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
        negotiator = self._daemon
        if not self._granted:  # SET_CEILING has no answer: a refusal would go unseen
            answer = ping(self._ad, SET_CEILING.command)
            if not answer.granted:
                raise PoolError(f"setting the ceiling of {submitter} ({needs(SET_CEILING, self.name)}): the "
                                f"negotiator does not grant it (or stopped answering): {answer.problem}")
            self._granted = True
        if self.leases:
            # A lease in force takes no other ceiling (one sent would be undone when it ends): it
            # is ended first, whether osep set it or not (none in force: refused, harmlessly).
            self._manage(submitter, {"Action": "cancel"}, check=False)
            if lease is not None and value >= 0:
                self._manage(submitter, {"Action": "set", "Ceiling": value,
                                         "Duration": max(1, math.ceil(lease))})
                return
        if value >= 0:
            self._pool.call(f"setting the ceiling of {submitter} ({needs(SET_CEILING, self.name)})",
                            lambda: negotiator.setCeiling(submitter, value))
            return
        # "No ceiling" is -1 on the wire, which Negotiator.setCeiling refuses to send (it checks
        # for > -1); the negotiator itself accepts it, so send the command the method would send.
        from htcondor2 import _negotiator as wire

        self._pool.call(
            f"lifting the ceiling of {submitter} ({needs(SET_CEILING, self.name)})",
            lambda: wire._negotiator_command_user_value(
                negotiator._addr, negotiator._SET_CEILING, submitter, NO_CEILING),
        )


    def _manage(self, submitter: str, what: Mapping[str, Any], check: bool = True) -> None:
        """The negotiator's ceiling-management command (HTCondor 25.11 and later): one ad out, one
        back saying whether it was done. The bindings have no call for it but the command that sends
        an ad and reads one back."""
        from htcondor2 import htcondor2_impl as wire

        request = classad2.ClassAd({"Submitter": submitter, **what})
        doing = f"{what['Action']} the ceiling lease of {submitter} ({needs(LEASE_CEILING, self.name)})"
        reply = self._pool.call(doing, lambda: wire._send_generic_payload_command(
            self._daemon._addr, MANAGE_CEILING, request._handle), attempts=1 if not check else None)
        answer = reply[0] if isinstance(reply, tuple) and reply else reply
        if check and not (hasattr(answer, "get") and answer.get("Success") is True):
            said = answer.get("ErrorString") if hasattr(answer, "get") else answer
            raise PoolError(f"{doing}: the negotiator refused: {said}")


def takes_leases(version: object) -> bool:
    """Whether a daemon of this ``CondorVersion`` ("$CondorVersion: 25.14.1 2026-10-16 ... $") takes
    time-limited ceilings: HTCondor 25.11 and later."""
    found = re.search(r"\$CondorVersion:\s*(\d+)\.(\d+)\.", version) if isinstance(version, str) else None
    return found is not None and (int(found[1]), int(found[2])) >= LEASES_SINCE


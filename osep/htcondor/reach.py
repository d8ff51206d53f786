"""Reaching a live pool through the bindings: the one retried call every query and command goes
through, where the collector is and how a message names what it tried to reach, and the local
HTCondor configuration's knobs.

Network and daemon errors are retried with backoff here (tenacity), and nowhere else; what still fails
becomes a :class:`osep.errors.PoolError` for the caller to log and survive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import htcondor2 as htcondor
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from osep.config.livepool import LiveSettings
from osep.errors import PoolError

T = TypeVar("T")


def call(settings: LiveSettings, what: str, func: Callable[[], T], attempts: int | None = None) -> T:
    """``func()``, retried with backoff on network and daemon errors (``attempts``, else
    ``settings.retries``); a PoolError if it fails, whatever the bindings raised (a SystemError from a
    value they cannot send, say): nothing from the pool's edge may stop a cycle, or the daemon."""
    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts or settings.retries)),
        wait=wait_exponential(multiplier=settings.retry_wait, max=30),
        retry=retry_if_exception_type((htcondor.HTCondorException, OSError)),
        reraise=False,
    )
    try:
        return retrying(func)
    except RetryError as exc:
        cause = exc.last_attempt.exception()
        raise PoolError(f"{what}: {cause}") from cause
    except (htcondor.HTCondorException, OSError, ValueError) as exc:
        raise PoolError(f"{what}: {exc}") from exc
    except Exception as exc:  # the edge: anything else is the bindings' fault
        raise PoolError(f"{what}: {type(exc).__name__}: {exc}") from exc



def knobs(names: Iterable[str]) -> dict[str, str]:
    """The values of HTCondor configuration knobs that are set (re-read after a reload)."""
    return {n: str(htcondor.param[n]) for n in names if n in htcondor.param}


def reload_config() -> None:
    htcondor.reload_config()


def collector_address(pool: str | None) -> str:
    """Where osep asks for the pool's collector: ``pool`` (``--pool``, the knob ``OSEP_POOL``), else the
    HTCondor configuration's ``COLLECTOR_HOST`` ("" if neither is set)."""
    if pool:
        return pool
    return str(htcondor.param["COLLECTOR_HOST"]) if "COLLECTOR_HOST" in htcondor.param else ""


def the_collector(pool: str | None) -> str:
    """The collector as a message names it, with the address it was asked at: every message about a
    daemon osep could not reach says what it tried to reach."""
    where = collector_address(pool)
    return f"the collector at {where}" if where else "the collector (no --pool, OSEP_POOL or COLLECTOR_HOST set)"


def address_of(ad: Any) -> str:
    """A daemon's host and port, from its ad's ``MyAddress`` (``<127.0.0.1:9618?addrs=...>`` gives
    ``127.0.0.1:9618``); "?" if it has none."""
    where = ad.get("MyAddress") if ad is not None else None
    if not isinstance(where, str) or not where.strip("<>"):
        return "?"
    return where.strip().lstrip("<").rstrip(">").split("?", 1)[0]


def collector_of(pool: str | None) -> Any:
    """The bindings' collector of ``pool`` (``--pool``, the knob ``OSEP_POOL``), else the HTCondor
    configuration's own."""
    return htcondor.Collector(pool) if pool else htcondor.Collector()


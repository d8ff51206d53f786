"""How the live pool adapter talks to a pool; plain data, so that configuration can build it without
importing the bindings."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


def default_name() -> str:
    return f"osep@{socket.getfqdn()}"


@dataclass(frozen=True, slots=True)
class LiveSettings:
    pool: str | None = None  # collector HOST[:PORT]; None: the configured COLLECTOR_HOST
    vacate_fast: bool = False
    reservation_timeout: float = 600.0
    retries: int = 3
    retry_wait: float = 1.0
    state_file: Path | None = None
    # How long a ceiling lasts unrenewed on a negotiator that takes time-limited ceilings (HTCondor
    # 25.11 and later); None: set ceilings without a time limit everywhere.
    lease: float | None = None
    name: str = field(default_factory=default_name)
    # Which owner a job charged to an accounting name counts for, where the policy's owners are a
    # tree (osep.core.tree.ShareTree.owner_of); None: as the negotiator charges it.
    naming: Callable[[str], str] | None = None

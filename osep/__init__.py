"""Owner-Share Enforcement Policy (OSEP) for HTCondor pools.

The policy itself (:mod:`osep.core.policy`) is a pure function from a pool snapshot to a plan. Everything
that reads a pool, acts on it or keeps time lives in adapters around it, so the daemon, the simulator
and log replay all run the very same decision code.
"""

__version__ = "0.1.0"

"""The daemon's Prometheus endpoint: prometheus_client's HTTP server, on a registry of its own (never
the library's global one, which would add the process's own metrics and anything else that
registers there), serving the figures of :mod:`osep.enforce.figures` as the last cycle left them.

``osep run`` starts it once, after taking the state file's lock (a second osep is then told that
another osep runs, not that the port that one serves on is taken), and stops it when it exits. A
port that cannot be listened on stops the start in one line. ``--once`` serves nothing: a run of one
cycle is over before Prometheus would scrape it (a port given as an option is refused; one given as
a knob, which a cron entry may share with a daemon's configuration, is passed over with one
``metrics_not_served`` line).

Serving never holds up or breaks a cycle. A cycle only puts new figures in place (one reference; no
lock is taken); a scrape, in the server's own thread, makes its families from whichever figures are
in place then. A fault of the endpoint's own (figures that cannot be made, a scrape that breaks) is
logged as ``metrics_failed`` and counted in ``osep_metrics_faults_total``; enforcement goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import Metric

from osep import __version__
from osep.act.cycle import CycleReport
from osep.config.knobs import RunSettings
from osep.enforce.figures import Figures, after_cycle, configured, families, faults_family
from osep.errors import OsepError

JOIN_TIMEOUT = 5.0  # seconds a stop waits for the server's thread


class Exporter:
    """The endpoint, serving from the moment it is made; :meth:`observe` after every cycle,
    :meth:`close` at the end."""

    def __init__(self, loaded: RunSettings, log: Any = None, version: str = __version__) -> None:
        self.log = log if log is not None else structlog.get_logger("osep")
        self.figures = configured(Figures(version), loaded.daemon.dry_run, loaded.interval)
        self.faults = 0
        self._lock = threading.Lock()  # for the count of faults, which the server's threads add to
        self.address, self.asked = loaded.daemon.metrics_address, loaded.daemon.metrics_port
        self._unmoved = (self.address, self.asked)  # the last setting said to wait for a restart
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(self))
        try:
            self._server, self._thread = start_http_server(self.asked, addr=self.address, registry=registry)
        except OSError as exc:  # the port taken, an address not this machine's, a name not found
            why = (exc.strerror or str(exc)).rstrip(".")
            raise OsepError(f"cannot serve metrics on {self.address}, metrics port {self.asked}: "
                            f"{why[:1].lower()}{why[1:]}") from None
        # A connection the server could not handle is the endpoint's fault, logged: not a traceback
        # on stderr, which is the command's.
        self._server.handle_error = self._handle_error  # type: ignore[method-assign]
        self.port: int = self._server.server_port  # the one the system chose, for port 0
        self._closed = False
        self.log.info("metrics_serving", address=self.address, port=self.port)

    def observe(self, report: CycleReport | None, stood_aside: bool, loaded: RunSettings, now: float) -> None:
        """Put in place the figures after one cycle (``report`` None: it failed), whose settings
        were ``loaded`` and which ended at ``now`` (epoch seconds). Never raises."""
        try:
            figures = configured(self.figures, loaded.daemon.dry_run, loaded.interval)
            self.figures = after_cycle(figures, report, stood_aside, now)
            self._moved(loaded)
        except Exception:  # noqa: BLE001 - the endpoint's fault; the cycle is done and stands
            self.fault("taking in a cycle")

    def _moved(self, loaded: RunSettings) -> None:
        """A reload that moves the endpoint (or turns it off) takes effect at the next start: said
        once per new setting."""
        wanted = (loaded.daemon.metrics_address, loaded.daemon.metrics_port)
        if wanted not in (self._unmoved, (self.address, self.asked)):
            self.log.warning("metrics_not_moved", address=wanted[0], port=wanted[1],
                             serving=f"{self.address} port {self.port}",
                             meaning="OSEP_METRICS_PORT and OSEP_METRICS_ADDRESS take effect when osep "
                                     "starts again")
        self._unmoved = wanted

    def fault(self, during: str) -> None:
        """Count and log a fault of the endpoint's (called from an ``except`` block)."""
        with self._lock:
            self.faults += 1
        self.log.error("metrics_failed", during=during, consequence="enforcement goes on",
                       exc_info=True)

    def _handle_error(self, request: Any, client_address: Any) -> None:
        self.fault(f"answering {client_address[0] if client_address else 'a client'}")

    def close(self) -> None:
        """Stop serving and let the port go."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(JOIN_TIMEOUT)


class _Collector:
    """What the registry asks at every scrape: the families of the figures in place."""

    def __init__(self, exporter: Exporter) -> None:
        self._exporter = exporter

    def collect(self) -> Iterable[Metric]:
        exporter = self._exporter
        try:
            return families(exporter.figures, exporter.faults)
        except Exception:  # noqa: BLE001 - a scrape that says so rather than one that breaks
            exporter.fault("making the figures of a scrape")
            return [faults_family(exporter.faults)]


def start(loaded: RunSettings, once: bool, log: Any = None) -> Exporter | None:
    """The endpoint ``loaded`` asks for, serving; None when it asks for none, or with ``once``.
    :class:`OsepError` (one line) when its port cannot be listened on."""
    port = loaded.daemon.metrics_port
    if not port:
        return None
    if once:
        (log if log is not None else structlog.get_logger("osep")).info(
            "metrics_not_served", port=port,
            reason="a run of one cycle (--once) is over before Prometheus would scrape it")
        return None
    return Exporter(loaded, log)

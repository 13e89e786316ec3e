"""The Prometheus listener on ``prometheus_address``:``prometheus_port`` (ScyllaDB's 9180).

ScyllaDB's monitoring stack scrapes ``/metrics`` there, without credentials; this serves the
same body as the REST API's ``/metrics`` (``metrics.NodeMetrics``: ScyllaDB's transport names and
ours). Like ScyllaDB's, it carries counts only, never table data, and takes no authentication:
keep ``prometheus_address`` on a private interface.
"""

from __future__ import annotations

import logging

from aiohttp import web

from tabletdb.node.admin.metrics import NodeMetrics

log = logging.getLogger(__name__)


class PrometheusServer:
    def __init__(self, metrics: NodeMetrics, address: str, port: int) -> None:
        self._metrics = metrics
        self.address = address
        self.port = port
        self.app = web.Application()
        self.app.add_routes([web.get("/metrics", self._scrape)])
        self._runner: web.AppRunner | None = None

    async def _scrape(self, request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.render(), headers={"Content-Type": self._metrics.content_type})

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.address, self.port, reuse_address=True).start()
        log.info("Prometheus metrics listening address=%s port=%d", self.address, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

"""A failing backup/restore REST call answers with one line the client can print, not
aiohttp's "Server got itself in trouble"; the client keeps it on one line too."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from tabletdb.node.admin.rest_snapshots import _readable
from tabletdb.spark.backup_rest import NodeApi
from tabletdb.storage.tablet_store import StorageError


async def _fails(request: web.Request) -> web.Response:
    raise StorageError("cannot open tablet file data/ks/t/tablet-0.db read-only: unable to open")


async def _refuses(request: web.Request) -> web.Response:
    raise web.HTTPBadRequest(text="snapshot tag must be 1-128 of [A-Za-z0-9._-]")


def _call(path: str) -> tuple[int, str]:
    async def run() -> tuple[int, str]:
        app = web.Application()
        app.router.add_post("/fails", _readable(_fails))
        app.router.add_post("/refuses", _readable(_refuses))
        async with TestClient(TestServer(app)) as client:
            response = await client.post(path)
            return response.status, await response.text()

    return asyncio.run(run())


def test_an_unexpected_error_is_one_line_naming_the_error_and_the_call() -> None:
    status, text = _call("/fails")
    assert status == 500
    assert text == (
        "StorageError on POST /fails: cannot open tablet file data/ks/t/tablet-0.db read-only: unable to open"
    )


def test_refusals_pass_through_unchanged() -> None:
    assert _call("/refuses") == (400, "snapshot tag must be 1-128 of [A-Za-z0-9._-]")


def test_the_client_names_the_node_and_keeps_a_multi_line_body_on_one_line() -> None:
    error = NodeApi("127.0.0.9", 1)._failed("POST", "/storage_service/snapshots", "HTTP 500: a\n\nb\n")
    assert str(error) == "node 127.0.0.9:1: POST /storage_service/snapshots: HTTP 500: a b"

"""A streamed answer (opt `STREAMED`, as GET /v1/events/stream): counted once when opened,
its body passed through as written (no buffering, no cache, no ETag), refunded when it
starts with a failure."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from litestar import Litestar, Router, get
from litestar.response import Stream
from litestar.testing import AsyncTestClient

from propdata.accounts import endpoints as account_endpoints
from propdata.accounts.middleware import STREAMED, MeteringMiddleware
from propdata.app import DEPENDENCIES, build_services
from propdata.errors import NotFound, exception_handlers
from tests.conftest import Fresh, create_key, settings_for


@get("/streamed", opt=STREAMED)
async def streamed() -> Stream:
    async def parts() -> AsyncIterator[bytes]:
        for n in range(3):
            yield f"data: {n}\n\n".encode()

    return Stream(parts(), media_type="text/event-stream")


@get("/refused", opt=STREAMED)
async def refused() -> Stream:
    raise NotFound("No such stream.")


async def test_a_stream_counts_once_and_passes_through(fresh: Fresh) -> None:
    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        app.state.services = await build_services(settings_for(fresh.store, cache_ttl=60))
        yield
        await app.state.services.close()

    handlers = [streamed, refused, *account_endpoints.HANDLERS]
    router = Router("/v1", route_handlers=handlers, middleware=[MeteringMiddleware()])
    app = Litestar([router], dependencies=DEPENDENCIES, exception_handlers=exception_handlers(),
                   lifespan=[lifespan])  # fmt: skip
    headers = {"Authorization": f"Bearer {await create_key(fresh.store, 'free')}"}
    async with AsyncTestClient(app=app) as client:
        for _ in range(2):  # the second is not a cached answer either
            answer = await client.get("/v1/streamed", headers=headers)
            assert answer.status_code == 200, answer.text
            assert answer.text == "data: 0\n\ndata: 1\n\ndata: 2\n\n"
            assert "etag" not in answer.headers
        assert (await client.get("/v1/refused", headers=headers)).status_code == 404
        status = (await client.get("/v1/auth/status", headers=headers)).json()["data"]
        assert status["usage"]["minute"]["used"] == 2  # counted once each; the 404 refunded

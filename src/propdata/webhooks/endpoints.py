"""HTTP endpoints of /v1/webhooks: endpoints, their secrets, tests, deliveries and replays."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, delete, get, patch, post
from litestar.params import JSONBody

from propdata.accounts.middleware import MANAGED
from propdata.accounts.schemas import ApiKey
from propdata.api import paging
from propdata.api.dependencies import Injected
from propdata.api.managed import managed_errors
from propdata.api.openapi import RATE_HEADERS, documented
from propdata.api.params import PageLimit, PageOffset, path_parameter
from propdata.api.schemas import PageMeta
from propdata.errors import (
    Conflict,
    InvalidParameter,
    NotFound,
    PlanLimitReached,
    RateLimitExceeded,
)
from propdata.webhooks.addresses import refused
from propdata.webhooks.schemas import (
    DeliveriesResponse,
    EndpointChange,
    EndpointResponse,
    EndpointsResponse,
    NewEndpoint,
    NewEndpointAnswer,
    NewEndpointResponse,
    Queued,
    QueuedResponse,
    Replay,
    Rotation,
    Secret,
    SecretResponse,
)
from propdata.webhooks.service import WebhookService, endpoint_view

ENDPOINT_ID = r"^[A-Za-z0-9_-]{1,100}$"
EndpointId = Annotated[str, path_parameter(
    "Webhook endpoint id (wh_ and 24 letters or digits)", "wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze",
    pattern=ENDPOINT_ID, max_length=100)]  # fmt: skip
_MANAGE: dict[str, Any] = {**MANAGED}
"""Managing webhooks is never counted, but at most 60 such requests a minute an owner
(contract.md "Metering")."""
EventId = Annotated[str, path_parameter(
    "The event's id (evt_...), as its deliveries list it", "evt_0123456789abcdefghijklmnop",
    pattern=ENDPOINT_ID, max_length=100)]  # fmt: skip
_NOT_FOUND = NotFound("No webhook endpoint wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze.")
_FULL = Conflict("This endpoint has 10,000 deliveries waiting, as many as it may: wait for them"
                 " to be attempted (GET its deliveries to follow them).")  # fmt: skip
_BAD_URL = InvalidParameter(
    "url", f"Deliveries cannot go to this URL: {refused('10.0.0.5 is private')}."
)


def _common(
    summary: str, operation_id: str, *statuses: int, examples: list[Any] | None = None,
    paged: bool = False,
) -> dict[str, Any]:  # fmt: skip
    return {
        "opt": {**_MANAGE, "paged": True} if paged else _MANAGE,
        "responses": managed_errors(*statuses, examples=examples),
        **documented("webhooks", summary, operation_id, headers=RATE_HEADERS),
    }


@post("/webhooks", status_code=201,
      **_common("Create a webhook endpoint", "createWebhook", 403, 413,
                examples=[_BAD_URL, PlanLimitReached(
                    "The Free plan allows 1 webhook endpoint; the Developer plan allows 5.")]))  # fmt: skip
async def create_webhook(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], data: JSONBody[NewEndpoint]
) -> NewEndpointResponse:
    """Make an endpoint the owner's events are POSTed to; its signing secret is shown this once."""
    row, secret = await webhooks.create(key, data)
    view = endpoint_view(row)
    fields = {name: getattr(view, name) for name in view.__struct_fields__}
    return NewEndpointResponse(data=NewEndpointAnswer(**fields, secret=secret))


@get("/webhooks", **_common("List webhook endpoints", "listWebhooks", paged=True))
async def list_webhooks(
    webhooks: Injected[WebhookService],
    key: Injected[ApiKey],
    request: Request[Any, Any, Any],
    limit: PageLimit = None,
    offset: PageOffset = 0,
) -> EndpointsResponse:
    """List the owner's webhook endpoints, oldest first (paged)."""
    size = paging.applied_page_size(request.scope)
    total, rows = await webhooks.page(key, size, offset)
    return EndpointsResponse(
        meta=PageMeta(total=total, limit=size, offset=offset),
        data=[endpoint_view(row) for row in rows],
    )


@get("/webhooks/{id:str}", **_common("Get a webhook endpoint", "getWebhook", 404,
                                     examples=[_NOT_FOUND]))  # fmt: skip
async def get_webhook(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], id: EndpointId
) -> EndpointResponse:
    """Return one of the owner's webhook endpoints."""
    return EndpointResponse(data=endpoint_view(await webhooks.get(key, id)))


@patch("/webhooks/{id:str}", **_common("Change a webhook endpoint", "updateWebhook", 404, 413,
                                       examples=[_NOT_FOUND, _BAD_URL]))  # fmt: skip
async def update_webhook(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], id: EndpointId,
    data: JSONBody[EndpointChange],
) -> EndpointResponse:  # fmt: skip
    """Change an endpoint's URL, filters, description or status (enabled again, it is sent
    what arrived meanwhile, oldest first)."""
    return EndpointResponse(data=endpoint_view(await webhooks.change(key, id, data)))


@delete("/webhooks/{id:str}", status_code=204,
        **_common("Delete a webhook endpoint", "deleteWebhook", 404, examples=[_NOT_FOUND]))  # fmt: skip
async def delete_webhook(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], id: EndpointId
) -> None:
    """Delete an endpoint and its deliveries."""
    await webhooks.delete(key, id)


@post("/webhooks/{id:str}/rotate-secret", status_code=200,
      **_common("Rotate an endpoint's signing secret", "rotateWebhookSecret", 404, 413,
                examples=[_NOT_FOUND]))  # fmt: skip
async def rotate_secret(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], id: EndpointId,
    data: JSONBody[Rotation | None] = None,
) -> SecretResponse:  # fmt: skip
    """Issue a new signing secret; the old one goes on signing beside it for graceSeconds."""
    grace = int((data or Rotation()).grace_seconds)
    return SecretResponse(data=Secret(secret=await webhooks.rotate(key, id, grace)))


@post("/webhooks/{id:str}/test", status_code=202,
      **_common("Send a test event", "testWebhook", 404, 409, examples=[_NOT_FOUND, _FULL]))  # fmt: skip
async def test_webhook(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], id: EndpointId
) -> Response[QueuedResponse]:
    """Deliver a `webhook.test` event to this endpoint alone."""
    await webhooks.test(key, id)
    return Response(QueuedResponse(data=Queued(queued=1)), status_code=202)


@get("/webhooks/{id:str}/deliveries",
     **_common("List an endpoint's delivery attempts", "listWebhookDeliveries", 404,
               examples=[_NOT_FOUND], paged=True))  # fmt: skip
async def list_deliveries(
    webhooks: Injected[WebhookService],
    key: Injected[ApiKey],
    request: Request[Any, Any, Any],
    id: EndpointId,
    limit: PageLimit = None,
    offset: PageOffset = 0,
) -> DeliveriesResponse:
    """List an endpoint's delivery attempts, newest first (paged): a row per attempt made
    (succeeded or failed, with its answer) and one per delivery waiting for its next attempt
    (pending, with when it is due)."""
    size = paging.applied_page_size(request.scope)
    total, rows = await webhooks.deliveries(key, id, size, offset)
    return DeliveriesResponse(meta=PageMeta(total=total, limit=size, offset=offset), data=rows)


@post("/webhooks/{id:str}/deliveries/{eventId:str}/resend", status_code=202,
      **_common("Send an event again", "resendWebhookDelivery", 404, 409, examples=[
          _NOT_FOUND, NotFound("No delivery of event evt_0123456789abcdefghijklmnop to webhook"
                               " endpoint wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze."), _FULL]))  # fmt: skip
async def resend_delivery(
    webhooks: Injected[WebhookService], key: Injected[ApiKey], id: EndpointId, eventId: EventId
) -> Response[QueuedResponse]:
    """Deliver an event the endpoint was sent once more, with the same `webhook-id`
    (`webhook.test` events included); one already waiting for its next attempt is made due
    now instead."""
    await webhooks.resend(key, id, eventId)
    return Response(QueuedResponse(data=Queued(queued=1)), status_code=202)


@post("/webhooks/{id:str}/replay", status_code=202,
      **_common("Deliver kept events again", "replayWebhook", 404, 409, 413, examples=[
          _NOT_FOUND, InvalidParameter("since", "'since' is not an event cursor: pass"
                                       " meta.nextCursor (or an event's stream id) as it came."),
          Conflict("A replay of webhook endpoint wh_4x9QmT2s8Lr5Vb0cN7aYk3Ze is still being"
                   " delivered: ask again once its deliveries are done (GET its deliveries to"
                   " follow them)."),
          RateLimitExceeded("At most 10 replays a day; retry after 3600 seconds.")]))  # fmt: skip
async def replay_webhook(
    webhooks: Injected[WebhookService],
    key: Injected[ApiKey],
    id: EndpointId,
    data: JSONBody[Replay],
) -> QueuedResponse:
    """Deliver again the kept events after `since` that passed to this endpoint and pass its
    filters (the newest, as many as its 10,000 waiting deliveries leave room for; none already
    waiting). One replay of an endpoint at a time, 10 an account a day."""
    return QueuedResponse(data=Queued(queued=await webhooks.replay(key, id, data.since)))


HANDLERS = [
    create_webhook, list_webhooks, get_webhook, update_webhook, delete_webhook, rotate_secret,
    test_webhook, list_deliveries, resend_delivery, replay_webhook,
]  # fmt: skip

"""One error shape for every status; X-Request-Id everywhere; 404 and 405 for paths and methods."""

from __future__ import annotations

from typing import Any

import pytest

from propdata.errors import ErrorBody


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert error["code"] == code and error["status"] == status
    assert isinstance(error["message"], str) and error["message"]
    assert error["requestId"] == response.headers["x-request-id"]
    allowed = {"code", "message", "status", "requestId"} | (
        {"parameter"} if status == 400 else {"candidates"} if status in (404, 409) else set()
    )
    assert set(error) <= allowed
    if status == 400:
        assert "parameter" in error
    return error


async def test_400_shape(client: Any, auth: dict[str, str]) -> None:
    assert_error(await client.get("/v1/properties?limit=0", headers=auth), 400, "invalid_parameter")


async def test_401_shape(client: Any) -> None:
    assert_error(await client.get("/v1/properties"), 401, "missing_api_key")


async def test_404_shape_for_unknown_ids_and_paths(client: Any, auth: dict[str, str]) -> None:
    assert_error(await client.get("/v1/properties/zzz", headers=auth), 404, "not_found")
    assert_error(await client.get("/v1/nothing-here", headers=auth), 404, "not_found")
    assert_error(await client.get("/v2/properties", headers=auth), 404, "not_found")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
async def test_405_for_every_method_but_get_and_head(
    client: Any, auth: dict[str, str], method: str
) -> None:
    response = await client.request(method, "/v1/properties/t-000", headers=auth)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET, HEAD"


async def test_head_answers_like_get_without_a_body(client: Any, auth: dict[str, str]) -> None:
    get = await client.get("/v1/properties/t-000", headers=auth)
    head = await client.head("/v1/properties/t-000", headers=auth)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


async def test_409_names_the_zip_codes(client: Any, auth: dict[str, str]) -> None:
    params = {"streetAddress": "5 Broadway", "city": "New York", "state": "NY"}
    error = assert_error(
        await client.get("/v1/properties/lookup", params=params, headers=auth),
        409,
        "ambiguous_address",
    )
    assert "10001" in error["message"] and "10002" in error["message"]
    assert [c["id"] for c in error["candidates"]] == ["t-040", "t-041"]
    params["zipCode"] = "10002"
    response = await client.get("/v1/properties/lookup", params=params, headers=auth)
    assert response.status_code == 200 and response.json()["data"]["id"] == "t-041"


async def test_500_names_the_request_id_without_a_trace(client: Any, auth: dict[str, str]) -> None:
    from propdata.errors import internal_error_handler

    class Req:
        scope: dict[str, Any] = {"state": {}}

    response = internal_error_handler(Req(), RuntimeError("secret detail"))  # type: ignore[arg-type]
    body = response.content.error
    assert isinstance(body, ErrorBody)
    assert body.code == "internal_error" and body.status == 500
    assert body.requestId in body.message and "secret detail" not in body.message


async def test_every_response_has_a_request_id(client: Any, auth: dict[str, str]) -> None:
    ids = set()
    for path in (
        "/health",
        "/v1/properties/t-000",
        "/v1/nope",
        "/openapi.json",
        "/v1/properties?limit=x",
    ):
        response = await client.get(path, headers=auth)
        ids.add(response.headers["x-request-id"])
    assert len(ids) == 5


async def test_health(client: Any) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["checks"]["database"] == "ok"
    assert set(body["loops"]) == {
        "wakeups", "searchIndex", "eventStream", "ageing", "feedPruning", "producer",
        "dispatcher",
    }  # fmt: skip
    assert set(body["loops"].values()) == {"ok"}

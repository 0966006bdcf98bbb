"""GET /v1/exports and a snapshot's files over HTTP: Pro and Enterprise only, the list never
counted, each file streamed and counted once, with ETag, Range and Content-Length; bad ids
and names are the contract's 404. Both stores."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from propdata.app import HeadAsGet, create_app
from propdata.exports.schemas import Manifest
from tests.conftest import KeyMaker, Store, settings_for
from tests.exports.test_export import exported


@pytest.fixture(scope="module")
async def served(
    store: Store, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("served")
    made = await exported(store, root, "csv", "parquet")
    older, newer = made["csv"], made["parquet"]
    app = HeadAsGet(create_app(settings_for(store, cache_ttl=0, export_dir=str(root))))
    async with AsyncTestClient(app=app) as client:  # type: ignore[arg-type]
        yield {"client": client, "root": root, "older": older, "newer": newer}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def test_the_list_is_for_pro_and_enterprise_and_never_counted(
    served: dict[str, Any], make_key: KeyMaker
) -> None:
    client = served["client"]
    for plan in ("free", "developer"):
        answer = await client.get("/v1/exports", headers=bearer(await make_key(plan)))
        assert answer.status_code == 403
        error = answer.json()["error"]
        assert error["code"] == "plan_limit_reached" and "Pro" in error["message"]
    pro = bearer(await make_key("pro"))
    first = await client.get("/v1/exports", headers=pro)
    second = await client.get("/v1/exports", headers=pro)
    assert first.status_code == second.status_code == 200
    assert first.headers["X-RateLimit-Remaining"] == second.headers["X-RateLimit-Remaining"]
    listed = first.json()["data"]
    assert [m["id"] for m in listed] == [served["newer"].id, served["older"].id]
    newer: Manifest = served["newer"]
    assert listed[0]["feedCursor"] == newer.feed_cursor
    assert listed[0]["dataVersion"] == newer.data_version
    assert {f["name"] for f in listed[0]["files"]} == {f.name for f in newer.files}
    enterprise = await client.get("/v1/exports", headers=bearer(await make_key("enterprise")))
    assert enterprise.status_code == 200


async def test_a_file_streams_whole_with_its_checksum_and_counts_once(
    served: dict[str, Any], make_key: KeyMaker
) -> None:
    client = served["client"]
    auth = bearer(await make_key("pro"))
    for manifest, media in ((served["newer"], "application/vnd.apache.parquet"),
                            (served["older"], "text/csv")):  # fmt: skip
        listed = manifest.files[0]
        url = f"/v1/exports/{manifest.id}/files/{listed.name}"
        answer = await client.get(url, headers=auth)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith(media)
        assert int(answer.headers["content-length"]) == listed.bytes == len(answer.content)
        assert hashlib.sha256(answer.content).hexdigest() == listed.sha256
        assert answer.headers["etag"] == f'"{listed.sha256}"'
        assert answer.content == (Path(served["root"]) / manifest.id / listed.name).read_bytes()
        again = await client.get(url, headers=auth)
        remaining = int(answer.headers["X-RateLimit-Remaining"])
        assert int(again.headers["X-RateLimit-Remaining"]) == remaining - 1
        unchanged = await client.get(url, headers={**auth, "If-None-Match": answer.headers["etag"]})
        assert unchanged.status_code == 304 and unchanged.content == b""


async def test_ranges_resume_a_download_and_past_the_end_is_416(
    served: dict[str, Any], make_key: KeyMaker
) -> None:
    client = served["client"]
    auth = bearer(await make_key("enterprise"))
    manifest: Manifest = served["newer"]
    listed = max(manifest.files, key=lambda f: f.bytes)
    url = f"/v1/exports/{manifest.id}/files/{listed.name}"
    whole = (Path(served["root"]) / manifest.id / listed.name).read_bytes()
    part = await client.get(url, headers={**auth, "Range": "bytes=0-99"})
    assert part.status_code == 206
    assert part.content == whole[:100] and part.headers["content-length"] == "100"
    assert part.headers["content-range"] == f"bytes 0-99/{listed.bytes}"
    rest = await client.get(url, headers={**auth, "Range": "bytes=100-",
                                          "If-Range": part.headers["etag"]})  # fmt: skip
    assert rest.status_code == 206 and part.content + rest.content == whole
    tail = await client.get(url, headers={**auth, "Range": "bytes=-10"})
    assert tail.status_code == 206 and tail.content == whole[-10:]
    stale = await client.get(url, headers={**auth, "Range": "bytes=100-", "If-Range": '"x"'})
    assert stale.status_code == 200 and stale.content == whole
    past = await client.get(url, headers={**auth, "Range": f"bytes={listed.bytes}-"})
    assert past.status_code == 416
    assert past.headers["content-range"] == f"bytes */{listed.bytes}"
    assert past.json()["error"]["code"] == "range_not_satisfiable"
    assert past.json()["error"]["status"] == 416


@pytest.mark.parametrize(
    "path",
    [
        "{id}/files/properties/../manifest.json",
        "{id}/files/../../../../etc/passwd",
        "{id}/files/%2e%2e/%2e%2e/etc/passwd",
        "{id}/files/manifest.json",
        "{id}/files/properties/state=ZZ/part-0.parquet",
        "{id}/files//etc/passwd",
        "..%2f..%2fetc/files/passwd",
        "20991231T000000000Z-000000/files/markets.parquet",
        "not-an-id/files/markets.parquet",
    ],
)
async def test_unknown_or_escaping_paths_are_the_contract_404(
    served: dict[str, Any], make_key: KeyMaker, path: str
) -> None:
    client = served["client"]
    auth = bearer(await make_key("pro"))
    answer = await client.get("/v1/exports/" + path.format(id=served["newer"].id), headers=auth)
    assert answer.status_code == 404, answer.text
    error = answer.json()["error"]
    assert error["code"] == "not_found" and error["status"] == 404
    assert "root:" not in answer.text  # nothing of the file outside is ever sent


async def test_a_developer_key_may_not_download(served: dict[str, Any], make_key: KeyMaker) -> None:
    manifest: Manifest = served["newer"]
    answer = await served["client"].get(
        f"/v1/exports/{manifest.id}/files/{manifest.files[0].name}",
        headers=bearer(await make_key("developer")),
    )
    assert answer.status_code == 403 and "Pro" in answer.json()["error"]["message"]


async def test_the_openapi_document_describes_both(served: dict[str, Any]) -> None:
    document = (await served["client"].get("/openapi.json")).json()
    assert "/v1/exports" in document["paths"]
    files = document["paths"]["/v1/exports/{exportId}/files/{name}"]["get"]
    assert {"200", "206", "403", "404", "416"} <= set(files["responses"])

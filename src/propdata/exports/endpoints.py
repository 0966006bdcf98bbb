"""HTTP endpoints of exports: GET /v1/exports and a snapshot's files, streamed with ETag and
Range."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import anyio
from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.response import Stream

from propdata.accounts.middleware import STREAMED
from propdata.accounts.schemas import ApiKey
from propdata.api.dependencies import Injected
from propdata.api.openapi import documented, errors
from propdata.api.params import path_parameter
from propdata.errors import NotFound, RangeNotSatisfiable
from propdata.exports.schemas import MEDIA_TYPE, ExportsResponse
from propdata.exports.service import ExportService, may_export, refusal
from propdata.kit.conditional import none_match

CHUNK = 1 << 20
"""Bytes a read of a file being sent."""
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_PRO_ONLY = refusal("developer")
assert _PRO_ONLY is not None
ExportId = Annotated[str, path_parameter(
    "The snapshot's id (GET /v1/exports lists them)", "20261128T060000000Z-3f9a1c",
    pattern=r"^[A-Za-z0-9_-]+$", min_length=1, max_length=64)]  # fmt: skip
FileName = Annotated[str, path_parameter(
    "A file's name as the snapshot's manifest lists it (slashes as they are)",
    "properties/state=TX/part-0.parquet",
    pattern=r"^[A-Za-z0-9._=/-]+$", min_length=1, max_length=300)]  # fmt: skip


@get(
    "/exports",
    opt={"metered": False},
    responses=errors(403, metered=False, examples=[_PRO_ONLY]),
    **documented(
        "exports",
        "Bulk export snapshots, newest first (Pro and Enterprise; never counted)",
        "listExports",
        headers=None,
    ),
)
async def list_exports(exports: Injected[ExportService], key: Injected[ApiKey]) -> ExportsResponse:
    """List the snapshots of the whole data set, each with its manifest, newest first.

    Load one (every file's sha256 checked), then follow GET /v1/properties/changes from its
    feedCursor to stay in step: no change is missed or seen twice.
    """
    may_export(key.plan)
    return ExportsResponse(data=await anyio.to_thread.run_sync(exports.manifests))


@get(
    "/exports/{exportId:str}/files/{name:path}",
    opt=STREAMED,
    responses={
        200: ResponseSpec(
            bytes,
            media_type="application/vnd.apache.parquet",
            generate_examples=False,
            description="The whole file (`application/vnd.apache.parquet` or `text/csv`), with"
            " its ETag (its sha256) and Content-Length.",
        ),
        206: ResponseSpec(
            bytes,
            media_type="application/vnd.apache.parquet",
            generate_examples=False,
            description="The bytes a `Range: bytes=start-end` asked for, with Content-Range.",
        ),
        **errors(
            403,
            404,
            416,
            metered=True,
            conditional=True,
            examples=[
                _PRO_ONLY,
                NotFound(
                    "Export '20261128T060000000Z-3f9a1c' has no file 'properties/../x';"
                    " its manifest lists its files."
                ),
                RangeNotSatisfiable("The range starts at byte 9000000 of a file of 1500000 bytes."),
            ],
        ),
    },
    **documented(
        "exports",
        "One file of a snapshot, streamed (Range and If-None-Match honoured)",
        "getExportFile",
        headers=None,
    ),
)
async def get_export_file(
    request: Request[Any, Any, Any],
    exports: Injected[ExportService],
    key: Injected[ApiKey],
    exportId: ExportId,
    name: FileName,
) -> Response[Any]:
    """Download one file a snapshot's manifest lists; counted as one request.

    A download broken off goes on with `Range: bytes=<bytes you have>-` (and `If-Range:
    <ETag>`); the ETag is the file's sha256 in quotes.
    """
    may_export(key.plan)
    return await file_response(request, exports, exportId, name)


async def file_response(
    request: Request[Any, Any, Any], exports: ExportService, export_id: str, name: str
) -> Response[Any]:
    """The answer of one file of a snapshot: whole (200), a range (206), or 304, streamed
    with its ETag; the API's download and the portal's link both answer with it."""
    path, listed, fmt = await anyio.to_thread.run_sync(exports.file, export_id, name.lstrip("/"))
    tag = f'"{listed.sha256}"'
    size = listed.bytes
    headers = {"ETag": tag, "Accept-Ranges": "bytes", "Cache-Control": "private, max-age=86400"}
    matched = _header(request, "if-none-match")
    if none_match(matched.encode("latin-1") if matched else None, tag):
        return Response(b"", status_code=304, headers=headers)
    wanted = _range(_header(request, "range"), size)
    if_range = _header(request, "if-range")
    if wanted is not None and if_range is not None and if_range.encode() != tag.encode():
        wanted = None  # the file changed since the first part was read: send it whole
    start, end, status = 0, size - 1, 200
    if wanted is not None:
        start, end = wanted
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
    headers["Content-Length"] = str(end - start + 1)
    return Stream(
        _chunks(path, start, end + 1), status_code=status, media_type=MEDIA_TYPE[fmt],
        headers=headers,
    )  # fmt: skip


def _header(request: Request[Any, Any, Any], name: str) -> str | None:
    value = request.headers.get(name)
    return value if value else None


def _range(header: str | None, size: int) -> tuple[int, int] | None:
    """The (first, last) byte of a single `bytes=` range; None for no range or one this does
    not serve as a range (several ranges, another unit: the whole file is sent instead, as
    RFC 9110 allows). A range starting past the end: 416."""
    if header is None:
        return None
    found = _RANGE.match(header.strip())
    if found is None or found.group(1) == found.group(2) == "":
        return None
    first, last = found.group(1), found.group(2)
    if first == "":  # the last N bytes
        n = int(last)
        if n == 0:
            raise _unsatisfiable(size, size)
        return max(0, size - n), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size:
        raise _unsatisfiable(start, size)
    if end < start:
        return None
    return start, end


def _unsatisfiable(start: int, size: int) -> RangeNotSatisfiable:
    return RangeNotSatisfiable(
        f"The range starts at byte {start} of a file of {size} bytes.",
        headers={"Content-Range": f"bytes */{size}"},
    )


async def _chunks(path: Path, start: int, stop: int) -> AsyncIterator[bytes]:
    """The file's bytes from `start` to before `stop`, CHUNK at a time, read on a thread."""
    async with await anyio.open_file(path, "rb") as f:
        await f.seek(start)
        left = stop - start
        while left > 0:
            chunk = await f.read(min(CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
            yield chunk


HANDLERS = [list_exports, get_export_file]

"""What a browser gets from the service: the /docs page and the static assets of its pages.

Every script, style and font is served from `static/` by the service itself (contract.md:
no third-party origins), and every HTML page carries a Content-Security-Policy that allows
only the service's own origin (`security_headers`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from litestar import Request, Router
from litestar.datastructures import CacheControlHeader
from litestar.file_system import BaseLocalFileSystem
from litestar.openapi.plugins import OpenAPIRenderPlugin
from litestar.static_files import create_static_files_router

if TYPE_CHECKING:
    from litestar.types import PathType
    from litestar.types.file_types import FileInfo

STATIC = Path(str(resources.files("propdata.web").joinpath("static")))
PORTAL_STATIC = Path(str(resources.files("propdata").joinpath("portal/static")))
"""The portal's stylesheet and script (its own folder, served under the same /static)."""
STATIC_PATH = "/static"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline';"
    " script-src 'self'; connect-src 'self'; font-src 'self'; object-src 'none';"
    " base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
"""Only the service's own origin. Inline style attributes are allowed (Swagger UI sets
them); inline scripts are not."""

PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
"""What every HTML page carries (portal.md)."""

_DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>propdata API reference</title>
<link rel="icon" type="image/png" href="{static}/docs/favicon-32x32.png">
<link rel="stylesheet" href="{static}/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{static}/docs/swagger-ui-bundle.js"></script>
<script src="{static}/docs/init.js"></script>
</body>
</html>
"""


class DocsPage(OpenAPIRenderPlugin):
    """GET /docs: Swagger UI, from the service's own copy (swagger-ui-dist 5, Apache-2.0)."""

    def __init__(self) -> None:
        super().__init__(path="/", favicon="", style="")

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return _DOCS_PAGE.format(static=STATIC_PATH).encode()


class _AssetFiles(BaseLocalFileSystem):
    """The local file system, where a name no file can have is simply not there.

    A NUL byte (`/static/%00`) makes `stat` raise ValueError and an overlong name OSError;
    Litestar's static handler only expects FileNotFoundError, so both were 500s.
    """

    async def info(self, path: PathType, **kwargs: Any) -> FileInfo:
        try:
            return await super().info(path, **kwargs)
        except (ValueError, OSError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise FileNotFoundError(str(path)[:200]) from exc


def static_files() -> Router:
    """The assets under /static, cached by browsers for a day."""
    return create_static_files_router(
        path=STATIC_PATH, directories=[STATIC, PORTAL_STATIC], include_in_schema=False, name="static",
        cache_control=CacheControlHeader(max_age=86_400, public=True), file_system=_AssetFiles(),
    )  # fmt: skip

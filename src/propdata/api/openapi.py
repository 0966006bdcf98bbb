"""OpenAPI declarations every operation shares: its error answers and the rate headers."""

from __future__ import annotations

from litestar.datastructures import ResponseHeader
from litestar.openapi.datastructures import ResponseSpec

from propdata.errors import ErrorResponse

_DESCRIPTIONS = {
    400: "A parameter is malformed, out of range, unknown or missing; `parameter` names it.",
    401: "No key, or the key is unknown, malformed or revoked.",
    404: "Nothing matches.",
    409: "The address matches properties in several ZIP codes.",
    429: "Per-minute limit or daily quota exceeded; see Retry-After.",
    503: "A backing store is unreachable.",
}


def errors(*statuses: int, metered: bool = True) -> dict[int, ResponseSpec]:
    """OpenAPI responses for the error statuses an operation can answer (401, 503, and 429
    when the operation is metered)."""
    wanted = sorted({*statuses, 401, 503, *((429,) if metered else ())})
    specs = {
        status: ResponseSpec(data_container=ErrorResponse, description=_DESCRIPTIONS[status])
        for status in wanted
    }
    if metered:
        specs[304] = ResponseSpec(
            data_container=None,
            description="Not Modified: If-None-Match named this answer's ETag. No body;"
            " counted like the 200 it replaces (free when that 200 is a cache hit).",
        )
    return dict(sorted(specs.items()))


RATE_HEADERS = [
    ResponseHeader(name="X-Request-Id", value="req_0123456789abcdef", documentation_only=True,
                   description="Identifier of this request."),
    ResponseHeader(name="X-RateLimit-Limit", documentation_only=True, value="100",
                   description="Requests allowed per minute for the key's plan."),
    ResponseHeader(name="X-RateLimit-Remaining", documentation_only=True, value="99",
                   description="Requests left in the current 60-second window."),
    ResponseHeader(name="X-RateLimit-Reset", documentation_only=True, value="1700000000",
                   description="Unix seconds at which the oldest request in the window expires."),
    ResponseHeader(name="X-Quota-Limit", documentation_only=True, value="10000",
                   description="Requests allowed per rolling 24 hours (absent when unlimited)."),
    ResponseHeader(name="X-Quota-Remaining", documentation_only=True, value="9999",
                   description="Requests left in the rolling 24-hour window (absent when unlimited)."),
    ResponseHeader(name="X-Quota-Reset", documentation_only=True, value="1700086400",
                   description="Unix seconds at which the oldest request in the day window expires."),
    ResponseHeader(name="X-Cache", documentation_only=True, value="MISS",
                   description="HIT when served from the response cache (not counted), else MISS."),
]  # fmt: skip
ANSWER_HEADERS = [
    *RATE_HEADERS,
    ResponseHeader(name="ETag", documentation_only=True,
                   value='"0f343b0931126a20f133d67c2b018a3b"',
                   description="The answer's entity tag (a hash of its bytes): send it back in"
                   " If-None-Match to get 304 Not Modified while the answer is unchanged."),
]  # fmt: skip
"""The headers of a data answer: the rate headers and its ETag."""

"""The errors the client raises: one class per kind of failure, each with the API's fields.

Every error carries `code` (the API's error code), `status` (the HTTP status; None when no
answer came), `request_id` (the answer's `X-Request-Id`, quote it when asking for support),
`message`, `retry_after` (seconds, from `Retry-After`, when the answer had one) and
`rate_limit` (the answer's rate-limit headers). A lookup's NotFoundError and
AmbiguousAddressError add `candidates`: the properties at the street address looked up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from propdata_client.models import Candidate, RateLimit

__all__ = [
    "APIConnectionError",
    "AmbiguousAddressError",
    "AuthenticationError",
    "InvalidParameterError",
    "NotFoundError",
    "PlanLimitError",
    "PropdataError",
    "QuotaExceededError",
    "RateLimitError",
    "ServiceUnavailableError",
    "WebhookVerificationError",
    "error_for",
]


class PropdataError(Exception):
    """Base of every error the client raises."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: int | None = None,
        rate_limit: RateLimit | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.rate_limit = rate_limit

    def __str__(self) -> str:
        where = [f"code={self.code}"]
        if self.status is not None:
            where.append(f"status={self.status}")
        if self.request_id:
            where.append(f"request_id={self.request_id}")
        return f"{self.message} ({', '.join(where)})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r}, status={self.status!r}, request_id={self.request_id!r})"


class APIConnectionError(PropdataError):
    """No answer: the connection failed or timed out (after the retries)."""


class AuthenticationError(PropdataError):
    """401: the key is missing, malformed, unknown or revoked (`code` says which)."""


class _AtAnAddress(PropdataError):
    """An answer that may list `candidates`: up to 5 properties at the street address asked
    for (empty when the store holds none, or for another kind of request)."""

    CODE: ClassVar[str]
    STATUS: ClassVar[int]

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: int | None = None,
        rate_limit: RateLimit | None = None,
        candidates: Sequence[Candidate] = (),
    ) -> None:
        super().__init__(
            message,
            code=code or self.CODE,
            status=status or self.STATUS,
            request_id=request_id,
            retry_after=retry_after,
            rate_limit=rate_limit,
        )
        self.candidates: list[Candidate] = list(candidates)


class NotFoundError(_AtAnAddress):
    """404: no such property, no exact address match, or no market data for the ZIP code.

    After a lookup, `candidates` lists up to 5 properties at the street address (other
    units of it, say) when the store holds any; else it is empty.
    """

    CODE = "not_found"
    STATUS = 404


class InvalidParameterError(PropdataError):
    """400: a parameter is malformed, out of range, unknown or missing; `parameter` names it."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "invalid_parameter",
        status: int | None = 400,
        request_id: str | None = None,
        retry_after: int | None = None,
        rate_limit: RateLimit | None = None,
        parameter: str | None = None,
    ) -> None:
        super().__init__(
            message,
            code=code,
            status=status,
            request_id=request_id,
            retry_after=retry_after,
            rate_limit=rate_limit,
        )
        self.parameter = parameter


_ZIPS = re.compile(r"ZIP codes?:?\s+(\d{5}(?:\s*,\s*\d{5})*)")
_IDS = re.compile(r"\(([^()]*)\)")


class AmbiguousAddressError(_AtAnAddress):
    """409: the address matches several properties.

    `zip_codes` are the candidate ZIP codes (sorted; retry the lookup with one of them);
    when the matches share one ZIP code, `zip_codes` holds it and `property_ids` the
    matching ids (up to 10; add the unit to the street address). The API states them in
    the message; this class reads them from it. `candidates` lists up to 5 of the matching
    properties, with their ids and addresses.
    """

    CODE = "ambiguous_address"
    STATUS = 409

    @property
    def zip_codes(self) -> list[str]:
        zips = _ZIPS.search(self.message)
        return re.findall(r"\d{5}", zips.group(1)) if zips else []

    @property
    def property_ids(self) -> list[str]:
        ids = _IDS.search(self.message) if "ZIP code " in self.message else None
        return [part.strip() for part in ids.group(1).split(",") if part.strip()] if ids else []


class PlanLimitError(PropdataError):
    """403 `plan_limit_reached`: the account holds as many saved searches or webhook
    endpoints as its plan allows; the message names the limit and the plan that raises it."""


class WebhookVerificationError(PropdataError):
    """A webhook's signature, timestamp or headers do not verify (`verify_webhook`): answer
    the request with a 400 and do nothing with it."""

    def __init__(self, message: str, *, code: str = "invalid_webhook") -> None:
        super().__init__(message, code=code)


class RateLimitError(PropdataError):
    """429: the per-minute limit (or the failed-request guard) is exhausted.

    `retry_after` is the number of seconds to wait before the next request can be admitted.
    """


class QuotaExceededError(RateLimitError):
    """429 `quota_exceeded`: the rolling 24-hour quota is used up; `retry_after` can be hours."""


class ServiceUnavailableError(PropdataError):
    """503: a backing store of the service is unreachable; retry after `retry_after`."""


def error_for(
    status: int,
    code: str,
    message: str,
    *,
    request_id: str | None,
    parameter: str | None = None,
    candidates: Sequence[Candidate] = (),
    retry_after: int | None = None,
    rate_limit: RateLimit | None = None,
) -> PropdataError:
    """The error class for an API error answer."""
    answer: dict[str, Any] = {"code": code, "status": status, "request_id": request_id,
                              "retry_after": retry_after, "rate_limit": rate_limit}  # fmt: skip
    if status == 400:
        return InvalidParameterError(message, parameter=parameter, **answer)
    if status == 404 or (status == 409 and code == "ambiguous_address"):
        found = NotFoundError if status == 404 else AmbiguousAddressError
        return found(message, candidates=candidates, **answer)
    kind: type[PropdataError] = PropdataError
    if status == 401:
        kind = AuthenticationError
    elif status == 403 and code == "plan_limit_reached":
        kind = PlanLimitError
    elif status == 429:
        kind = QuotaExceededError if code == "quota_exceeded" else RateLimitError
    elif status == 503:
        kind = ServiceUnavailableError
    return kind(message, **answer)

"""One error type, one JSON shape: {"error": {code, message, status, requestId[, parameter]}}."""

from __future__ import annotations

import logging
import math
import re
import time
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)

from propdata.kit.db import StoreBusy, StoreRejected, StoreUnavailable
from propdata.kit.requests import request_id

log = logging.getLogger("propdata")
ORIGINAL_METHOD = "propdata.method"
_MISSING = re.compile(r"Missing required \w+ parameter '([^']+)'")


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    code: str
    message: str
    status: int
    requestId: str
    parameter: str | None = None


class ErrorResponse(msgspec.Struct):
    """The body of every error answer."""

    error: ErrorBody


class ServiceError(Exception):
    """Base of every error the service answers with; carries its status and code."""

    status = 500
    code = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        parameter: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.parameter = parameter
        self.headers = headers or {}


class InvalidParameter(ServiceError):
    status, code = 400, "invalid_parameter"

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message, parameter=parameter)


class MissingApiKey(ServiceError):
    status, code = 401, "missing_api_key"

    def __init__(
        self, message: str = "Send your key as 'Authorization: Bearer <API_KEY>'."
    ) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class InvalidApiKey(ServiceError):
    status, code = 401, "invalid_api_key"

    def __init__(self, message: str = "The API key is not valid.") -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


class RevokedApiKey(ServiceError):
    status, code = 401, "revoked_api_key"

    def __init__(self, message: str = "The API key has been revoked.") -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


class NotFound(ServiceError):
    status, code = 404, "not_found"


class AmbiguousAddress(ServiceError):
    status, code = 409, "ambiguous_address"


class RateLimitExceeded(ServiceError):
    status, code = 429, "rate_limit_exceeded"


class QuotaExceeded(ServiceError):
    status, code = 429, "quota_exceeded"


class InvalidField(ServiceError):
    """A portal form field the service cannot take (the form is shown again, naming it)."""

    status, code = 400, "invalid_field"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, parameter=field)


class InvalidCredentials(ServiceError):
    status, code = 401, "invalid_credentials"


class Forbidden(ServiceError):
    status, code = 403, "forbidden"


class EmailTaken(ServiceError):
    status, code = 409, "email_taken"


class TooManyAttempts(ServiceError):
    status, code = 429, "too_many_attempts"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class ServiceUnavailable(ServiceError):
    """The service cannot answer this now (not a store outage: those are StoreUnavailable)."""

    status, code = 503, "service_unavailable"


STATUS_CODES = {
    400: "invalid_parameter",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    409: "ambiguous_address",
    429: "rate_limit_exceeded",
    500: "internal_error",
    503: "service_unavailable",
}


def render(
    request: Request[Any, Any, Any],
    status: int,
    code: str,
    message: str,
    parameter: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response[ErrorResponse]:
    body = ErrorBody(
        code=code,
        message=message,
        status=status,
        requestId=request_id(request.scope),
        parameter=parameter,
    )
    return Response(ErrorResponse(error=body), status_code=status, headers=headers)


def service_error_handler(request: Request[Any, Any, Any], exc: ServiceError) -> Response[Any]:
    return render(request, exc.status, exc.code, exc.message, exc.parameter, exc.headers)


def validation_handler(request: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    """Litestar's own parameter validation, rendered in the contract's shape with `parameter`."""
    parameter, message = "query", str(exc.detail)
    extra = exc.extra if isinstance(exc.extra, list) else []
    if extra and isinstance(extra[0], dict):
        # Python names that clash with reserved words end in "_" (state_); the wire name does not.
        parameter = str(extra[0].get("key") or parameter).rstrip("_")
        detail = str(extra[0].get("message") or "")
        message = f"Invalid value for '{parameter}': {detail}" if detail else message
        if "regex" in detail:  # never echo a pattern: say what the parameter takes
            expected = _description(request, parameter) or "another format"
            message = (
                f"Invalid value for '{parameter}'; expected: {expected[:1].lower()}{expected[1:]}."
            )
    missing = _MISSING.search(message)
    if missing:
        parameter = missing.group(1)
        message = f"The query parameter '{parameter}' is required."
    return render(request, 400, "invalid_parameter", message, parameter)


def _description(request: Request[Any, Any, Any], parameter: str) -> str | None:
    """The declared description of a handler's parameter, by its wire name."""
    handler = request.scope.get("route_handler")
    if handler is None:
        return None
    for name, field in handler.parsed_fn_signature.parameters.items():
        definition = field.kwarg_definition
        if (getattr(definition, "name", None) or name) == parameter:
            description = getattr(definition, "description", None)
            return str(description) if description else None
    return None


def http_error_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    if isinstance(exc, NotFoundException):
        return render(request, 404, "not_found", f"No resource at {request.url.path}.")
    if isinstance(exc, MethodNotAllowedException):
        method = request.scope.get("state", {}).get(ORIGINAL_METHOD) or request.method
        return render(
            request, 405, "method_not_allowed",
            f"{method} is not allowed here; use GET.", headers={"Allow": "GET, HEAD"},
        )  # fmt: skip
    status = exc.status_code if exc.status_code in STATUS_CODES else 400
    return render(request, status, STATUS_CODES.get(status, "invalid_parameter"), str(exc.detail))


class _Throttle:
    """At most one log line a second for one kind of repeated error, with how many it
    stands for: an outage at a thousand requests a second is one line a second, not 1,000."""

    def __init__(self) -> None:
        self._last = -math.inf
        self._held = 0

    def due(self) -> int | None:
        """The count to log now (this one and those held back), or None to hold it back."""
        now = time.monotonic()
        if now - self._last < 1.0:
            self._held += 1
            return None
        count, self._last, self._held = self._held + 1, now, 0
        return count


_outage_log = _Throttle()


def unavailable_handler(request: Request[Any, Any, Any], exc: StoreUnavailable) -> Response[Any]:
    busy = isinstance(exc, StoreBusy)
    count = _outage_log.due()
    if count is not None:
        log.error("store %s: %s (request %s%s)", "busy" if busy else "unavailable", exc,
                  request_id(request.scope),
                  f", and {count - 1} more 503s in the last second" if count > 1 else "")  # fmt: skip
    message = (
        "The service is busy; try again shortly."
        if busy
        else "A backing store is unreachable; try again shortly."
    )
    return render(request, 503, "service_unavailable", message, headers={"Retry-After": "5"})


def rejected_handler(request: Request[Any, Any, Any], exc: StoreRejected) -> Response[Any]:
    """A value the store cannot hold or compare: the client's input, so a 400, not a 500."""
    log.warning("store refused a value (request %s): %s", request_id(request.scope), exc)
    path_params = request.scope.get("path_params") or {}
    parameter = next(iter(path_params), "query")
    return render(
        request, 400, "invalid_parameter",
        "A value in this request cannot be searched for; check its characters.", parameter,
    )  # fmt: skip


def internal_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    rid = request_id(request.scope)
    log.exception("unhandled error in request %s", rid, exc_info=exc)
    return render(
        request, 500, "internal_error", f"Internal error; quote request id {rid} when reporting it."
    )


EXCEPTION_HANDLERS: dict[Any, Any] = {
    ServiceError: service_error_handler,
    ValidationException: validation_handler,
    HTTPException: http_error_handler,
    StoreUnavailable: unavailable_handler,
    StoreRejected: rejected_handler,
    Exception: internal_error_handler,
}

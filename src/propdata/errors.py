"""One error type, one JSON shape: {"error": {code, message, status, requestId[, parameter]
[, candidates]}}."""

from __future__ import annotations

import logging
import math
import re
import time
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from propdata.kit.db import StoreBusy, StoreRejected, StoreUnavailable
from propdata.kit.requests import request_id

if TYPE_CHECKING:  # the handlers' types; the module itself loads without Litestar
    from litestar import Request, Response
    from litestar.exceptions import HTTPException, ValidationException

log = logging.getLogger("propdata")
ORIGINAL_METHOD = "propdata.method"
_MISSING = re.compile(r"Missing required \w+ parameter '([^']+)'")


class CandidateAddress(msgspec.Struct, kw_only=True, rename="camel"):
    """The address of a candidate: the ShortAddress shape of lookup and search answers
    (tests/test_errors.py holds the two together)."""

    street_address: str | None
    city: str
    state: str
    zip_code: str


class Candidate(msgspec.Struct, kw_only=True):
    """A property at the street address a lookup named, for the caller to choose from."""

    id: str
    address: CandidateAddress


MAX_CANDIDATES = 5
"""At most this many candidates in an error."""


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    code: str
    message: str
    status: int
    requestId: str
    parameter: str | None = None
    """400 only: the offending parameter's name (absent, never null, on every other answer)."""
    candidates: list[Candidate] | None = None
    """Lookup's 404 and 409 only: up to 5 properties at the street address it named (absent
    when there are none)."""


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
        candidates: Sequence[Candidate] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.parameter = parameter
        self.headers = headers or {}
        self.candidates = list(candidates[:MAX_CANDIDATES])


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


class Conflict(ServiceError):
    """The request clashes with one still under way (a replay of an endpoint while another's
    deliveries wait)."""

    status, code = 409, "conflict"


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


PORTAL_ONLY: tuple[type[ServiceError], ...] = (
    InvalidField, InvalidCredentials, Forbidden, EmailTaken, TooManyAttempts,
)  # fmt: skip
"""The errors only the portal's pages answer (as pages, never as the API's JSON); every other
`ServiceError` is one of the API's answers, each a row of docs/api.md's error table."""


class MethodNotAllowed(ServiceError):
    status, code = 405, "method_not_allowed"


def method_not_allowed(method: str, allowed: Sequence[str] = ("GET", "HEAD")) -> MethodNotAllowed:
    """The 405 a path answers to a method it does not take (most take GET and HEAD alone),
    naming those it takes."""
    taken = [m for m in ALL_METHODS if m in allowed]
    words = [m for m in taken if m != "HEAD"]
    use = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
    return MethodNotAllowed(
        f"{method} is not allowed here; use {use}.", headers={"Allow": ", ".join(taken)}
    )


ALL_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
"""The methods an Allow header names, in the order it names them."""


class PlanLimitReached(ServiceError):
    """A saved search or webhook endpoint beyond the owner's plan; the message names the
    limit and the plan that raises it (`raised_by`, None when only an operator may)."""

    status, code = 403, "plan_limit_reached"

    def __init__(self, message: str, raised_by: str | None = None) -> None:
        super().__init__(message)
        self.raised_by = raised_by


class PayloadTooLarge(ServiceError):
    status, code = 413, "payload_too_large"


def internal_error(rid: str) -> ServiceError:
    """The 500 of a request that failed unexpectedly: the id to quote, no stack trace."""
    return ServiceError(f"Internal error; quote request id {rid} when reporting it.")


class ServiceUnavailable(ServiceError):
    """The service cannot answer this now (not a store outage: those are StoreUnavailable)."""

    status, code = 503, "service_unavailable"


class RangeNotSatisfiable(ServiceError):
    """A Range that starts past a file's end (with `Content-Range: bytes */<size>`)."""

    status, code = 416, "range_not_satisfiable"


STATUS_CODES = {
    400: "invalid_parameter",
    401: "invalid_api_key",
    403: "plan_limit_reached",
    404: "not_found",
    405: "method_not_allowed",
    409: "ambiguous_address",
    413: "payload_too_large",
    416: "range_not_satisfiable",
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
    candidates: list[Candidate] | None = None,
) -> Response[ErrorResponse]:
    from litestar import Response

    body = ErrorBody(
        code=code,
        message=message,
        status=status,
        requestId=request_id(request.scope),
        parameter=parameter,
        candidates=candidates or None,
    )
    return Response(ErrorResponse(error=body), status_code=status, headers=headers)


def service_error_handler(request: Request[Any, Any, Any], exc: ServiceError) -> Response[Any]:
    return render(
        request, exc.status, exc.code, exc.message, exc.parameter, exc.headers, exc.candidates
    )


def validation_handler(request: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    """Litestar's own parameter validation, rendered in the contract's shape with `parameter`.

    The message says what the parameter takes, from its declaration (allowed values, range,
    length, description), never the validator's own wording.
    """
    parameter, said = "query", str(exc.detail)
    extra = exc.extra if isinstance(exc.extra, list) else []
    if extra and isinstance(extra[0], dict):
        # Python names that clash with reserved words end in "_" (state_); the wire name does not.
        parameter = str(extra[0].get("key") or parameter).rstrip("_")
        said = str(extra[0].get("message") or said)
    if extra and isinstance(extra[0], dict) and extra[0].get("source") == "body":
        parameter, message = body_error(str(extra[0].get("key") or ""), said)
        return render(request, 400, "invalid_parameter", message, parameter)
    missing = _MISSING.search(said)
    if missing:
        parameter = missing.group(1)
        message = f"The query parameter '{parameter}' is required."
        return render(request, 400, "invalid_parameter", message, parameter)
    expected = _expected(request, parameter)
    message = (
        f"Invalid value for '{parameter}'; expected: {expected}."
        if expected
        else f"Invalid value for '{parameter}'."
    )
    return render(request, 400, "invalid_parameter", message, parameter)


_BODY_FIELD = re.compile(r"(unknown|missing required) field `([^`]+)`")


def body_error(key: str, said: str) -> tuple[str, str]:
    """The parameter a JSON body's validation error names (dotted for nested fields, no list
    positions) and its message. `key` is where the decoder stood ("data": the body itself)."""
    path = re.sub(r"\[\d+\]", "", key)
    path = "" if path == "data" else path.removeprefix("data.")
    named = _BODY_FIELD.search(said)
    if named:
        path = f"{path}.{named[2]}" if path else named[2]
        if named[1] == "unknown":
            return path, f"Unknown field '{path}' in the request body."
        return path, f"The field '{path}' is required."
    if not path:
        return "body", "The request body must be a JSON object."
    said = said.replace("`", "")
    return path, f"Invalid value for '{path}': {said[:1].lower()}{said[1:]}."


def _field(request: Request[Any, Any, Any], parameter: str) -> Any:
    """The handler's declared parameter of this wire name (a FieldDefinition), or None."""
    handler = request.scope.get("route_handler")
    if handler is None:
        return None
    for name, field in handler.parsed_fn_signature.parameters.items():
        if (getattr(field.kwarg_definition, "name", None) or name.rstrip("_")) == parameter:
            return field
    return None


def _allowed(annotation: Any) -> list[str]:
    """The values of a Literal inside `annotation` (alone or with None); [] for none."""
    if typing.get_origin(annotation) is typing.Literal:
        return [str(value) for value in typing.get_args(annotation)]
    return [value for arg in typing.get_args(annotation) for value in _allowed(arg)]


def _number(value: float) -> str:
    return f"{value:,}" if abs(value) >= 100_000 else f"{value:g}"


def _expected(request: Request[Any, Any, Any], parameter: str) -> str | None:
    """What a parameter takes, in words: its allowed values, its range or its description."""
    field = _field(request, parameter)
    if field is None:
        return None
    return expected(field.annotation, field.kwarg_definition)


def expected(annotation: Any, definition: Any) -> str | None:
    """What a declared parameter (its type, and its QueryParameter or None) takes, in words:
    its allowed values, its range or its description."""
    allowed = _allowed(annotation)
    if allowed:
        return "one of " + ", ".join(allowed)
    kinds = set(typing.get_args(annotation)) or {annotation}
    if kinds & {int, float}:
        low = getattr(definition, "ge", None)
        above = getattr(definition, "gt", None)
        high = getattr(definition, "le", None)
        words = "a whole number" if int in kinds else "a number"
        if above is not None:
            words += f" above {_number(above)}"
        elif low is not None and high is not None:
            return f"{words} from {_number(low)} to {_number(high)}"
        elif low is not None:
            words += f" of at least {_number(low)}"
        if high is not None:
            words += f"{' and' if above is not None else ''} at most {_number(high)}"
        return words
    description = str(getattr(definition, "description", None) or "")
    # "Five-digit ZIP code" reads "five-digit ZIP code"; "ZIP code or ..." keeps its case.
    text = description[:1].lower() + description[1:] if description[1:2].islower() else description
    length = getattr(definition, "max_length", None)
    if length and str(length) not in text:
        text = f"{text} (at most {length} characters)" if text else f"at most {length} characters"
    return text or None


def http_error_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    from litestar.exceptions import MethodNotAllowedException, NotFoundException

    if isinstance(exc, NotFoundException):
        return render(request, 404, "not_found", f"No resource at {request.url.path}.")
    if isinstance(exc, MethodNotAllowedException):
        method = request.scope.get("state", {}).get(ORIGINAL_METHOD) or request.method
        allowed = [m.strip().upper() for m in (exc.headers or {}).get("allow", "").split(",")]
        allowed = [m for m in allowed if m in ALL_METHODS and m != "OPTIONS"]
        if "GET" in allowed and "HEAD" not in allowed:
            allowed.append("HEAD")  # HeadAsGet serves HEAD wherever GET is
        return service_error_handler(
            request, method_not_allowed(method, allowed or ("GET", "HEAD"))
        )
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
    return service_error_handler(request, internal_error(rid))


def exception_handlers() -> dict[Any, Any]:
    """The app's exception handlers: every error answered in the contract's shape."""
    from litestar.exceptions import HTTPException, ValidationException

    return {
        ServiceError: service_error_handler,
        ValidationException: validation_handler,
        HTTPException: http_error_handler,
        StoreUnavailable: unavailable_handler,
        StoreRejected: rejected_handler,
        Exception: internal_error_handler,
    }

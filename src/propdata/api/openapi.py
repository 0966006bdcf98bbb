"""OpenAPI declarations every operation shares: its error answers, their examples, the headers.

The document states exactly what the server sends. Each operation lists every status it can
answer: its own (`errors(404, ...)`), and those any /v1 operation can answer (400 for an
unknown parameter, 401, 429 when metered, 431, 500, 503). Every error answer is the one
`ErrorResponse` shape with a real example; every response names its headers by reference to
`components.headers` (`ApiOperation` puts them on). A method a path does not take gets 405,
which belongs to no operation: it is `components.responses.MethodNotAllowed`, and the
document's introduction names the writes (`methods_note`, from the routes themselves).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from litestar.datastructures import ResponseHeader
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import (
    Example,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Parameter,
    Reference,
    RequestBody,
    Schema,
)
from litestar.openapi.spec.enums import OpenAPIType
from litestar.plugins import OpenAPISchemaPlugin

from propdata.api.guards import unknown_parameter
from propdata.errors import (
    Candidate,
    ErrorBody,
    ErrorResponse,
    InvalidApiKey,
    MissingApiKey,
    QuotaExceeded,
    RateLimitExceeded,
    RevokedApiKey,
    ServiceError,
    ServiceUnavailable,
    internal_error,
    method_not_allowed,
)

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.typing import FieldDefinition

REQUEST_ID = "req_4aac3804e48847c9"
"""The request id of every example: the shape the server gives ('req_' and 16 hex digits)."""

_DESCRIPTIONS = {
    400: "A parameter is malformed, out of range, unknown, repeated or missing; `parameter`"
    " names it.",
    401: "No key (`missing_api_key`), or the key is unknown or malformed (`invalid_api_key`)"
    " or revoked (`revoked_api_key`).",
    403: "The owner's plan allows no more of these (`plan_limit_reached`); the message names"
    " the limit and the plan that raises it.",
    404: "Nothing matches.",
    409: "The address matches several properties (`ambiguous_address`), or what is asked"
    " clashes with what is under way (`conflict`).",
    413: "The request body is over 64 KB (`payload_too_large`).",
    416: "The Range starts past the file's end (`range_not_satisfiable`); Content-Range names"
    " the file's size.",
    429: "Per-minute limit (`rate_limit_exceeded`), daily quota (`quota_exceeded`) or the"
    " failed-request guard exceeded; wait Retry-After seconds.",
    431: "Request headers over 16 KB in total: refused by the server before the API reads"
    " them, and the connection is closed.",
    500: "Never expected: the message names the request id to quote when reporting it.",
    503: "A backing store is unreachable, or the service is busy; retry after Retry-After seconds.",
}


@dataclass(frozen=True)
class _Example:
    """An error body with the status and code of its own answer."""

    status: int
    code: str
    message: str
    parameter: str | None = None
    candidates: tuple[Candidate, ...] = ()

    def value(self) -> dict[str, object]:
        body = ErrorBody(
            code=self.code, message=self.message, status=self.status, requestId=REQUEST_ID,
            parameter=self.parameter, candidates=list(self.candidates) or None,
        )  # fmt: skip
        return msgspec.to_builtins(ErrorResponse(error=body))  # type: ignore[no-any-return]


def _of(error: ServiceError) -> _Example:
    return _Example(
        error.status, error.code, error.message, error.parameter, tuple(error.candidates)
    )


_STANDARD: dict[int, list[tuple[str, _Example]]] = {
    401: [
        ("missingKey", _of(MissingApiKey())),
        ("invalidKey", _of(InvalidApiKey())),
        ("revokedKey", _of(RevokedApiKey())),
    ],
    429: [
        ("perMinute", _of(RateLimitExceeded(
            "Rate limit of 100 requests per minute exceeded; retry after 42 seconds."))),
        ("daily", _of(QuotaExceeded(
            "Daily quota of 10000 requests used up; retry after 3600 seconds."))),
        ("failedRequests", _of(RateLimitExceeded(
            "Too many failed requests: at most 200 answers of 400-499 in 60 seconds; retry"
            " after 17 seconds."))),
    ],
    431: [
        ("headersTooLarge", _Example(
            431, "headers_too_large", "Request headers are limited to 16 KB in total.")),
    ],
    500: [
        ("internalError", _of(internal_error(REQUEST_ID))),
    ],
    503: [
        ("storeUnreachable", _of(ServiceUnavailable(
            "A backing store is unreachable; try again shortly."))),
        ("busy", _of(ServiceUnavailable("The service is busy; try again shortly."))),
    ],
}  # fmt: skip
"""Examples of the answers any operation can give, with the messages the server writes."""


def errors(
    *statuses: int,
    metered: bool = True,
    examples: Iterable[ServiceError] = (),
    conditional: bool | None = None,
) -> dict[int, ResponseSpec]:
    """OpenAPI responses for the error statuses an operation can answer: `statuses` (its
    own: 404, 409), and those of every /v1 operation (400, 401, 431, 500, 503, and 429 and
    304 when the operation is metered). `examples` are real answers of this operation, shown
    beside the standard ones (a 400 for an unknown parameter is added by `ApiOperation`).
    `conditional` (by default as `metered`): whether it answers 304 to If-None-Match."""
    own: dict[int, list[tuple[str, _Example]]] = {}
    for error in examples:
        named = own.setdefault(error.status, [])
        named.append((f"{error.code}{len(named) + 1 if named else ''}", _of(error)))
    wanted = sorted({*statuses, 400, 401, 431, 500, 503, *((429,) if metered else ())})
    specs: dict[int, ResponseSpec] = {}
    for status in wanted:
        shown = own.get(status, []) + _STANDARD.get(status, [])
        specs[status] = ResponseSpec(
            data_container=ErrorResponse, description=_DESCRIPTIONS[status],
            generate_examples=False,
            examples=[Example(summary=name, value=example.value()) for name, example in shown]
            or None,
        )  # fmt: skip
    if metered if conditional is None else conditional:
        specs[304] = ResponseSpec(
            data_container=None, generate_examples=False,
            description="Not Modified: If-None-Match named this answer's ETag. No body;"
            " counted like the 200 it replaces (free when that 200 is a cache hit).",
        )  # fmt: skip
    return dict(sorted(specs.items()))


RATE_HEADERS = [
    ResponseHeader(name="X-Request-Id", value=REQUEST_ID, documentation_only=True,
                   description="Identifier of this request (also the error body's requestId)."),
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
_OTHER_HEADERS = [
    ResponseHeader(name="Retry-After", documentation_only=True, value="42",
                   description="Seconds to wait before trying again."),
    ResponseHeader(name="WWW-Authenticate", documentation_only=True, value="Bearer",
                   description="How to authenticate: a Bearer key."),
    ResponseHeader(name="Allow", documentation_only=True, value="GET, HEAD",
                   description="The methods this path takes."),
]  # fmt: skip
_RATE = {header.name for header in RATE_HEADERS} - {"X-Request-Id", "X-Cache"}

HEADERS: dict[str, OpenAPIHeader | Reference] = {
    header.name: OpenAPIHeader(
        description=header.description,
        schema=Schema(type=OpenAPIType.STRING, examples=[header.value]),
    )
    for header in [*ANSWER_HEADERS, *_OTHER_HEADERS]
}
"""`components.headers`: every header the responses name, described once."""


def _refs(*names: str) -> dict[str, OpenAPIHeader | Reference]:
    return {name: Reference(ref=f"#/components/headers/{name}") for name in names}


RESPONSES: dict[str, OpenAPIResponse | Reference] = {
    "MethodNotAllowed": OpenAPIResponse(
        description="A method an existing path does not take (the introduction lists the"
        " writes; `Allow` names the methods the path takes), before the key is checked (an"
        " unknown path is a 404 whatever the method).",
        headers=_refs("Allow", "X-Request-Id"),
        content={
            "application/json": OpenAPIMediaType(
                schema=Reference(ref="#/components/schemas/ErrorResponse"),
                examples={
                    "methodNotAllowed": Example(value=_of(method_not_allowed("POST")).value())
                },
            )
        },
    )
}  # fmt: skip
"""`components.responses`: the 405 every path answers to other methods."""

_READS = ("GET", "HEAD")
_PATH_TYPE = re.compile(r"\{(\w+):\w+\}")


def writes(prefix: str, handlers: Iterable[HTTPRouteHandler]) -> list[str]:
    """Each method other than GET and HEAD that these handlers take, with its path as the
    document writes it, in the handlers' order: `POST /v1/searches`, ..."""
    return [
        f"{method} {prefix}{_PATH_TYPE.sub(_untyped, path)}"
        for handler in handlers
        for path in sorted(handler.paths)
        for method in sorted(handler.http_methods)
        if method not in _READS
    ]


def _untyped(parameter: re.Match[str]) -> str:
    return "{" + parameter[1] + "}"


def methods_note(prefix: str, handlers: Iterable[HTTPRouteHandler]) -> str:
    """The introduction's sentence on methods, true to the routes: the reads, every write,
    and the 405 for the rest."""
    taken = writes(prefix, handlers)
    listed = ", ".join(f"`{write}`" for write in taken)
    return (
        "Reads are GET (HEAD answers as GET, without a body)"
        + (f"; the writes are {listed}" if taken else "")
        + ". Any other method on an existing path answers 405 (`MethodNotAllowed` under"
        " components.responses), with `Allow` naming the methods the path takes."
    )


@dataclass
class ApiOperation(Operation):
    """An operation whose responses name their headers, whose 400 shows the answer to an
    unknown parameter, and whose security is stated even when it is none (/health)."""

    def __post_init__(self) -> None:
        if self.security is None:
            self.security = []
        responses = self.responses or {}
        success = responses.get("200")
        shown = set((success.headers or {}) if isinstance(success, OpenAPIResponse) else {})
        rated = bool(shown & _RATE)
        for status, response in responses.items():
            if isinstance(response, Reference):
                continue
            media = (response.content or {}).get("application/json")
            # Litestar names the schema by its module here, "ErrorResponse" in the document.
            schema = media.schema if media is not None else None
            error = isinstance(schema, Reference) and schema.ref.endswith("ErrorResponse")
            response.headers = _refs(*_headers(int(status), shown, rated, error)) or None
            if media is not None and media.examples:
                # Keyed by their summaries, not Litestar's "errorresponse-example-N".
                media.examples = {
                    example.summary or key: example
                    for key, example in media.examples.items()
                    if isinstance(example, Example)
                }
            if status == "400" and media is not None:
                self._show_unknown_parameter(media)

    def _show_unknown_parameter(self, media: OpenAPIMediaType) -> None:
        query = sorted(
            p.name
            for p in self.parameters or []
            if isinstance(p, Parameter) and p.param_in == "query"
        )
        error = unknown_parameter("colour", query)
        example = Example(summary="unknownParameter", value=_of(error).value())
        media.examples = {**(media.examples or {}), "unknownParameter": example}


def documented(
    tag: str,
    summary: str,
    operation_id: str,
    *,
    headers: list[ResponseHeader] | None = ANSWER_HEADERS,
    operation_class: type[ApiOperation] = ApiOperation,
) -> dict[str, Any]:
    """The keywords of a route handler that make it an operation of the document, under
    `tag`: described by `operation_class`, its answers naming `headers` (a data answer's by
    default: the rate headers and the ETag; RATE_HEADERS for an answer without an ETag, None
    for one without either).

        @get("/markets/{zipCode:str}", responses=errors(404),
             **documented("markets", "Market snapshot for a ZIP code", "getMarket"))
    """
    return {
        "operation_class": operation_class, "response_headers": headers, "tags": [tag],
        "summary": summary, "operation_id": operation_id,
    }  # fmt: skip


def with_body(
    struct: type[msgspec.Struct], description: str, example: dict[str, Any]
) -> type[ApiOperation]:
    """The operation class of a write whose JSON body is `struct`: the body refers to the
    struct's component, which `ExactBody` makes msgspec's schema of it (the rules its
    decoding keeps), with `example` shown."""

    @dataclass
    class BodyOperation(ApiOperation):
        def __post_init__(self) -> None:
            super().__post_init__()
            self.request_body = RequestBody(
                required=True, description=description,
                content={"application/json": OpenAPIMediaType(
                    schema=Reference(ref=f"#/components/schemas/{struct.__name__}"),
                    examples={"example": Example(summary="example", value=example)},
                )},
            )  # fmt: skip

    return BodyOperation


_JSON_SCHEMA_NAMES = {
    "minLength": "min_length", "maxLength": "max_length", "minItems": "min_items",
    "maxItems": "max_items", "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum", "additionalProperties": "additional_properties",
}  # fmt: skip


def struct_schema(struct: type[msgspec.Struct], **extra: Any) -> Schema:
    """The OpenAPI schema of a request body declared as a msgspec struct: the JSON Schema
    msgspec makes of it (the rules its decoding keeps), references inlined, `extra` added.

        struct_schema(SavedSearchInput)
    """
    made = msgspec.json.schema(struct)
    defs: dict[str, Any] = made.get("$defs", {})

    def convert(part: dict[str, Any]) -> Schema:
        if "$ref" in part:
            return convert(defs[part["$ref"].rsplit("/", 1)[-1]])
        fields: dict[str, Any] = {}
        for key, value in part.items():
            if key == "title":
                continue
            if key == "type":
                value = OpenAPIType(value)
            elif key == "properties":
                value = {name: convert(inner) for name, inner in value.items()}
            elif key == "items":
                value = convert(value)
            fields[_JSON_SCHEMA_NAMES.get(key, key)] = value
        return Schema(**fields)

    return dataclasses.replace(convert(made), **extra)


def _headers(status: int, success: set[str], rated: bool, error: bool) -> list[str]:
    """The headers of one answer (an error body or not) of an operation whose 200 carries
    `success`."""
    if status == 200:
        return [h.name for h in [*ANSWER_HEADERS, *_OTHER_HEADERS] if h.name in success] or [
            "X-Request-Id", "X-Cache",
        ]  # fmt: skip
    if status == 431:  # written by the server itself
        return ["X-Request-Id"]
    names = ["X-Request-Id", "X-Cache"]
    if rated and status != 401:  # no key, no windows to describe
        names += [h.name for h in RATE_HEADERS if h.name in _RATE]
    if status == 304:
        names.append("ETag")
    if status in (429, 503) and error:
        names.append("Retry-After")
    if status == 401:
        names.append("WWW-Authenticate")
    return names


class NullableChoice(OpenAPISchemaPlugin):
    """`Literal[...] | None` as `oneOf: [{type: string, enum: [...]}, {type: null}]`.

    Litestar writes it `type: [null, string], enum: [..., null]`, valid JSON Schema from which
    openapi-python-client makes three identical enum classes per field; one enum and a null
    is what generators turn into `Enum | None`.
    """

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return field_definition.is_optional and bool(_choices(field_definition.annotation))

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        return Schema(
            one_of=[
                Schema(type=OpenAPIType.STRING, enum=_choices(field_definition.annotation)),
                Schema(type=OpenAPIType.NULL),
            ]
        )


class ExactBody(OpenAPISchemaPlugin):
    """The components of the request bodies given: msgspec's schema of each (`struct_schema`),
    which keeps what Litestar's struct schema drops (the fields of a `filters` object checked
    against its own struct)."""

    def __init__(self, *bodies: type[msgspec.Struct]) -> None:
        self._bodies = frozenset(bodies)

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return field_definition.annotation in self._bodies

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        struct = field_definition.annotation
        made = struct_schema(struct, title=struct.__name__)
        # Registered as Litestar registers a struct, so that the body refers to it by name.
        schema = schema_creator.schema_registry.get_schema_for_field_definition(field_definition)
        for field in dataclasses.fields(made):
            setattr(schema, field.name, getattr(made, field.name))
        return schema


class ClosedBody(OpenAPISchemaPlugin):
    """A request body struct that refuses unknown fields (`forbid_unknown_fields`) says so:
    `additionalProperties: false`, which Litestar's struct schema leaves out.

    A field that may be left out (`X | msgspec.UnsetType`, as in a PATCH body) has X's schema:
    Litestar drops UnsetType from the union but keeps a `oneOf` of the one schema left, which
    Redocly flags (`no-illogical-composition-keywords`) and generators wrap for nothing.
    Whether a field may be left out is the struct's `required`.
    """

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        annotation = field_definition.annotation
        return (
            isinstance(annotation, type)
            and issubclass(annotation, msgspec.Struct)
            and bool(getattr(annotation.__struct_config__, "forbid_unknown_fields", False))
        )

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin

        schema = StructSchemaPlugin().to_openapi_schema(field_definition, schema_creator)
        schema.additional_properties = False
        schema.properties = {
            name: _unwrapped(value) for name, value in (schema.properties or {}).items()
        }
        return schema


def _unwrapped(schema: Schema | Reference) -> Schema | Reference:
    """`{oneOf: [X], ...}` as X with the wrapper's own keywords (its description, its bounds)."""
    if not isinstance(schema, Schema) or schema.one_of is None or len(schema.one_of) != 1:
        return schema
    (only,) = schema.one_of
    if not isinstance(only, Schema):
        return schema
    kept = {
        field.name: getattr(schema, field.name)
        for field in dataclasses.fields(schema)
        if field.name != "one_of" and getattr(schema, field.name) is not None
    }
    return dataclasses.replace(only, **kept)


def _choices(annotation: Any) -> list[str]:
    """The strings of `Literal[...] | None`; [] for any other annotation."""
    options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if not options or any(typing.get_origin(arg) is not typing.Literal for arg in options):
        return []
    values = [value for arg in options for value in typing.get_args(arg)]
    return values if all(isinstance(value, str) for value in values) else []

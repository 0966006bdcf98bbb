"""Checks every /v1 request passes before its handler runs (Litestar `before_request`)."""

from __future__ import annotations

from typing import Any

from litestar import Request

from propdata.errors import InvalidParameter

_RESERVED = {"request", "scope", "state", "headers", "cookies", "query", "body", "data", "socket"}
_allowed_cache: dict[Any, frozenset[str]] = {}
"""Query names each handler function takes (keyed by the function: handlers are copied per
app, the function they wrap is not)."""


async def reject_unknown_parameters(request: Request[Any, Any, Any]) -> None:
    """400 for a query parameter the operation does not take, or one given twice."""
    handler = request.scope["route_handler"]
    allowed = _allowed_cache.get(handler.fn)
    if allowed is None:
        injected = handler.resolve_dependencies()
        names = set()
        for name, field in handler.parsed_fn_signature.parameters.items():
            if name not in _RESERVED and name not in injected:
                names.add(getattr(field.kwarg_definition, "name", None) or name)
        allowed = _allowed_cache[handler.fn] = frozenset(names)
    seen: set[str] = set()
    path_params = request.scope.get("path_params", {})
    for name, _ in request.query_params.multi_items():
        if name not in allowed or name in path_params:
            known = ", ".join(sorted(allowed - set(path_params))) or "none"
            raise InvalidParameter(
                name, f"Unknown query parameter '{name}'; this operation takes: {known}."
            )
        if name in seen:
            raise InvalidParameter(name, f"The query parameter '{name}' is given more than once.")
        seen.add(name)

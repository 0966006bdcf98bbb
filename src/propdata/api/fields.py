"""Field selection: `fields=id,address.zipCode,listPrice` keeps only the named fields.

Names are the wire names of the answer's record (each search item, or the one record),
dotted for nested ones: `address.zipCode` keeps that field of the address; a name of an
object or a list of objects (`address`, `priceHistory`) keeps it whole; a dotted name under
a list (`priceHistory.price`) keeps that field of every element. `id` is always kept. An
unknown name is a 400 naming `fields`. The answer keeps the record's own field order, so
`fields=b,a` and `fields=a,b` give the same bytes (and the same ETag).
"""

from __future__ import annotations

import functools
import re
import types
import typing
from typing import Any, Union

import msgspec
from litestar import Response
from litestar.params import QueryParameter

from propdata.errors import InvalidParameter

NAME = "fields"
MAX_NAMES = 100

MAX_LENGTH = 2000

Tree = dict[str, "Tree | None"]
"""Selected names in the record's field order; None keeps the value whole."""


def _struct_of(annotation: Any) -> type[msgspec.Struct] | None:
    """The struct inside `X`, `X | None` or `list[X]`; None for a scalar."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType, list):
        for arg in typing.get_args(annotation):
            found = _struct_of(arg)
            if found is not None:
                return found
    return None


@functools.cache
def _children(shape: type[msgspec.Struct]) -> dict[str, type[msgspec.Struct] | None]:
    """Wire name -> the struct it holds (None for a scalar), in field order."""
    return {f.encode_name: _struct_of(f.type) for f in msgspec.structs.fields(shape)}


def names(shape: type[msgspec.Struct]) -> list[str]:
    """Every name `fields` accepts for records of `shape`, dotted ones included."""
    out: list[str] = []
    for name, child in _children(shape).items():
        out.append(name)
        if child is not None:
            out += [f"{name}.{sub}" for sub in names(child)]
    return out


def parameter(shape: type[msgspec.Struct]) -> Any:
    """The `fields` query parameter of an operation answering records of `shape`: its
    OpenAPI pattern lists the names (the service checks them itself, to name the unknown
    one in its 400 rather than quote the pattern)."""
    one = "|".join(re.escape(name) for name in names(shape))
    return QueryParameter(
        max_length=MAX_LENGTH,
        description="Comma-separated wire names to keep (dotted for nested ones), such as"
        f" {_example(shape)}; id is always kept. An unknown name is a 400.",
        schema_extra={"pattern": f"^(?:{one})(?:,(?:{one})){{0,{MAX_NAMES - 1}}}$"},
    )


def _example(shape: type[msgspec.Struct]) -> str:
    """A nested field of `shape` and a field outside it (a plain one when none is nested)."""
    offered = names(shape)
    nested = next((n for n in offered if "." in n), None)
    parent = nested.split(".")[0] if nested else None
    plain = next(n for n in offered if n not in ("id", parent) and "." not in n)
    return plain if nested is None else f"{plain},{nested}"


def select(raw: str | None, shape: type[msgspec.Struct]) -> Tree | None:
    """The selection `fields` asks of records of `shape`; None without `fields` (all)."""
    if raw is None:
        return None
    wanted = raw.split(",")
    if not any(wanted) or len(wanted) > MAX_NAMES:
        raise InvalidParameter(
            NAME, f"'{NAME}' must name 1 to {MAX_NAMES} fields, separated by commas."
        )
    paths: list[list[str]] = [["id"]]
    for name in wanted:
        if not _known(shape, name.split(".")):
            raise InvalidParameter(
                NAME, f"'{NAME}' names an unknown field '{name[:100]}'; {_known_names(shape)}."
            )
        paths.append(name.split("."))
    return _tree(shape, paths)


def _known_names(shape: type[msgspec.Struct]) -> str:
    """The names `fields` takes for `shape`, in words: its fields, and how nested ones go."""
    nested = next((name for name in names(shape) if "." in name), None)
    dotted = f", and nested ones dotted, such as {nested}" if nested else ""
    return f"the fields are {', '.join(_children(shape))}{dotted}"


def _known(shape: type[msgspec.Struct], parts: list[str]) -> bool:
    children = _children(shape)
    if parts[0] not in children:
        return False
    child = children[parts[0]]
    if len(parts) == 1:
        return True
    return child is not None and _known(child, parts[1:])


def _tree(shape: type[msgspec.Struct], paths: list[list[str]]) -> Tree:
    """The selection of `paths` under `shape`, in the shape's field order."""
    tree: Tree = {}
    for name, child in _children(shape).items():
        under = [p[1:] for p in paths if p[0] == name]
        if not under:
            continue
        whole = any(not rest for rest in under)
        tree[name] = None if whole or child is None else _tree(child, under)
    return tree


def _project(value: Any, tree: Tree) -> Any:
    if isinstance(value, list):
        return [_project(item, tree) for item in value]
    if not isinstance(value, dict):
        return value  # null
    return {
        name: value[name] if sub is None else _project(value[name], sub)
        for name, sub in tree.items()
        if name in value
    }


def answer(body: msgspec.Struct, selection: Tree | None) -> Response[Any]:
    """The answer with its `data` (a record, or a list of items) cut down to `selection`."""
    if selection is None:
        return Response(body)
    if isinstance(getattr(body, "data", None), msgspec.Raw):  # items already encoded
        plain = msgspec.json.decode(msgspec.json.encode(body))
    else:
        plain = msgspec.to_builtins(body)
    plain["data"] = _project(plain["data"], selection)
    return Response(plain)

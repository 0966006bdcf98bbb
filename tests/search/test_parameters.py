"""The search's table of filter parameters is what GET /v1/properties declares, parameter
by parameter: a saved search's filters take what a search takes."""

from __future__ import annotations

import typing

from propdata.search import endpoints
from propdata.search.filters import FILTERS
from propdata.search.parameters import DECLARED
from propdata.search.query import GEO

CONSTRAINTS = ("ge", "le", "gt", "pattern", "min_length", "max_length", "description")


def test_the_table_is_the_endpoint_s_declarations() -> None:
    hints = typing.get_type_hints(endpoints.search_properties, include_extras=True)
    found: dict[str, tuple[typing.Any, typing.Any]] = {}
    for name, hint in hints.items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        kind, definition = typing.get_args(hint)[:2]
        wire = getattr(definition, "name", None) or name
        if wire in DECLARED:
            options = [a for a in typing.get_args(kind) if a is not type(None)]
            found[wire] = (options[0], definition)
    assert list(found) == list(DECLARED)
    assert set(DECLARED) == {f.parameter for f in FILTERS} | set(GEO) | {"bbox"}
    for wire, (kind, definition) in found.items():
        table = DECLARED[wire]
        assert table.kind == kind, wire
        for constraint in CONSTRAINTS:
            assert getattr(table, constraint) == getattr(definition, constraint), (wire, constraint)

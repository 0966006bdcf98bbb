"""How handlers take what the app injects (its services, the request's key and page size)."""

from __future__ import annotations

from typing import TypeAlias, TypeVar

from litestar.di import NamedDependency
from litestar.params import SkipValidation

T = TypeVar("T")

Injected: TypeAlias = NamedDependency[SkipValidation[T]]
"""A handler parameter filled by the app's dependency of the same name (app.DEPENDENCIES),
taken as it is: the values are built by the service, not parsed from the request, so
Litestar need not validate them on every request."""

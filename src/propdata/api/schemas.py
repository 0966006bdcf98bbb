"""Wire base classes shared by every domain."""

from __future__ import annotations

import msgspec


class Base(msgspec.Struct, rename="camel", kw_only=True):
    """Every wire struct: camelCase names, every listed field always present (null if unknown)."""


class PageMeta(Base):
    """`meta` of a paged answer: the exact total, the page size applied, the offset."""

    total: int
    limit: int
    offset: int

"""Wire shapes of GET /v1/properties/{id}/valuation."""

from __future__ import annotations

from propdata.api.schemas import Base
from propdata.properties.schemas import Estimate, ShortAddress


class Comparable(Base):
    id: str
    address: ShortAddress
    distance_miles: float | None
    sale_date: str
    sale_price: int
    similarity: float


class Valuation(Base):
    """GET /v1/properties/{id}/valuation."""

    id: str
    value_estimate: Estimate | None
    rent_estimate: Estimate | None
    gross_yield: float | None
    comparables: list[Comparable]


class ValuationResponse(Base):
    data: Valuation

"""The valuation endpoint's answers, from what the last rebuild stored (`valuation.rebuild`)."""

from __future__ import annotations

import msgspec

from propdata.errors import NotFound
from propdata.kit.db import Database
from propdata.properties.schemas import ShortAddress
from propdata.properties.service import estimate, gross_yield
from propdata.valuation.repository import ValuationRepository
from propdata.valuation.schemas import Comparable, Valuation

_STORED = list[tuple[str, str, int, float | None, float]]
"""How the rebuild stores comparables: [[id, sale date, price, miles, similarity]]."""


class ValuationService:
    def __init__(self, db: Database) -> None:
        self.repo = ValuationRepository(db)

    async def valuation(self, property_id: str) -> Valuation:
        """The stored estimates and the comparable sales the last rebuild blended into them."""
        row = await self.repo.estimates(property_id)
        if row is None:
            raise NotFound(f"No property with id '{property_id}'.")
        value = estimate(row.value_value, row.value_low, row.value_high, row.value_as_of)
        rent = estimate(row.rent_value, row.rent_low, row.rent_high, row.rent_as_of)
        return Valuation(
            id=property_id,
            value_estimate=value,
            rent_estimate=rent,
            gross_yield=gross_yield(rent, value),
            comparables=await self.comparables(property_id),
        )

    async def comparables(self, property_id: str) -> list[Comparable]:
        """The comparable sales behind a property's stored value estimate, most similar first.

        Exactly those the last rebuild blended into the estimate (at most five); empty when
        the property has no estimate.
        """
        stored = await self.repo.comparables(property_id)
        if stored is None:
            return []
        items = msgspec.json.decode(stored, type=_STORED)
        addresses = await self.repo.addresses(sorted({item[0] for item in items}))
        result: list[Comparable] = []
        for cid, sale_date, price, miles, similarity in items:
            found = addresses.get(cid)
            address = ShortAddress(
                street_address=found.street_address if found else None,
                city=found.city if found else "",
                state=found.state if found else "",
                zip_code=found.zip_code if found else "",
            )
            result.append(
                Comparable(
                    id=cid,
                    address=address,
                    distance_miles=miles,
                    sale_date=sale_date,
                    sale_price=price,
                    similarity=similarity,
                )
            )
        return result

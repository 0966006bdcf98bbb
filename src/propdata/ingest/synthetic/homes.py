"""One synthetic home: what it is, what it is worth, its history, and its record.

Every draw comes from the run's one `Rng`, in a fixed order, so a seed gives the same
records byte for byte; the steps below keep that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from propdata.ingest.synthetic.history import History
from propdata.ingest.synthetic.places import Area, World
from propdata.ingest.synthetic.rng import Rng, step
from propdata.ingest.synthetic.tables import (
    BAND_YEAR,
    HORIZON_DAYS,
    NEW_YEARS,
    PROPERTY_TYPES,
    YEAR_BANDS,
    YEAR_CUMULATIVE,
)
from propdata.properties import lifecycle
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Estimate,
    ListingType,
    PriceEvent,
    PropertyDetail,
    PropertyType,
    Scores,
    Status,
    TaxRecord,
)


@dataclass(frozen=True, slots=True)
class _Home:
    """The physical home and what it is worth today (before the floor of 15,000)."""

    beds: int | None
    baths: float | None
    sqft: int | None
    age: int | None
    """Whole years: built in as_of's year minus this."""
    stories: int | None
    lot: int | None
    value: float


def make(rng: Rng, world: World, area: Area, record_id: str) -> PropertyDetail:
    """One home of `area`: its kind and status, address, size, history and record."""
    as_of = world.as_of
    ptype, status = _type_and_status(rng, area)
    street, latitude, longitude = area.address(rng, ptype == "condo")
    land = ptype == "land"
    home = _land(rng, area) if land else _building(rng, area, ptype, status)
    value = max(home.value, 15_000.0)
    rent = value * area.rent_yield / 12 * rng.lognormal(0.0, 0.08)
    # 365 x age days back is never before 1 January of the year built, on any day.
    horizon = HORIZON_DAYS if home.age is None else min(HORIZON_DAYS, 365 * home.age)
    listing_type, history = _histories(rng, area, status, home.age, value, rent, horizon)
    year_built = None if home.age is None else as_of.year - home.age
    dates = world.dates
    price_history = [
        PriceEvent(date=dates[o], event=e, price=p, source=s)
        for episode in history.episodes for o, e, p, s in reversed(episode)
    ]  # fmt: skip
    lifecycle.check_history(price_history, status, as_of)
    derived = lifecycle.derive(price_history, status)
    updated = _last_updated(rng, world, history, status)
    value_estimate, rent_estimate = _estimates(rng, value, rent, land, world.as_of_text)
    place = area.place
    return PropertyDetail(
        id=record_id,
        status=status,
        list_price=lifecycle.current_list_price(price_history, status),
        address=Address(
            street_address=street, city=place.city, state=place.state, zip_code=place.code,
            county=place.county, fips_code=place.fips,
        ),
        bedrooms_total=home.beds,
        bathrooms_total=home.baths,
        living_area=home.sqft,
        lot_size=home.lot,
        year_built=year_built,
        property_type=ptype,
        days_on_market=lifecycle.days_on_market(derived, price_history, status, as_of),
        price_history=price_history,
        tax_history=_taxes(rng, world, area, value, home.age),
        scores=_scores(rng, area, land),
        coordinates=Coordinates(latitude=round(latitude, 6), longitude=round(longitude, 6)),
        last_updated=updated,
        listing_type=listing_type,
        original_list_price=derived.original_list_price,
        previous_list_price=derived.previous_list_price,
        last_price_change_date=derived.last_price_change_date,
        removed_date=derived.removed_date,
        rent_estimate=rent_estimate,
        value_estimate=value_estimate,
        gross_yield=None,
        price_per_square_foot=None,
        stories=home.stories,
        parcel_id=None, garage_spaces=None, basement_finished_area=None, fireplaces=None,
        overall_quality=None, overall_condition=None,
    )  # fmt: skip


def _type_and_status(rng: Rng, area: Area) -> tuple[PropertyType, Status]:
    """The property type (the ZIP code's mix) and today's status (land is never rented)."""
    ptype = rng.weighted(PROPERTY_TYPES, area.type_cumulative)
    r = rng.random()
    status: Status = (
        "forSale" if r < 0.20 else "recentlySold" if r < 0.30 else "forRent" if r < 0.40
        else "offMarket"
    )  # fmt: skip
    if ptype == "land" and status == "forRent":
        status = "forSale"
    return ptype, status


def _land(rng: Rng, area: Area) -> _Home:
    """A lot: larger where the ZIP code is rural, priced by the square root of its size."""
    lot = int(43_560 * rng.lognormal(math.log(0.6 + 4.0 * (1 - area.density)), 0.9))
    value = area.price * 0.12 * (lot / 43_560) ** 0.5 * rng.lognormal(0.0, 0.35)
    return _Home(None, None, None, None, None, lot, value)


def _building(rng: Rng, area: Area, ptype: str, status: str) -> _Home:
    """A house, condo, townhouse or 2-4 unit building: rooms, size, lot, age and value."""
    age = _age(rng, 2 if status == "offMarket" else 1)
    d = area.density
    lot: int | None
    if ptype == "singleFamily":
        beds = rng.weighted((2, 3, 4, 5, 6), (10, 55, 88, 98, 100))
        baths = max(1.0, beds - 1 + rng.pick((-1.0, -0.5, 0.0, 0.0, 0.5, 1.0)))
        sqft = max(600, step(500 + beds * 420 + rng.gauss(0, 260), 10))
        lot = int(rng.lognormal(math.log(5_000 + 15_000 * (1 - d) ** 2), 0.45))
        stories = rng.weighted((1, 2, 3), (45, 92, 100))
        factor = 1.0
    elif ptype == "condo":
        beds = rng.weighted((0, 1, 2, 3), (8, 43, 88, 100))
        baths = 1.0 if beds <= 1 else rng.pick((1.0, 1.5, 2.0, 2.0, 2.5))
        sqft = max(380, step(450 + beds * 380 + rng.gauss(0, 120), 10))
        lot = None  # the owner of a unit owns no lot of its own
        stories = 1
        factor = 1.05
    elif ptype == "townhouse":
        beds = rng.weighted((2, 3, 4), (35, 85, 100))
        baths = rng.pick((1.5, 2.0, 2.5, 2.5, 3.0, 3.5))
        sqft = max(800, step(800 + beds * 270 + rng.gauss(0, 150), 10))
        lot = rng.int_between(1_200, 4_000)
        stories = rng.pick((2, 2, 2, 3))
        factor = 0.95
    else:  # multiFamily: a 2-4 unit building, bedrooms and baths summed over the units
        units = rng.pick((2, 2, 2, 3, 4))
        beds = sum(rng.pick((1, 2, 2, 3)) for _ in range(units))
        baths = float(units) + rng.pick((0.0, 0.0, 0.5, 1.0))
        sqft = max(1_400, step(units * 950 + rng.gauss(0, 250), 10))
        lot = rng.int_between(4_000, 15_000)
        stories = rng.pick((2, 2, 3))
        factor = 0.85
    factor *= 1.12 if age < 5 else 1.0 if age < 60 else 0.93
    value = area.price * (sqft / 1_800) ** 0.92 * factor * rng.lognormal(0.0, 0.18)
    return _Home(beds, baths, sqft, age, stories, lot, value)


def _histories(
    rng: Rng,
    area: Area,
    status: Status,
    age: int | None,
    value: float,
    rent: float,
    horizon: int,
) -> tuple[ListingType | None, History]:
    """The listing type and the price history: the episode that sets today's status, then
    the earlier ones. A distressed sale (foreclosure, short sale, auction) prices only the
    current listing low; a new house sold on its first listing is newConstruction."""
    listing_type: ListingType | None = None
    discount = 1.0
    if status in ("forSale", "recentlySold"):
        r = rng.random()
        listing_type = (
            "foreclosure" if r < 0.03 else "shortSale" if r < 0.05 else "auction" if r < 0.065
            else "standard"
        )  # fmt: skip
        discount = 1.0 if listing_type == "standard" else 0.82
    elif status == "forRent":
        listing_type = "standard"
    history = History(rng, value, rent, area.growth, discount)
    final, off_market_sale = history.final(status, horizon)
    history.discount = 1.0
    if final is None:
        return None, history
    history.earlier(final, off_market_sale, horizon)
    if off_market_sale and status == "recentlySold":
        listing_type = None  # sold without being listed
    elif (listing_type == "standard" and status != "forRent" and age is not None
          and age <= NEW_YEARS and len(history.episodes) == 1):  # fmt: skip
        listing_type = "newConstruction"
    return listing_type, history


def _last_updated(rng: Rng, world: World, history: History, status: str) -> str:
    """When the record last changed: within two weeks for listed homes (120 days for
    others), never before its newest event; the start of as_of at the latest."""
    newest = history.episodes[0][-1][0] if history.episodes else HORIZON_DAYS
    seconds = int(rng.random() * 86_400)
    day = rng.int_between(0, min(newest, 14 if status != "offMarket" else 120))
    if day == 0:
        seconds = 0  # the data set is as of the start of as_of: never a time still to come
    return f"{world.dates[day]}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"


def _estimates(
    rng: Rng, value: float, rent: float, land: bool, as_of: str
) -> tuple[Estimate, Estimate | None]:
    """Value and rent estimates near the true value and rent, with an interval (no rent for
    land)."""
    value_now = step(value * rng.between(0.97, 1.03), 1_000)
    value_width = rng.between(0.15, 0.25) if land else rng.between(0.06, 0.12)
    rent_now = step(rent * rng.between(0.97, 1.03), 5)
    rent_width = rng.between(0.07, 0.12)
    value_estimate = Estimate(
        value=value_now, low=step(value_now * (1 - value_width), 100),
        high=step(value_now * (1 + value_width), 100), as_of_date=as_of,
    )  # fmt: skip
    rent_estimate = None if land else Estimate(
        value=rent_now, low=step(rent_now * (1 - rent_width), 5),
        high=step(rent_now * (1 + rent_width), 5), as_of_date=as_of,
    )  # fmt: skip
    return value_estimate, rent_estimate


def _scores(rng: Rng, area: Area, land: bool) -> Scores:
    """Walk, transit and bike scores around the ZIP code's (lower for a lot)."""
    walk, transit, bike = area.scores
    if land:
        walk, transit, bike = walk - 15, transit - 15, bike - 15
    return Scores(
        walkability=_score(walk + rng.gauss(0, 8)),
        transit=_score(transit + rng.gauss(0, 6)),
        bike=_score(bike + rng.gauss(0, 10)),
    )


def _age(rng: Rng, youngest: int) -> int:
    """A home's age in whole years, at least `youngest`: the bands' years as seen from
    BAND_YEAR, whatever the build day."""
    first, last = rng.weighted(YEAR_BANDS, YEAR_CUMULATIVE)
    last = min(last, BAND_YEAR - youngest)
    first = min(first, last)
    return BAND_YEAR - rng.int_between(first, last)


def _score(x: float) -> int:
    return 0 if x < 0 else 100 if x > 100 else int(x + 0.5)


def _taxes(rng: Rng, world: World, area: Area, value: float, age: int | None) -> list[TaxRecord]:
    """Yearly assessments for the last 5-10 complete years (none before the year built)."""
    count = rng.int_between(5, 10)
    if age is not None:
        count = min(count, age)
    first = world.as_of.year - 1
    then = value * area.assessment * area.yearly
    rate, yearly, random_ = area.tax_rate, area.yearly, rng.random
    records = []
    for year in range(first, first - count, -1):
        assessed = int(then * 0.01 + 0.5) * 100
        paid = int(assessed * rate * (0.98 + 0.04 * random_()) + 0.5)
        records.append(TaxRecord(year=year, tax_paid=paid, assessed_value=assessed))
        then *= yearly
    return records

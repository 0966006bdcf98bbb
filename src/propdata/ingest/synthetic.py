"""A national synthetic property set over real ZIP codes, reproducible from a seed.

    for line, record in generate(100_000, seed=7, as_of=date(2025, 6, 15)):
        ...

Same (n, seed, as_of) and the same `zipcodes`/`addfips` data give the same records, byte for
byte: all randomness comes from one `random.Random(seed)` and nothing reads the clock.

The model (docs/data.md has the long form):

- Places: active STANDARD ZIP codes with a centroid in the 50 states and DC; county FIPS from
  `addfips`. About 150 records per chosen ZIP, ZIPs drawn with weight = state population x
  the ZIP's share of its state's "metro mass" (how many ZIP centroids lie in the ~50 km
  square around it), so big metros get more ZIPs and more records.
- Prices: a state level (typical home value), raised in dense ZIPs, with per-ZIP and
  per-property noise and 1-7 % yearly appreciation back in time.
- Histories: each property gets a final episode that sets its status (about 20 % forSale,
  10 % recentlySold, 10 % forRent, 60 % offMarket), preceded by a renewal process of earlier
  episodes (listed sales, off-market sales, delistings, rentals) with ~3 years between them,
  so sales and listings flow steadily through every month of the last ten years. Every
  history follows `lifecycle.TRANSITIONS` and is checked with `lifecycle.check_history`.
"""

from __future__ import annotations

import bisect
import datetime as dt
import heapq
import itertools
import math
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TypeVar, cast

from propdata.kit import geography
from propdata.properties import lifecycle
from propdata.properties.schemas import (
    Address,
    Coordinates,
    Estimate,
    Event,
    ListingType,
    PriceEvent,
    PropertyDetail,
    PropertyType,
    Scores,
    Source,
    Status,
    TaxRecord,
)

HORIZON_DAYS = 3_650
"""Histories reach back at most ten years before as_of."""
RECORDS_PER_ZIP = 150
MEAN_GAP_DAYS = 1_000
"""Mean idle time between two episodes of one property (renewal process)."""
SOLD_DAYS = lifecycle.SOLD_EXPIRY_DAYS

# Typical home value by state, USD (rounded, mid-2020s), and effective property-tax rate.
STATE_PRICE: dict[str, int] = {
    "AL": 225_000, "AK": 355_000, "AZ": 425_000, "AR": 205_000, "CA": 760_000,
    "CO": 545_000, "CT": 395_000, "DE": 375_000, "DC": 610_000, "FL": 395_000,
    "GA": 320_000, "HI": 830_000, "ID": 455_000, "IL": 265_000, "IN": 240_000,
    "IA": 220_000, "KS": 225_000, "KY": 200_000, "LA": 195_000, "ME": 390_000,
    "MD": 415_000, "MA": 620_000, "MI": 240_000, "MN": 330_000, "MS": 175_000,
    "MO": 245_000, "MT": 455_000, "NE": 255_000, "NV": 430_000, "NH": 480_000,
    "NJ": 520_000, "NM": 305_000, "NY": 470_000, "NC": 325_000, "ND": 255_000,
    "OH": 225_000, "OK": 200_000, "OR": 495_000, "PA": 265_000, "RI": 465_000,
    "SC": 295_000, "SD": 300_000, "TN": 315_000, "TX": 300_000, "UT": 530_000,
    "VT": 390_000, "VA": 385_000, "WA": 590_000, "WV": 165_000, "WI": 295_000,
    "WY": 345_000,
}  # fmt: skip
STATE_TAX_RATE: dict[str, float] = {
    "AL": 0.0040, "AK": 0.0104, "AZ": 0.0052, "AR": 0.0057, "CA": 0.0071,
    "CO": 0.0049, "CT": 0.0179, "DE": 0.0056, "DC": 0.0057, "FL": 0.0082,
    "GA": 0.0083, "HI": 0.0027, "ID": 0.0056, "IL": 0.0208, "IN": 0.0077,
    "IA": 0.0143, "KS": 0.0134, "KY": 0.0080, "LA": 0.0055, "ME": 0.0109,
    "MD": 0.0100, "MA": 0.0112, "MI": 0.0132, "MN": 0.0105, "MS": 0.0075,
    "MO": 0.0091, "MT": 0.0069, "NE": 0.0154, "NV": 0.0055, "NH": 0.0177,
    "NJ": 0.0223, "NM": 0.0067, "NY": 0.0140, "NC": 0.0073, "ND": 0.0099,
    "OH": 0.0141, "OK": 0.0085, "OR": 0.0086, "PA": 0.0136, "RI": 0.0132,
    "SC": 0.0053, "SD": 0.0114, "TN": 0.0056, "TX": 0.0160, "UT": 0.0052,
    "VT": 0.0171, "VA": 0.0080, "WA": 0.0087, "WV": 0.0055, "WI": 0.0151,
    "WY": 0.0056,
}  # fmt: skip
# 2020 census population, millions: decides how many records each state gets.
STATE_POPULATION: dict[str, float] = {
    "AL": 5.02, "AK": 0.73, "AZ": 7.15, "AR": 3.01, "CA": 39.54, "CO": 5.77, "CT": 3.61,
    "DE": 0.99, "DC": 0.69, "FL": 21.54, "GA": 10.71, "HI": 1.46, "ID": 1.84, "IL": 12.81,
    "IN": 6.79, "IA": 3.19, "KS": 2.94, "KY": 4.51, "LA": 4.66, "ME": 1.36, "MD": 6.18,
    "MA": 7.03, "MI": 10.08, "MN": 5.71, "MS": 2.96, "MO": 6.15, "MT": 1.08, "NE": 1.96,
    "NV": 3.10, "NH": 1.38, "NJ": 9.29, "NM": 2.12, "NY": 20.20, "NC": 10.44, "ND": 0.78,
    "OH": 11.80, "OK": 3.96, "OR": 4.24, "PA": 13.00, "RI": 1.10, "SC": 5.12, "SD": 0.89,
    "TN": 6.91, "TX": 29.15, "UT": 3.27, "VT": 0.64, "VA": 8.63, "WA": 7.71, "WV": 1.79,
    "WI": 5.89, "WY": 0.58,
}  # fmt: skip

STREET_NAMES = (
    "Main", "Oak", "Maple", "Pine", "Cedar", "Elm", "Walnut", "Willow", "Birch", "Cherry",
    "Chestnut", "Hickory", "Spruce", "Magnolia", "Poplar", "Sycamore", "Aspen", "Dogwood",
    "Laurel", "Juniper", "Holly", "Linden", "Cypress", "Redwood", "Hawthorn", "Park", "Lake",
    "Hill", "Church", "Mill", "Center", "Spring", "River", "Ridge", "Sunset", "Highland",
    "Meadow", "Forest", "Valley", "Prospect", "Pleasant", "Union", "Market", "Broad", "Water",
    "Bridge", "School", "College", "Academy", "High", "Front", "Locust", "Green", "Washington",
    "Lincoln", "Jefferson", "Madison", "Adams", "Jackson", "Monroe", "Franklin", "Grant",
    "Wilson", "Harrison", "Cleveland", "Hamilton", "Lafayette", "Clinton", "Garfield",
    "Kennedy", "Roosevelt", "Taylor", "Hayes", "Polk", "Pierce", "Fillmore", "Tyler",
    "Sheridan", "Sherman", "Liberty", "Independence", "Heritage", "Fairview", "Greenwood",
    "Oakwood", "Lakeview", "Riverside", "Woodland", "Hillcrest", "Brookside", "Country Club",
    "Orchard", "Vine", "Rose", "Lilac", "Sunrise", "Cottage", "Mountain View", "Bay",
    "Harbor", "Canyon", "Mesa", "Prairie", "Summit", "Crescent", "Colonial", "Victoria",
    "Windsor", "Cambridge", "Oxford", "Devon", "Kingston", "Stratford", "Wellington",
    "Chapel", "Mulberry", "Peach", "Apple", "Pecan", "Evergreen", "Glen", "Mockingbird",
    "Cardinal", "Bluebird", "Quail", "Deer", "Fox", "Eagle", "Hunters", "Meadowbrook",
    "Stonegate", "Westwood", "Eastwood", "Northwood", "Southgate", "Greenbriar", "Briarwood",
    "1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "10th", "11th", "12th",
    "13th", "14th", "15th", "16th", "17th", "18th", "19th", "20th", "21st", "22nd", "23rd",
    "24th", "25th", "30th", "32nd", "40th", "42nd", "50th",
)  # fmt: skip
STREET_SUFFIXES = ("St", "Ave", "Dr", "Rd", "Ln", "Ct", "Way", "Pl", "Blvd", "Cir", "Ter",
                   "Trl", "Pkwy", "Loop")  # fmt: skip
SUFFIX_CUMULATIVE = tuple(itertools.accumulate((25, 18, 14, 12, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1)))
DIRECTIONS = ("N", "S", "E", "W", "NE", "NW", "SE", "SW")
DIRECTION_CUMULATIVE = tuple(itertools.accumulate((5, 5, 5, 5, 1, 1, 1, 1)))

PROPERTY_TYPES: tuple[PropertyType, ...] = ("singleFamily", "condo", "townhouse", "multiFamily",
                                            "land")  # fmt: skip
# Share of each type at density 0 (rural) and the change towards density 1 (urban core).
TYPE_BASE = (0.72, 0.05, 0.07, 0.06, 0.10)
TYPE_SLOPE = (-0.30, 0.24, 0.05, 0.06, -0.05)

# Year built: (first year, last year, weight); the US stock leans to 1950-2010.
YEAR_BANDS = (
    (1880, 1939),
    (1940, 1949),
    (1950, 1959),
    (1960, 1969),
    (1970, 1979),
    (1980, 1989),
    (1990, 1999),
    (2000, 2009),
    (2010, 2100),
)
YEAR_CUMULATIVE = tuple(itertools.accumulate((13, 5, 10, 10, 15, 13, 13, 14, 7)))

LISTING_SOURCES: tuple[Source, ...] = ("mls", "agent", "owner")
SALE_SOURCES = (0.80, 0.92, 1.0)  # running shares: mls, agent, owner (for sale by owner)
RENT_SOURCES = (0.45, 0.70, 1.0)

KM_LAT = 1 / 111.32
"""Degrees of latitude per km."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Zip:
    """One eligible ZIP code with what the generator needs to know of it."""

    code: str
    city: str
    state: str
    county: str
    fips: str
    latitude: float
    longitude: float
    density: float
    """0 (rural, alone in its ~15 km square) to 1 (urban core)."""
    weight: float
    """Share of national records: state population x the ZIP's share of its state's metro mass."""


@cache
def zip_table() -> tuple[Zip, ...]:
    """The eligible ZIP codes, sorted by code; built once per process, in under a second."""
    rows = [
        z for z in geography.delivery_zips()
        if z.state in STATE_POPULATION and z.county is not None and z.fips is not None
    ]  # fmt: skip
    points = [(z.latitude, z.longitude) for z in rows]
    local = _neighbours(points, 0.05)
    metro = _neighbours(points, 0.15)
    mass: Counter[str] = Counter()
    for z, m in zip(rows, metro, strict=True):
        mass[z.state] += m**1.2
    table = []
    for z, near, m in zip(rows, local, metro, strict=True):
        table.append(Zip(
            code=z.code, city=z.city, state=z.state, county=cast(str, z.county),
            fips=cast(str, z.fips), latitude=z.latitude, longitude=z.longitude,
            density=min(1.0, math.log(near) / math.log(61)),
            weight=STATE_POPULATION[z.state] * m**1.2 / mass[z.state],
        ))  # fmt: skip
    return tuple(table)


def _neighbours(points: list[tuple[float, float]], size: float) -> list[int]:
    """How many points share each point's grid cell of `size` degrees or one of its 8 neighbours."""
    cells = [(math.floor(lat / size), math.floor(lon / size)) for lat, lon in points]
    counts = Counter(cells)
    return [sum(counts[(a + i, b + j)] for i in (-1, 0, 1) for j in (-1, 0, 1)) for a, b in cells]


def generate(n: int, seed: int, as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield n synthetic records (1-based number, record) with ids `syn-0000001`...."""
    if n < 0:
        raise ValueError("n must not be negative")
    if n == 0:
        return
    rng = _Rng(seed)
    width = max(7, len(str(n)))
    world = _World(as_of)
    number = 0
    for place, count in _plan(rng, zip_table(), n):
        area = _Area(rng, place, count, as_of)
        for _ in range(count):
            number += 1
            yield number, _property(rng, world, area, f"syn-{number:0{width}d}")


class _Rng(random.Random):
    """random.Random with cheap draws (one `random()` each, no argument checks).

    The stdlib's randint/choice/choices cost 0.3-1 µs a call; a million records make some
    forty million draws. The stream is still the Mersenne Twister of the seed.
    """

    def int_between(self, a: int, b: int) -> int:
        """An integer in [a, b]."""
        return a + int(self.random() * (b - a + 1))

    def pick(self, seq: Sequence[T]) -> T:
        return seq[int(self.random() * len(seq))]

    def between(self, a: float, b: float) -> float:
        return a + (b - a) * self.random()

    def lognormal(self, mu: float, sigma: float) -> float:
        """exp(N(mu, sigma)); `gauss` is about twice as fast as `lognormvariate`'s sampler."""
        return math.exp(self.gauss(mu, sigma))

    def weighted(self, values: Sequence[T], cumulative: Sequence[float]) -> T:
        """One of `values`, drawn with the running totals `cumulative`."""
        return values[bisect.bisect(cumulative, self.random() * cumulative[-1])]


def _step(x: float, step: int) -> int:
    """Round a non-negative amount to a whole multiple of `step`."""
    return int(x / step + 0.5) * step


def _plan(rng: _Rng, table: tuple[Zip, ...], n: int) -> list[tuple[Zip, int]]:
    """Choose the ZIP codes (weighted, without replacement) and how many records each gets."""
    k = max(1, min(len(table), round(n / RECORDS_PER_ZIP)))
    # Efraimidis-Spirakis: the k largest log(u)/w are a weighted sample without replacement.
    keys = [math.log(1.0 - rng.random()) / z.weight for z in table]
    chosen = sorted(heapq.nlargest(k, range(len(table)), key=keys.__getitem__))
    shares = [table[i].weight ** 0.35 * rng.lognormal(0.0, 0.3) for i in chosen]
    total = sum(shares)
    exact = [n * s / total for s in shares]
    counts = [int(x) for x in exact]
    by_fraction = sorted(range(k), key=lambda i: (counts[i] - exact[i], i))
    for i in by_fraction[: n - sum(counts)]:
        counts[i] += 1
    return [(table[i], c) for i, c in zip(chosen, counts, strict=True) if c]


class _World:
    """Per-call constants: as_of and the date text of every day of the horizon."""

    __slots__ = ("as_of", "as_of_text", "dates", "year_offsets")

    def __init__(self, as_of: dt.date) -> None:
        self.as_of = as_of
        self.as_of_text = as_of.isoformat()
        self.dates = [(as_of - dt.timedelta(days=d)).isoformat() for d in range(HORIZON_DAYS + 1)]
        self.year_offsets = {
            y: (as_of - dt.date(y, 1, 1)).days for y in range(as_of.year - 12, as_of.year + 1)
        }


class _Street:
    __slots__ = ("dlat", "dlon", "latitude", "longitude", "name", "next_number", "start")

    def __init__(self, rng: _Rng, name: str, place: Zip, spread_km: float) -> None:
        self.name = name
        self.start = rng.pick((1, 2, 10, 100, 100, 200, 500, 1000, 2000))
        self.next_number = self.start + rng.int_between(0, 40)
        distance = min(abs(rng.gauss(0.0, spread_km)), 2.5 * spread_km)
        bearing = rng.random() * math.tau
        lon_km = KM_LAT / max(0.2, math.cos(math.radians(place.latitude)))
        self.latitude = place.latitude + distance * math.cos(bearing) * KM_LAT
        self.longitude = place.longitude + distance * math.sin(bearing) * lon_km
        heading = rng.random() * math.tau
        # About one metre per house number: the usual 100 numbers to a 100 m block.
        self.dlat = 0.001 * math.cos(heading) * KM_LAT
        self.dlon = 0.001 * math.sin(heading) * lon_km

    def take(self, rng: _Rng) -> int:
        number = self.next_number
        self.next_number += rng.int_between(2, 24)
        return number


class _Building:
    """The condo building a ZIP is filling: street line, unit designator, units left."""

    __slots__ = ("designator", "index", "latitude", "left", "line", "longitude", "per_floor")

    def __init__(self, rng: _Rng, street: _Street) -> None:
        number = street.take(rng)
        offset = number - street.start
        self.line = f"{number} {street.name}"
        self.designator = "Apt" if rng.random() < 0.6 else "Unit"
        self.left = rng.int_between(4, 40)
        self.index = 0
        self.per_floor = rng.pick((0, 4, 6, 8, 10))
        """0: units numbered 1, 2, ...; else 101, 102, ..., 201, ... with this many a floor."""
        self.latitude = street.latitude + offset * street.dlat
        self.longitude = street.longitude + offset * street.dlon

    def next_unit(self) -> str:
        i, per_floor = self.index, self.per_floor
        unit = i + 1 if not per_floor else (i // per_floor + 1) * 100 + i % per_floor + 1
        self.index += 1
        self.left -= 1
        return f"{self.line} {self.designator} {unit}"


class _Area:
    """One ZIP code's market: price level, growth, streets and the condo building being filled."""

    __slots__ = (
        "assessment", "building", "density", "growth", "place", "price", "rent_yield",
        "scores", "streets", "tax_rate", "type_cumulative", "yearly",
    )  # fmt: skip

    def __init__(self, rng: _Rng, place: Zip, count: int, as_of: dt.date) -> None:
        d = place.density
        self.place = place
        self.density = d
        self.price = STATE_PRICE[place.state] * (0.8 + 0.5 * d) * rng.lognormal(0.0, 0.2)
        """Typical value of an 1,800 sq ft single-family house in this ZIP code, today."""
        self.growth = min(0.07, max(0.01, rng.gauss(0.045, 0.012)))
        self.yearly = math.exp(-self.growth)
        self.rent_yield = min(0.11, max(0.04, 0.065 * (300_000 / self.price) ** 0.3))
        self.tax_rate = STATE_TAX_RATE[place.state] * rng.between(0.85, 1.15)
        self.assessment = rng.between(0.8, 1.0)
        self.scores = (10 + 80 * d, 2 + 85 * d**1.5, 15 + 60 * d)
        self.type_cumulative = list(
            itertools.accumulate(b + s * d for b, s in zip(TYPE_BASE, TYPE_SLOPE, strict=True))
        )
        spread_km = 0.8 + 1.6 * (1.0 - d)
        names: set[str] = set()
        self.streets: list[_Street] = []
        while len(self.streets) < max(3, count // 12):
            name = f"{rng.pick(STREET_NAMES)} {rng.weighted(STREET_SUFFIXES, SUFFIX_CUMULATIVE)}"
            r = rng.random()
            if r < 0.10:
                name = f"{rng.weighted(DIRECTIONS, DIRECTION_CUMULATIVE)} {name}"
            elif r < 0.13:
                name = f"{name} {rng.weighted(DIRECTIONS, DIRECTION_CUMULATIVE)}"
            if name not in names:
                names.add(name)
                self.streets.append(_Street(rng, name, place, spread_km))
        self.building: _Building | None = None

    def address(self, rng: _Rng, condo: bool) -> tuple[str, float, float]:
        """A street line unique within the ZIP code, and its coordinates."""
        if condo:
            building = self.building
            if building is None or not building.left:
                building = self.building = _Building(rng, rng.pick(self.streets))
            return building.next_unit(), building.latitude, building.longitude
        street = rng.pick(self.streets)
        number = street.take(rng)
        offset = number - street.start
        return (
            f"{number} {street.name}",
            street.latitude + offset * street.dlat + rng.between(-4e-5, 4e-5),
            street.longitude + offset * street.dlon + rng.between(-4e-5, 4e-5),
        )


# An event while a history is built: (days before as_of, event, price, source).
_Ev = tuple[int, Event, int | None, Source]


def _property(rng: _Rng, world: _World, area: _Area, record_id: str) -> PropertyDetail:
    as_of = world.as_of
    place = area.place
    ptype = rng.weighted(PROPERTY_TYPES, area.type_cumulative)
    r = rng.random()
    status: Status = (
        "forSale" if r < 0.20 else "recentlySold" if r < 0.30 else "forRent" if r < 0.40
        else "offMarket"
    )  # fmt: skip
    land = ptype == "land"
    if land and status == "forRent":
        status = "forSale"
    street, latitude, longitude = area.address(rng, ptype == "condo")

    beds: int | None = None
    baths: float | None = None
    sqft: int | None = None
    year: int | None = None
    stories: int | None = None
    lot: int | None
    d = area.density
    if land:
        lot = int(43_560 * rng.lognormal(math.log(0.6 + 4.0 * (1 - d)), 0.9))
        value = area.price * 0.12 * (lot / 43_560) ** 0.5 * rng.lognormal(0.0, 0.35)
    else:
        year = _year_built(rng, as_of.year - (2 if status == "offMarket" else 1))
        if ptype == "singleFamily":
            beds = rng.weighted((2, 3, 4, 5, 6), (10, 55, 88, 98, 100))
            baths = max(1.0, beds - 1 + rng.pick((-1.0, -0.5, 0.0, 0.0, 0.5, 1.0)))
            sqft = max(600, _step(500 + beds * 420 + rng.gauss(0, 260), 10))
            lot = int(rng.lognormal(math.log(5_000 + 15_000 * (1 - d) ** 2), 0.45))
            stories = rng.weighted((1, 2, 3), (45, 92, 100))
            factor = 1.0
        elif ptype == "condo":
            beds = rng.weighted((0, 1, 2, 3), (8, 43, 88, 100))
            baths = 1.0 if beds <= 1 else rng.pick((1.0, 1.5, 2.0, 2.0, 2.5))
            sqft = max(380, _step(450 + beds * 380 + rng.gauss(0, 120), 10))
            lot = None  # the owner of a unit owns no lot of its own
            stories = 1
            factor = 1.05
        elif ptype == "townhouse":
            beds = rng.weighted((2, 3, 4), (35, 85, 100))
            baths = rng.pick((1.5, 2.0, 2.5, 2.5, 3.0, 3.5))
            sqft = max(800, _step(800 + beds * 270 + rng.gauss(0, 150), 10))
            lot = rng.int_between(1_200, 4_000)
            stories = rng.pick((2, 2, 2, 3))
            factor = 0.95
        else:  # multiFamily: a 2-4 unit building, bedrooms and baths summed over the units
            units = rng.pick((2, 2, 2, 3, 4))
            beds = sum(rng.pick((1, 2, 2, 3)) for _ in range(units))
            baths = float(units) + rng.pick((0.0, 0.0, 0.5, 1.0))
            sqft = max(1_400, _step(units * 950 + rng.gauss(0, 250), 10))
            lot = rng.int_between(4_000, 15_000)
            stories = rng.pick((2, 2, 3))
            factor = 0.85
        age = as_of.year - year
        factor *= 1.12 if age < 5 else 1.0 if age < 60 else 0.93
        value = area.price * (sqft / 1_800) ** 0.92 * factor * rng.lognormal(0.0, 0.18)
    value = max(value, 15_000.0)
    rent = value * area.rent_yield / 12 * rng.lognormal(0.0, 0.08)
    horizon = HORIZON_DAYS
    if year is not None:
        horizon = min(horizon, world.year_offsets.get(year, horizon))

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
    history = _History(rng, value, rent, area.growth, discount)
    final, off_market_sale = history.final(status, horizon)
    history.discount = 1.0  # a distressed sale prices only the current listing low
    if final is None:
        listing_type = None
    else:
        history.earlier(final, off_market_sale, horizon)
        if off_market_sale and status == "recentlySold":
            listing_type = None  # sold without being listed
        elif (listing_type == "standard" and status != "forRent" and year is not None
              and year >= as_of.year - 2 and len(history.episodes) == 1):  # fmt: skip
            listing_type = "newConstruction"

    dates = world.dates
    price_history = [
        PriceEvent(date=dates[o], event=e, price=p, source=s)
        for episode in history.episodes for o, e, p, s in reversed(episode)
    ]  # fmt: skip
    lifecycle.check_history(price_history, status, as_of)
    derived = lifecycle.derive(price_history, status)

    newest = history.episodes[0][-1][0] if history.episodes else HORIZON_DAYS
    seconds = int(rng.random() * 86_400)
    day = rng.int_between(0, min(newest, 14 if status != "offMarket" else 120))
    if day == 0:
        seconds = 0  # the data set is as of the start of as_of: never a time still to come
    updated = f"{dates[day]}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"

    walk, transit, bike = area.scores
    if land:
        walk, transit, bike = walk - 15, transit - 15, bike - 15
    value_now = _step(value * rng.between(0.97, 1.03), 1_000)
    value_width = rng.between(0.15, 0.25) if land else rng.between(0.06, 0.12)
    rent_now = _step(rent * rng.between(0.97, 1.03), 5)
    rent_width = rng.between(0.07, 0.12)
    return PropertyDetail(
        id=record_id,
        status=status,
        list_price=lifecycle.current_list_price(price_history, status),
        address=Address(
            street_address=street, city=place.city, state=place.state, zip_code=place.code,
            county=place.county, fips_code=place.fips,
        ),
        bedrooms_total=beds,
        bathrooms_total=baths,
        living_area=sqft,
        lot_size=lot,
        year_built=year,
        property_type=ptype,
        days_on_market=lifecycle.days_on_market(derived, price_history, status, as_of),
        price_history=price_history,
        tax_history=_taxes(rng, world, area, value, year),
        scores=Scores(
            walkability=_score(walk + rng.gauss(0, 8)),
            transit=_score(transit + rng.gauss(0, 6)),
            bike=_score(bike + rng.gauss(0, 10)),
        ),
        coordinates=Coordinates(latitude=round(latitude, 6), longitude=round(longitude, 6)),
        last_updated=updated,
        listing_type=listing_type,
        original_list_price=derived.original_list_price,
        previous_list_price=derived.previous_list_price,
        last_price_change_date=derived.last_price_change_date,
        removed_date=derived.removed_date,
        rent_estimate=None if land else Estimate(
            value=rent_now, low=_step(rent_now * (1 - rent_width), 5),
            high=_step(rent_now * (1 + rent_width), 5), as_of_date=world.as_of_text,
        ),
        value_estimate=Estimate(
            value=value_now, low=_step(value_now * (1 - value_width), 100),
            high=_step(value_now * (1 + value_width), 100), as_of_date=world.as_of_text,
        ),
        gross_yield=None,
        price_per_square_foot=None,
        stories=stories,
    )  # fmt: skip


def _year_built(rng: _Rng, latest: int) -> int:
    first, last = rng.weighted(YEAR_BANDS, YEAR_CUMULATIVE)
    last = min(last, latest)
    first = min(first, last)
    return rng.int_between(first, last)


def _score(x: float) -> int:
    return 0 if x < 0 else 100 if x > 100 else int(x + 0.5)


def _taxes(
    rng: _Rng, world: _World, area: _Area, value: float, year_built: int | None
) -> list[TaxRecord]:
    """Yearly assessments for the last 5-10 complete years (none before the house stood)."""
    first = world.as_of.year - 1
    last = first - rng.int_between(5, 10) + 1
    if year_built is not None:
        last = max(last, year_built)
    then = value * area.assessment * math.exp(-area.growth * world.year_offsets[first] / 365)
    rate, yearly, random_ = area.tax_rate, area.yearly, rng.random
    records = []
    for year in range(first, last - 1, -1):
        assessed = int(then * 0.01 + 0.5) * 100
        paid = int(assessed * rate * (0.98 + 0.04 * random_()) + 0.5)
        records.append(TaxRecord(year=year, tax_paid=paid, assessed_value=assessed))
        then *= yearly
    return records


class _History:
    """Builds a property's episodes newest first; each episode is a chronological event list.

    Dates are days before as_of (larger = older). `final` makes the episode that sets the
    status; `earlier` fills the years before it with a renewal process whose episodes only
    start from a status they may start from (contract.md's transitions): an off-market sale
    only after an episode that ends offMarket, `relisted` only after a delisting.
    """

    __slots__ = ("discount", "episodes", "growth", "rent", "rng", "value")

    def __init__(
        self, rng: _Rng, value: float, rent: float, growth: float, discount: float
    ) -> None:
        self.rng = rng
        self.value = value
        self.rent = rent
        self.growth = growth
        self.discount = discount
        self.episodes: list[list[_Ev]] = []

    # -- prices ----------------------------------------------------------------------

    def _ask(self, days: int) -> int:
        """A first asking price `days` before as_of: the value then plus a 0-6 % margin."""
        x = self.value * math.exp(-self.growth * days / 365) * self.rng.between(0.99, 1.06)
        return self._price(x * self.discount)

    def _price(self, x: float) -> int:
        """An asking price as agents write them: 349,900 or 350,000; 84,500 below 100k."""
        if x < 100_000:
            return _step(x, 500)
        price = _step(x, 1_000)
        return price - 100 if self.rng.random() < 0.4 else price

    def _rent(self, days: int) -> int:
        x = self.rent * math.exp(-0.035 * days / 365)
        return _step(x, 5 if x < 1_000 else 25)

    def _source(self, cumulative: tuple[float, ...]) -> Source:
        return self.rng.weighted(LISTING_SOURCES, cumulative)

    # -- episodes --------------------------------------------------------------------

    def _for_sale(self, start: int, until: int, pending: bool) -> list[_Ev]:
        """listedForSale at `start`, price cuts, an optional pendingSale, all before `until`."""
        rng = self.rng
        source = self._source(SALE_SOURCES)
        price = self._ask(start)
        events: list[_Ev] = [(start, "listedForSale", price, source)]
        quiet = until + 45  # no cut in the last weeks before a sale
        if start - quiet > 2:
            cuts = sorted(
                (rng.int_between(quiet + 1, start - 1) for _ in range((start - until) // 30)
                 if rng.random() < 0.3),
                reverse=True,
            )  # fmt: skip
            for day in cuts:
                if day < events[-1][0]:
                    price = self._price(price * rng.between(0.93, 0.98))
                    events.append((day, "priceChange", price, source))
        if pending:
            room = events[-1][0] - until
            if room >= 2:
                events.append((until + min(rng.int_between(7, 45), room - 1), "pendingSale", price,
                               source))  # fmt: skip
        return events

    def _sale(self, end: int, horizon: int) -> list[_Ev] | None:
        """A listing that sold at `end` (None when it cannot fit before the horizon)."""
        rng = self.rng
        start = min(end + 7 + int(rng.expovariate(1 / 50)), end + 365, horizon)
        if start - end < 7:
            return None
        events = self._for_sale(start, end, rng.random() < 0.85)
        ask = events[-1][2] or 0
        source: Source = "mls" if rng.random() < 0.7 else "publicRecord"
        events.append((end, "sold", _step(ask * rng.between(0.93, 1.03), 100), source))
        return events

    def _delisting(self, end: int, horizon: int) -> list[_Ev] | None:
        start = min(end + 30 + int(self.rng.expovariate(1 / 150)), end + 540, horizon)
        if start - end < 14:
            return None
        events = self._for_sale(start, end, False)
        events.append((end, "delisted", events[-1][2], events[0][3]))
        return events

    def _off_market_sale(self, end: int) -> list[_Ev]:
        """A sale with no listing, known from the deed (public record)."""
        x = self.value * math.exp(-self.growth * end / 365) * self.rng.between(0.85, 1.02)
        return [(end, "sold", _step(x, 100), "publicRecord")]

    def _rental(self, end: int, horizon: int) -> list[_Ev] | None:
        start = min(end + 7 + int(self.rng.expovariate(1 / 20)), end + 120, horizon)
        if start - end < 3:
            return None
        rent = self._rent(start)
        source = self._source(RENT_SOURCES)
        return [(start, "listedForRent", rent, source), (end, "rentalRemoved", rent, source)]

    def _sale_then_rent(self, end: int | None, horizon: int) -> list[_Ev] | None:
        """A sale listing that did not sell and became a rental (still open when end is None)."""
        rng = self.rng
        switch = rng.int_between(0, 75) if end is None else end + rng.int_between(7, 60)
        start = min(switch + rng.int_between(30, 150), horizon)
        if start - switch < 14:
            return None
        events = self._for_sale(start, switch, False)
        rent = self._rent(switch)
        source = self._source(RENT_SOURCES)
        events.append((switch, "listedForRent", rent, source))
        if end is not None:
            events.append((end, "rentalRemoved", rent, source))
        return events

    def _closed(self, kind: str, end: int, horizon: int) -> list[_Ev] | None:
        """An episode of `kind` that ended `end` days before as_of, or None if it cannot fit."""
        if kind == "sale":
            return self._sale(end, horizon)
        if kind == "offSale":
            return self._off_market_sale(end) if end <= horizon else None
        if kind == "delisting":
            return self._delisting(end, horizon)
        if kind == "rental":
            return self._rental(end, horizon)
        return self._sale_then_rent(end, horizon)

    def _kind(self, after_offmarket: bool) -> str | None:
        """The kind of an earlier episode; with `after_offmarket` it must end offMarket, and
        None (the history starts here) is likelier."""
        r = self.rng.random()
        if after_offmarket:
            return (None if r < 0.3 else "delisting" if r < 0.6 else "rental" if r < 0.95
                    else "saleThenRent")  # fmt: skip
        return ("sale" if r < 0.47 else "offSale" if r < 0.57 else "delisting" if r < 0.77
                else "rental" if r < 0.97 else "saleThenRent")  # fmt: skip

    # -- the two phases --------------------------------------------------------------

    def final(self, status: str, horizon: int) -> tuple[list[_Ev] | None, bool]:
        """The episode that leaves the property in `status` at as_of (None: no events in ten
        years), and whether it is an off-market sale."""
        rng = self.rng
        events: list[_Ev] | None
        if status == "forSale":
            start = rng.int_between(0, 300) if rng.random() < 0.85 else rng.int_between(301, 540)
            events = self._for_sale(min(start, horizon), 0, rng.random() < 0.15)
        elif status == "recentlySold":
            end = rng.int_between(0, SOLD_DAYS - 1)
            events = self._sale(end, horizon) if rng.random() < 0.85 else None
            if events is None:
                events = self._off_market_sale(end)
        elif status == "forRent":
            events = self._sale_then_rent(None, horizon) if rng.random() < 0.15 else None
            if events is None:
                start = rng.int_between(0, 75)
                events = [(start, "listedForRent", self._rent(start), self._source(RENT_SOURCES))]
        else:
            # The time since the last episode of a renewal process; a sale must be old
            # enough to have expired (contract.md's 180-day rule).
            kind = self._kind(False) or "sale"
            end = int(rng.expovariate(1 / MEAN_GAP_DAYS))
            if kind in ("sale", "offSale"):
                end += SOLD_DAYS + 1
            events = self._closed(kind, end, horizon) if end < horizon else None
            if events is None:
                return None, False
        self.episodes.append(events)
        return events, len(events) == 1 and events[0][1] == "sold"

    def earlier(self, newer: list[_Ev], off_market_sale: bool, horizon: int) -> None:
        """Add older episodes until the horizon; a listing soon after a delisting is `relisted`."""
        rng = self.rng
        while True:
            end = newer[0][0] + 30 + int(rng.expovariate(1 / MEAN_GAP_DAYS))
            if end >= horizon:
                return
            kind = self._kind(off_market_sale)
            if kind is None:
                return
            events = self._closed(kind, end, horizon)
            if events is None:
                return
            first = newer[0]
            if (kind == "delisting" and first[1] == "listedForSale" and end - first[0] < 365
                    and rng.random() < 0.7):  # fmt: skip
                newer[0] = (first[0], "relisted", first[2], first[3])
            self.episodes.append(events)
            off_market_sale = kind == "offSale"
            newer = events

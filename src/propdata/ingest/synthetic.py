"""A national synthetic property set over real ZIP codes, reproducible from a seed.

    for line, record in generate(100_000, seed=7, as_of=date(2025, 6, 15)):
        ...

Same (n, seed, as_of) and the same `zipcodes`/`addfips` data give the same records, byte for
byte: all randomness comes from one `random.Random(seed)` and nothing reads the clock.

The model (docs/data.md has the long form):

- Places: active STANDARD ZIP codes with a centroid in the 50 states and DC; county FIPS from
  `addfips`. About 150 records per chosen ZIP, ZIPs drawn with weight = state population x
  the ZIP's share of its state's "metro mass" (how many ZIP centroids lie within ~25 km), so
  big metros get more ZIPs and more records.
- Prices: a state level (typical home value), raised in dense ZIPs, with per-ZIP and
  per-property noise and 1-7 % yearly appreciation back in time.
- Histories: each property gets a final episode that sets its status (about 20 % forSale,
  10 % recentlySold, 10 % forRent, 60 % offMarket), preceded by a renewal process of earlier
  episodes (listed sales, off-market sales, delistings, rentals) with ~3 years between them,
  so sales and listings flow steadily through every month of the last ten years. Every
  history follows `lifecycle.TRANSITIONS` and is checked with `lifecycle.check_history`.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

import addfips
import zipcodes

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
SUFFIX_WEIGHTS = (25, 18, 14, 12, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1)
DIRECTIONS = ("N", "S", "E", "W", "NE", "NW", "SE", "SW")
DIRECTION_WEIGHTS = (5, 5, 5, 5, 1, 1, 1, 1)

PROPERTY_TYPES: tuple[PropertyType, ...] = ("singleFamily", "condo", "townhouse", "multiFamily",
                                            "land")  # fmt: skip
# Share of each type at density 0 (rural) and the change towards density 1 (urban core).
TYPE_BASE = (0.70, 0.06, 0.08, 0.06, 0.10)
TYPE_SLOPE = (-0.35, 0.34, 0.04, 0.06, -0.09)

# Year built: (first year, last year, weight); the US stock leans to 1950-2010.
YEAR_BANDS = ((1880, 1939, 13), (1940, 1949, 5), (1950, 1959, 10), (1960, 1969, 10),
              (1970, 1979, 15), (1980, 1989, 13), (1990, 1999, 13), (2000, 2009, 14),
              (2010, 2100, 7))  # fmt: skip

LISTING_SOURCES: tuple[Source, ...] = ("mls", "agent", "owner")
SALE_SOURCE_WEIGHTS = (0.80, 0.92)  # cumulative: mls, agent, then owner (FSBO)
RENT_SOURCE_WEIGHTS = (0.45, 0.70)  # cumulative: mls, agent, then owner

KM_LAT = 1 / 111.32
"""Degrees of latitude per km."""


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


def bare_county(name: str) -> str:
    """Drop the county-type word zipcodes appends: "Story County" -> "Story".

    Virginia's independent cities keep "city" ("Richmond city" is not Richmond County).
    """
    for suffix in (" County", " Parish", " Borough", " Census Area", " Municipality",
                   " City and Borough"):  # fmt: skip
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@cache
def zip_table() -> tuple[Zip, ...]:
    """The eligible ZIP codes, sorted by code; built once per process (about 0.6 s)."""
    rows = [
        z for z in zipcodes.list_all()
        if z["zip_code_type"] == "STANDARD" and z["active"] and z["lat"] and z["long"]
        and z["state"] in STATE_POPULATION and z["county"]
    ]  # fmt: skip
    rows.sort(key=lambda z: str(z["zip_code"]))
    fips_of = _county_codes(rows)
    rows = [z for z in rows if fips_of[(z["county"], z["state"])] is not None]
    points = [(float(z["lat"]), float(z["long"])) for z in rows]
    local = _neighbours(points, 0.05)
    metro = _neighbours(points, 0.15)
    mass: Counter[str] = Counter()
    for z, m in zip(rows, metro, strict=True):
        mass[z["state"]] += m**1.2
    table = []
    for z, (lat, lon), near, m in zip(rows, points, local, metro, strict=True):
        state = z["state"]
        table.append(Zip(
            code=z["zip_code"], city=z["city"], state=state, county=bare_county(z["county"]),
            fips=cast(str, fips_of[(z["county"], state)]), latitude=lat, longitude=lon,
            density=min(1.0, math.log(near) / math.log(61)),
            weight=STATE_POPULATION[state] * m**1.2 / mass[state],
        ))  # fmt: skip
    return tuple(table)


def _county_codes(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str | None]:
    finder = addfips.AddFIPS()
    codes: dict[tuple[str, str], str | None] = {}
    for z in rows:
        key = (z["county"], z["state"])
        if key not in codes:
            codes[key] = finder.get_county_fips(key[0], state=key[1])
    return codes


def _neighbours(points: list[tuple[float, float]], size: float) -> list[int]:
    """How many points share each point's grid cell of `size` degrees or one of its 8 neighbours."""
    cells = [(math.floor(lat / size), math.floor(lon / size)) for lat, lon in points]
    counts = Counter(cells)
    return [
        sum(counts[(a + i, b + j)] for i in (-1, 0, 1) for j in (-1, 0, 1)) for a, b in cells
    ]


def generate(n: int, seed: int, as_of: dt.date) -> Iterator[tuple[int, PropertyDetail]]:
    """Yield n synthetic records (1-based number, record) with ids `syn-0000001`...."""
    if n < 0:
        raise ValueError("n must not be negative")
    if n == 0:
        return
    rng = random.Random(seed)
    width = max(7, len(str(n)))
    world = _World(as_of)
    number = 0
    for place, count in _plan(rng, zip_table(), n):
        area = _Area(rng, place, count, as_of)
        for _ in range(count):
            number += 1
            yield number, _property(rng, world, area, f"syn-{number:0{width}d}")


def _plan(rng: random.Random, table: tuple[Zip, ...], n: int) -> list[tuple[Zip, int]]:
    """Choose the ZIP codes (weighted, without replacement) and how many records each gets."""
    k = max(1, min(len(table), round(n / RECORDS_PER_ZIP)))
    # Efraimidis-Spirakis: the k largest log(u)/w are a weighted sample without replacement.
    keys = [math.log(1.0 - rng.random()) / z.weight for z in table]
    chosen = sorted(heapq.nlargest(k, range(len(table)), key=keys.__getitem__))
    shares = [table[i].weight ** 0.35 * rng.lognormvariate(0.0, 0.3) for i in chosen]
    total = sum(shares)
    exact = [n * s / total for s in shares]
    counts = [int(x) for x in exact]
    by_fraction = sorted(range(k), key=lambda i: (counts[i] - exact[i], i))
    for i in by_fraction[: n - sum(counts)]:
        counts[i] += 1
    return [(table[i], c) for i, c in zip(chosen, counts, strict=True) if c]


class _World:
    """Per-call constants: as_of, its date strings, the year-built bands."""

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

    def __init__(self, rng: random.Random, name: str, place: Zip, spread_km: float) -> None:
        self.name = name
        self.start = self.next_number = rng.choice((1, 2, 10, 100, 100, 200, 500, 1000, 2000))
        self.next_number += rng.randrange(0, 40)
        distance = min(abs(rng.gauss(0.0, spread_km)), 2.5 * spread_km)
        bearing = rng.random() * math.tau
        lon_km = KM_LAT / max(0.2, math.cos(math.radians(place.latitude)))
        self.latitude = place.latitude + distance * math.cos(bearing) * KM_LAT
        self.longitude = place.longitude + distance * math.sin(bearing) * lon_km
        heading = rng.random() * math.tau
        # About one metre per house number, the usual 100 numbers to a 100 m block.
        self.dlat = 0.001 * math.cos(heading) * KM_LAT
        self.dlon = 0.001 * math.sin(heading) * lon_km

    def take(self, rng: random.Random) -> int:
        number = self.next_number
        self.next_number += rng.randint(2, 24)
        return number


class _Area:
    """One ZIP code's market: price level, growth, streets and the building a condo is in."""

    __slots__ = (
        "assessment", "building", "density", "growth", "place", "price", "rent_yield",
        "scores", "spread_km", "streets", "tax_rate", "type_cumulative",
    )  # fmt: skip

    def __init__(self, rng: random.Random, place: Zip, count: int, as_of: dt.date) -> None:
        d = place.density
        self.place = place
        self.density = d
        self.price = STATE_PRICE[place.state] * (0.8 + 0.5 * d) * rng.lognormvariate(0.0, 0.2)
        self.growth = min(0.08, max(0.01, rng.gauss(0.045, 0.012)))
        self.rent_yield = min(0.11, max(0.04, 0.065 * (300_000 / self.price) ** 0.3))
        self.tax_rate = STATE_TAX_RATE[place.state] * rng.uniform(0.85, 1.15)
        self.assessment = rng.uniform(0.8, 1.0)
        self.scores = (10 + 80 * d, 2 + 85 * d**1.5, 15 + 60 * d)
        self.spread_km = 0.8 + 1.6 * (1.0 - d)
        weights = [b + s * d for b, s in zip(TYPE_BASE, TYPE_SLOPE, strict=True)]
        total = sum(weights)
        running = 0.0
        self.type_cumulative: list[float] = []
        for w in weights:
            running += w / total
            self.type_cumulative.append(running)
        names: set[str] = set()
        self.streets: list[_Street] = []
        while len(self.streets) < max(3, count // 12):
            name = f"{rng.choice(STREET_NAMES)} {rng.choices(STREET_SUFFIXES, SUFFIX_WEIGHTS)[0]}"
            r = rng.random()
            if r < 0.10:
                name = f"{rng.choices(DIRECTIONS, DIRECTION_WEIGHTS)[0]} {name}"
            elif r < 0.13:
                name = f"{name} {rng.choices(DIRECTIONS, DIRECTION_WEIGHTS)[0]}"
            if name not in names:
                names.add(name)
                self.streets.append(_Street(rng, name, place, self.spread_km))
        self.building: list[Any] | None = None
        """[street line, designator, units left, next unit index, floor size, latitude, longitude]"""

    def address(self, rng: random.Random, condo: bool) -> tuple[str, float, float]:
        """A street line unique within the ZIP code, and its coordinates."""
        if condo:
            b = self.building
            if b is None or b[2] == 0:
                street = rng.choice(self.streets)
                number = street.take(rng)
                offset = number - street.start
                b = self.building = [
                    f"{number} {street.name}", "Apt" if rng.random() < 0.6 else "Unit",
                    rng.randint(4, 40), 0, rng.choice((0, 4, 6, 8, 10)),
                    street.latitude + offset * street.dlat, street.longitude + offset * street.dlon,
                ]  # fmt: skip
            index, per_floor = b[3], b[4]
            unit = index + 1 if not per_floor else (index // per_floor + 1) * 100 + index % per_floor + 1
            b[2] -= 1
            b[3] += 1
            return f"{b[0]} {b[1]} {unit}", b[5], b[6]
        street = rng.choice(self.streets)
        number = street.take(rng)
        offset = number - street.start
        jitter = 0.00004
        return (
            f"{number} {street.name}",
            street.latitude + offset * street.dlat + rng.uniform(-jitter, jitter),
            street.longitude + offset * street.dlon + rng.uniform(-jitter, jitter),
        )


# An event while building a history: (days before as_of, event, price, source).
_Ev = tuple[int, str, int | None, str]


def _property(rng: random.Random, world: _World, area: _Area, record_id: str) -> PropertyDetail:
    as_of = world.as_of
    place = area.place
    r = rng.random()
    ptype = PROPERTY_TYPES[next(i for i, c in enumerate(area.type_cumulative) if r < c or i == 4)]
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
        lot = round(43_560 * rng.lognormvariate(math.log(0.6 + 4.0 * (1 - d)), 0.9))
        value = area.price * 0.12 * (lot / 43_560) ** 0.5 * rng.lognormvariate(0.0, 0.35)
    else:
        year = _year_built(rng, as_of.year - (2 if status == "offMarket" else 1))
        if ptype == "singleFamily":
            beds = rng.choices((2, 3, 4, 5, 6), (10, 45, 33, 10, 2))[0]
            baths = max(1.0, beds - 1 + rng.choice((-1.0, -0.5, 0.0, 0.0, 0.5, 1.0)))
            sqft = max(600, round(500 + beds * 420 + rng.gauss(0, 260), -1))
            lot = round(rng.lognormvariate(math.log(5_000 + 15_000 * (1 - d) ** 2), 0.45))
            stories = rng.choices((1, 2, 3), (45, 47, 8))[0]
            factor = 1.0
        elif ptype == "condo":
            beds = rng.choices((0, 1, 2, 3), (8, 35, 45, 12))[0]
            baths = 1.0 if beds <= 1 else rng.choice((1.0, 1.5, 2.0, 2.0, 2.5))
            sqft = max(380, round(450 + beds * 380 + rng.gauss(0, 120), -1))
            lot = None
            stories = 1
            factor = 1.05
        elif ptype == "townhouse":
            beds = rng.choices((2, 3, 4), (35, 50, 15))[0]
            baths = rng.choice((1.5, 2.0, 2.5, 2.5, 3.0, 3.5))
            sqft = max(800, round(900 + beds * 300 + rng.gauss(0, 150), -1))
            lot = round(rng.uniform(1_200, 4_000))
            stories = rng.choice((2, 2, 2, 3))
            factor = 0.95
        else:  # multiFamily: a 2-4 unit building, counts summed over the units
            units = rng.choice((2, 2, 2, 3, 4))
            beds = sum(rng.choice((1, 2, 2, 3)) for _ in range(units))
            baths = float(units) + rng.choice((0.0, 0.0, 0.5, 1.0))
            sqft = max(1_400, round(units * 850 + rng.gauss(0, 250), -1))
            lot = round(rng.uniform(4_000, 15_000))
            stories = rng.choice((2, 2, 3))
            factor = 0.85
        age = as_of.year - year
        factor *= 1.12 if age < 5 else 1.0 if age < 60 else 0.93
        value = area.price / 1_800 * sqft**0.92 * 1_800**0.08 * factor * rng.lognormvariate(0, 0.18)
    value = max(value, 15_000.0)
    rent = value * area.rent_yield / 12 * rng.lognormvariate(0.0, 0.08)
    horizon = HORIZON_DAYS if year is None else min(HORIZON_DAYS, world.year_offsets.get(year, HORIZON_DAYS))

    distressed = 0.0 if status in ("forRent", "offMarket") else rng.random()
    listing_type: ListingType | None = (
        None if status == "offMarket" else "foreclosure" if distressed > 0.97
        else "shortSale" if distressed > 0.95 else "auction" if distressed > 0.935 else "standard"
    )  # fmt: skip
    history = _History(rng, value, rent, area.growth, 0.82 if distressed > 0.935 else 1.0)
    events, off_market_sale = history.final(status, horizon)
    history.discount = 1.0  # a distressed sale prices only the current listing low
    if events is None:
        listing_type = None
    else:
        history.earlier(events, off_market_sale, horizon)
    if off_market_sale and status == "recentlySold":
        listing_type = None
    elif listing_type == "standard" and year is not None and year >= as_of.year - 2:
        if len(history.episodes) == 1 and status != "forRent":
            listing_type = "newConstruction"

    dates = world.dates
    price_history = [
        PriceEvent(date=dates[o], event=cast(Event, e), price=p, source=cast(Source, s))
        for episode in history.episodes for o, e, p, s in reversed(episode)
    ]  # fmt: skip
    lifecycle.check_history(price_history, status, as_of)
    derived = lifecycle.derive(price_history, status)

    newest = history.episodes[0][-1][0] if history.episodes else HORIZON_DAYS
    window = min(newest, 14 if status != "offMarket" else 120)
    seconds = rng.randrange(86_400)
    updated = (
        f"{dates[rng.randint(0, window)]}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:"
        f"{seconds % 60:02d}Z"
    )

    walk, transit, bike = area.scores
    penalty = 15 if land else 0
    value_now = round(value * rng.uniform(0.97, 1.03), -3)
    value_width = rng.uniform(0.15, 0.25) if land else rng.uniform(0.06, 0.12)
    rent_now = 5 * round(rent * rng.uniform(0.97, 1.03) / 5)
    rent_width = rng.uniform(0.07, 0.12)
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
            walkability=_score(walk - penalty + rng.gauss(0, 8)),
            transit=_score(transit - penalty + rng.gauss(0, 6)),
            bike=_score(bike - penalty + rng.gauss(0, 10)),
        ),
        coordinates=Coordinates(latitude=round(latitude, 6), longitude=round(longitude, 6)),
        last_updated=updated,
        listing_type=listing_type,
        original_list_price=derived.original_list_price,
        previous_list_price=derived.previous_list_price,
        last_price_change_date=derived.last_price_change_date,
        removed_date=derived.removed_date,
        rent_estimate=None if land else Estimate(
            value=rent_now, low=round(rent_now * (1 - rent_width)),
            high=round(rent_now * (1 + rent_width)), as_of_date=world.as_of_text,
        ),
        value_estimate=Estimate(
            value=value_now, low=round(value_now * (1 - value_width), -2),
            high=round(value_now * (1 + value_width), -2), as_of_date=world.as_of_text,
        ),
        gross_yield=None,
        price_per_square_foot=None,
        stories=stories,
    )  # fmt: skip


def _year_built(rng: random.Random, latest: int) -> int:
    band = rng.choices(YEAR_BANDS, [w for _, _, w in YEAR_BANDS])[0]
    first, last = band[0], min(band[1], latest)
    return rng.randint(min(first, last), last)


def _score(x: float) -> int:
    return 0 if x < 0 else 100 if x > 100 else round(x)


def _taxes(
    rng: random.Random, world: _World, area: _Area, value: float, year_built: int | None
) -> list[TaxRecord]:
    """Yearly assessments for the last 5-10 complete years (none before the house stood)."""
    records = []
    growth = area.growth
    first = world.as_of.year - 1
    for year in range(first, first - rng.randint(5, 10), -1):
        if year_built is not None and year < year_built:
            break
        then = value * math.exp(-growth * world.year_offsets[year] / 365)
        assessed = round(then * area.assessment, -2)
        paid = round(assessed * area.tax_rate * rng.uniform(0.98, 1.02))
        records.append(TaxRecord(year=year, tax_paid=paid, assessed_value=assessed))
    return records


class _History:
    """Builds a property's episodes newest first; each episode is a chronological event list.

    Dates are days before as_of (larger = older). `final` makes the episode that sets the
    status; `earlier` fills the years before it with a renewal process whose episodes only
    start from a status they are allowed to start from (contract.md's transitions).
    """

    __slots__ = ("discount", "episodes", "growth", "rent", "rng", "value")

    def __init__(
        self, rng: random.Random, value: float, rent: float, growth: float, discount: float
    ) -> None:
        self.rng = rng
        self.value = value
        self.rent = rent
        self.growth = growth
        self.discount = discount
        self.episodes: list[list[_Ev]] = []

    # -- prices ----------------------------------------------------------------------

    def _ask(self, days: int) -> int:
        x = self.value * math.exp(-self.growth * days / 365) * (1 + self.rng.uniform(-0.01, 0.06))
        return self._round(x * self.discount)

    def _round(self, x: float) -> int:
        if x >= 100_000:
            price = round(x, -3)
            return int(price - 100 if self.rng.random() < 0.4 else price)
        return int(round(x, -2))

    def _rent(self, days: int) -> int:
        x = self.rent * math.exp(-0.035 * days / 365)
        return 5 * round(x / 5) if x < 1_000 else 25 * round(x / 25)

    def _source(self, cumulative: tuple[float, float]) -> str:
        r = self.rng.random()
        return LISTING_SOURCES[0 if r < cumulative[0] else 1 if r < cumulative[1] else 2]

    # -- episodes --------------------------------------------------------------------

    def _for_sale(self, start: int, until: int, pending: bool) -> list[_Ev]:
        """listedForSale at `start`, price cuts, an optional pendingSale, all before `until`."""
        rng = self.rng
        source = self._source(SALE_SOURCE_WEIGHTS)
        price = self._ask(start)
        events: list[_Ev] = [(start, "listedForSale", price, source)]
        quiet = until + 45  # no cut in the last weeks before a sale
        cuts = sorted(
            (rng.randint(quiet + 1, start - 1) for _ in range((start - until) // 30)
             if rng.random() < 0.3 and start - quiet > 2),
            reverse=True,
        )  # fmt: skip
        for day in cuts:
            if day < events[-1][0]:
                price = self._round(price * (1 - rng.uniform(0.02, 0.07)))
                events.append((day, "priceChange", price, source))
        if pending:
            last = events[-1][0]
            if last - until >= 2:
                day = max(until + 1, until + min(rng.randint(7, 45), last - until - 1))
                events.append((day, "pendingSale", price, source))
        return events

    def _sale(self, end: int, horizon: int) -> list[_Ev] | None:
        """A listing that sold at `end` (None when it cannot fit before the horizon)."""
        rng = self.rng
        start = min(end + 7 + int(rng.expovariate(1 / 50)), end + 365, horizon)
        if start - end < 7:
            return None
        events = self._for_sale(start, end, rng.random() < 0.85)
        ask = events[-1][2] or events[0][2] or 0
        sold = int(round(ask * rng.uniform(0.93, 1.03), -2))
        source = "mls" if rng.random() < 0.7 else "publicRecord"
        events.append((end, "sold", sold, source))
        return events

    def _delisting(self, end: int, horizon: int) -> list[_Ev] | None:
        start = min(end + 30 + int(self.rng.expovariate(1 / 100)), end + 500, horizon)
        if start - end < 14:
            return None
        events = self._for_sale(start, end, False)
        events.append((end, "delisted", events[-1][2], events[0][3]))
        return events

    def _off_market_sale(self, end: int) -> list[_Ev]:
        x = self.value * math.exp(-self.growth * end / 365) * self.rng.uniform(0.85, 1.02)
        return [(end, "sold", int(round(x, -2)), "publicRecord")]

    def _rental(self, end: int, horizon: int) -> list[_Ev] | None:
        start = min(end + 7 + int(self.rng.expovariate(1 / 20)), end + 120, horizon)
        if start - end < 3:
            return None
        rent = self._rent(start)
        source = self._source(RENT_SOURCE_WEIGHTS)
        return [(start, "listedForRent", rent, source), (end, "rentalRemoved", rent, source)]

    def _sale_then_rent(self, end: int | None, horizon: int) -> list[_Ev] | None:
        """A sale listing that did not sell and became a rental (still open when end is None)."""
        rng = self.rng
        switch = (end if end is not None else 0) + (
            rng.randint(7, 60) if end is not None else rng.randint(0, 75)
        )
        start = min(switch + rng.randint(30, 150), horizon)
        if start - switch < 14:
            return None
        events = self._for_sale(start, switch, False)
        rent = self._rent(switch)
        source = self._source(RENT_SOURCE_WEIGHTS)
        events.append((switch, "listedForRent", rent, source))
        if end is not None:
            events.append((end, "rentalRemoved", rent, source))
        return events

    def _closed(self, kind: str, end: int, horizon: int) -> list[_Ev] | None:
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
        """The kind of an earlier episode; `after_offmarket`: it must leave offMarket behind."""
        r = self.rng.random()
        if after_offmarket:
            return None if r < 0.3 else "delisting" if r < 0.6 else "rental" if r < 0.95 else "saleThenRent"
        return ("sale" if r < 0.52 else "offSale" if r < 0.62 else "delisting" if r < 0.77
                else "rental" if r < 0.97 else "saleThenRent")  # fmt: skip

    # -- the two phases --------------------------------------------------------------

    def final(self, status: str, horizon: int) -> tuple[list[_Ev] | None, bool]:
        """The episode that leaves the property in `status` at as_of, and whether it is an
        off-market sale (the episode before it must then end offMarket)."""
        rng = self.rng
        events: list[_Ev] | None
        if status == "forSale":
            start = min(rng.randint(0, 300) if rng.random() < 0.85 else rng.randint(300, 540), horizon)
            events = self._for_sale(start, 0, rng.random() < 0.15) if start > 0 else []
            if not events:
                events = [(0, "listedForSale", self._ask(0), self._source(SALE_SOURCE_WEIGHTS))]
        elif status == "recentlySold":
            end = rng.randint(0, SOLD_DAYS - 1)
            events = self._sale(end, horizon) if rng.random() < 0.85 else None
            if events is None:
                events = self._off_market_sale(end)
        elif status == "forRent":
            events = self._sale_then_rent(None, horizon) if rng.random() < 0.15 else None
            if events is None:
                start = rng.randint(0, 75)
                events = [(start, "listedForRent", self._rent(start),
                           self._source(RENT_SOURCE_WEIGHTS))]  # fmt: skip
        else:
            kind = cast(str, self._kind(False))
            end = int(rng.expovariate(1 / MEAN_GAP_DAYS))
            if kind in ("sale", "offSale"):
                end += SOLD_DAYS + 1
            events = self._closed(kind, end, horizon) if end < horizon else None
            if events is None:
                return None, False
        self.episodes.append(events)
        return events, len(events) == 1 and events[0][1] == "sold"

    def earlier(self, newer: list[_Ev], off_market_sale: bool, horizon: int) -> None:
        """Prepend older episodes until the horizon; relabel a listing after a delisting."""
        rng = self.rng
        cursor = newer[0][0]
        while True:
            end = cursor + 30 + int(rng.expovariate(1 / MEAN_GAP_DAYS))
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
            cursor = events[0][0]

"""Where the synthetic homes are: real delivery ZIP codes weighted by population, the
streets and condo buildings of each, and the per-run calendar.

    table = zip_table()                      # the eligible ZIP codes, built once
    for place, count in plan(rng, table, n):  # which ZIP codes, how many homes each
        area = Area(rng, place, count)
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import cast

from propdata.ingest.synthetic.rng import Rng
from propdata.ingest.synthetic.tables import (
    DIRECTION_CUMULATIVE,
    DIRECTIONS,
    HORIZON_DAYS,
    KM_LAT,
    RECORDS_PER_ZIP,
    STATE_POPULATION,
    STATE_PRICE,
    STATE_TAX_RATE,
    STREET_NAMES,
    STREET_SUFFIXES,
    SUFFIX_CUMULATIVE,
    TYPE_BASE,
    TYPE_SLOPE,
)
from propdata.kit import geography


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


def plan(rng: Rng, table: tuple[Zip, ...], n: int) -> list[tuple[Zip, int]]:
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


class World:
    """Per-call constants: as_of and the date text of every day of the horizon.

    The only thing the build day changes: the generator works in days before as_of, and
    these turn them into dates.
    """

    __slots__ = ("as_of", "as_of_text", "dates")

    def __init__(self, as_of: dt.date) -> None:
        self.as_of = as_of
        self.as_of_text = as_of.isoformat()
        self.dates = [(as_of - dt.timedelta(days=d)).isoformat() for d in range(HORIZON_DAYS + 1)]


class _Street:
    __slots__ = ("dlat", "dlon", "latitude", "longitude", "name", "next_number", "start")

    def __init__(self, rng: Rng, name: str, place: Zip, spread_km: float) -> None:
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

    def take(self, rng: Rng) -> int:
        number = self.next_number
        self.next_number += rng.int_between(2, 24)
        return number


class _Building:
    """The condo building a ZIP is filling: street line, unit designator, units left."""

    __slots__ = ("designator", "index", "latitude", "left", "line", "longitude", "per_floor")

    def __init__(self, rng: Rng, street: _Street) -> None:
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


class Area:
    """One ZIP code's market: price level, growth, streets and the condo building being filled."""

    __slots__ = (
        "assessment", "building", "density", "growth", "place", "price", "rent_yield",
        "scores", "streets", "tax_rate", "type_cumulative", "yearly",
    )  # fmt: skip

    def __init__(self, rng: Rng, place: Zip, count: int) -> None:
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

    def address(self, rng: Rng, condo: bool) -> tuple[str, float, float]:
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

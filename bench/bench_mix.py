"""The request mixes wrk rotates through, built from real values of the store.

Each mix is a list of paths (with their query), written one a line for bench/wrk/rotate.lua.
The search mix is also translated into datasette's table filters, request for request, and
`compare` checks that both services return the same rows for a search.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from propdata.kit.addresses import city_key
from propdata.search import filters
from propdata.search.parameters import DECLARED

FILTERS = tuple(f.parameter for f in filters.FILTERS)
SORTS = ("lastUpdated", "listPrice", "daysOnMarket", "livingArea")
GEO = ("latitude", "longitude", "radius", "bbox")
"""The parameters of the radius mix (a box in some of its searches)."""
SORT_COLUMNS = filters.SORT_COLUMNS
NULLABLE_SORTS = {"listPrice", "daysOnMarket", "livingArea"}
STATUSES = ("forSale", "recentlySold", "forRent", "offMarket")
TYPES = ("singleFamily", "condo", "townhouse", "multiFamily", "land")
PAGE_SIZES = (10, 20, 25, 50, 100)
SEARCH_COLUMNS = (
    "status", "list_price", "street_address", "city", "state", "zip_code", "bedrooms",
    "bathrooms", "living_area", "days_on_market", "last_sale_price", "last_sale_date",
    "last_updated",
)  # fmt: skip
"""The columns of a search item besides id: what datasette is asked for (`_col`)."""


@dataclass
class Search:
    """One search: our query parameters (API names) and the path that asks it."""

    params: dict[str, Any]
    endpoint: str = "/v1/properties"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.endpoint + "?" + urlencode(self.params, quote_via=quote)

    @property
    def first_page(self) -> Search:
        """The same search at offset 0: what datasette is asked, and compared on."""
        params = {k: v for k, v in self.params.items() if k != "offset"}
        return Search(params, self.endpoint, dict(self.extra))

    @property
    def sort(self) -> str:
        return str(self.params.get("sort", "lastUpdated"))

    @property
    def order(self) -> str:
        return str(self.params.get("order", "desc"))


def id_paths(ids: Sequence[str]) -> list[str]:
    return [f"/v1/properties/{quote(i)}" for i in ids]


def _round_down(value: float, step: int) -> int:
    return max(0, int(value // step * step))


def _round_up(value: float, step: int) -> int:
    return int(-(-value // step) * step)


def _filter(name: str, row: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Values for one filter around a real record's, so most searches find something."""
    price, beds = row["list_price"], row["bedrooms"]
    baths, sqft = row["bathrooms"], row["living_area"]
    if name == "zipCode":
        return {"zipCode": row["zip_code"]}
    if name == "city":  # a city name is ambiguous across states; usually given with one
        return (
            {"city": row["city"], "state": row["state"]}
            if rng.random() < 0.8
            else {"city": row["city"]}
        )
    if name == "state":
        return {"state": row["state"] if rng.random() < 0.7 else row["state"].lower()}
    if name == "status":
        return {"status": row["status"] if rng.random() < 0.7 else rng.choice(STATUSES)}
    if name == "propertyType":
        return {"propertyType": row["property_type"] or rng.choice(TYPES)}
    if name == "minPrice":
        return {"minPrice": _round_down((price or 300_000) * rng.uniform(0.5, 0.95), 10_000)}
    if name == "maxPrice":
        return {"maxPrice": _round_up((price or 300_000) * rng.uniform(1.05, 1.6), 10_000)}
    if name == "minBeds":
        return {"minBeds": max(0, (beds or 3) - rng.choice((0, 1, 1, 2)))}
    if name == "maxBeds":
        return {"maxBeds": (beds or 3) + rng.choice((0, 1, 1, 2))}
    if name == "minBaths":
        return {"minBaths": max(0.0, float(baths or 2) - rng.choice((0, 0.5, 1)))}
    if name == "minSqft":
        return {"minSqft": _round_down((sqft or 1_500) * rng.uniform(0.6, 0.95), 100)}
    if name == "maxSqft":
        return {"maxSqft": _round_up((sqft or 1_500) * rng.uniform(1.05, 1.5), 100)}
    if name == "minYearBuilt":
        return {"minYearBuilt": _round_down((row["year_built"] or 1970) - rng.randint(0, 30), 5)}
    if name == "maxDaysOnMarket":
        return {"maxDaysOnMarket": rng.choice((7, 30, 60, 90, 180, 365))}
    raise ValueError(name)


def search_mix(rows: Sequence[dict[str, Any]], count: int, seed: int) -> list[Search]:
    """`count` searches over every filter, sort, order, page sizes up to 100 and offsets up
    to 1,000.

    Search i always carries filter i mod 14, so each filter is used as often as the others;
    a place (ZIP code, city, state) comes with most searches, as in an application, and about
    one in five has no place at all (a national search, the costliest to count). Up to three
    further filters are drawn around one real record, so most searches find something; price
    and days-on-market filters come with a listing status (never offMarket). Half
    the page sizes are the usual ones (10, 20, 25, 50, 100), half drawn from 1-100; half the
    searches ask a page past the first (an offset drawn from 1-1,000, as an application's
    later pages). datasette's table API pages by cursor, not offset: it is asked each
    search's `first_page`, and compared on it. Deep offsets have a scenario of their own.
    Drawn values make nearly every search distinct;
    bench/run.py asks for more than a run can answer, so none repeats within a run and no
    total kept by the service for a set of filters is reused.
    """
    rng = random.Random(seed)
    searches: list[Search] = []
    for i in range(count):
        row = rng.choice(rows)
        params: dict[str, Any] = {}
        wanted = [FILTERS[i % len(FILTERS)]]
        place = rng.random()
        if place < 0.35:
            wanted.append("zipCode")
        elif place < 0.6:
            wanted.append("city")
        elif place < 0.8:
            wanted.append("state")
        others = [f for f in FILTERS if f not in ("zipCode", "city", "state")]
        wanted += rng.sample(others, rng.randint(0, 3))
        for name in dict.fromkeys(wanted):
            params.update(_filter(name, row, rng))
        # Off-market records have no list price and no days on market, so no application
        # asks for them with those filters: a listing filter comes with a listing status,
        # as docs/api.md advises for prices.
        if {"minPrice", "maxPrice", "maxDaysOnMarket"} & params.keys():
            if params.get("status") == "offMarket":
                params["status"] = rng.choice(("forSale", "forSale", "forSale", "forRent"))
            elif "status" not in params and rng.random() < 0.5:
                params["status"] = "forSale"
        for low, high in (("minPrice", "maxPrice"), ("minBeds", "maxBeds"), ("minSqft", "maxSqft")):
            if low in params and high in params and params[low] > params[high]:
                params[low], params[high] = params[high], params[low]
        sort = rng.choice(SORTS)
        order = rng.choice(("asc", "desc"))
        if sort != "lastUpdated" or rng.random() < 0.5:  # also the defaults, unstated
            params["sort"] = sort
        if order != "desc" or rng.random() < 0.5:
            params["order"] = order
        params["limit"] = rng.choice(PAGE_SIZES) if rng.random() < 0.5 else rng.randint(1, 100)
        if rng.random() < 0.5:
            params["offset"] = rng.randint(1, 1_000)
        endpoint = "/v1/properties" if i % 2 == 0 else "/v1/properties/search"
        searches.append(Search(params, endpoint))
    return searches


def offset_mix(count: int, seed: int, offset: int = 100_000) -> list[Search]:
    """Page `offset` of a search with one filter, over every sort, order and a few sizes.

    Each filter matches well over 100,000 records at 1,000,000 properties. There are only
    five of them, like a client paging deep into one search: the service keeps the exact
    total of a set of filters, so after each worker's first request the cost measured is
    the page's, which is what this scenario is about. (An extra filter to make every
    request distinct would change the query plan, not just the counting.)
    """
    rng = random.Random(seed)
    filters: list[dict[str, Any]] = [
        {"status": "offMarket"},
        {"status": "forSale"},
        {"propertyType": "singleFamily"},
        {"minBeds": 3},
        {"minYearBuilt": 1960},
    ]
    searches = []
    for i in range(count):
        params = dict(filters[i % len(filters)])
        params.update(sort=rng.choice(SORTS), order=rng.choice(("asc", "desc")),
                      limit=rng.choice((10, 25, 50, 100)), offset=offset)  # fmt: skip
        searches.append(Search(params))
    return searches


def radius_mix(rows: Sequence[dict[str, Any]], count: int, seed: int) -> list[Search]:
    """`count` radius searches around real records' points, 0.5 to 25 miles.

    Half of them add one to three filters drawn around the record (as the search mix does),
    half have none; half sort by distance (nearest first, sometimes farthest), the others by
    a random sort. One in seven is a box of the same size instead of a circle. Points are
    moved up to about a mile off the record, so nearly every search is distinct.
    """
    placed = [r for r in rows if r.get("latitude") is not None]
    rng = random.Random(seed)
    searches: list[Search] = []
    for i in range(count):
        row = rng.choice(placed)
        lat = round(row["latitude"] + rng.uniform(-0.015, 0.015), 5)
        lon = round(row["longitude"] + rng.uniform(-0.015, 0.015), 5)
        radius = round(rng.uniform(0.5, 25), 1)
        params: dict[str, Any] = {}
        if i % 7 == 6:
            dlat, dlon = radius / 69.0, radius / 52.0
            params["bbox"] = f"{lon - dlon:.5f},{lat - dlat:.5f},{lon + dlon:.5f},{lat + dlat:.5f}"
        else:
            params.update(latitude=lat, longitude=lon, radius=radius)
        if rng.random() < 0.5:
            names = rng.sample([f for f in FILTERS if f not in ("zipCode", "city", "state")],
                               rng.randint(1, 3))  # fmt: skip
            for name in names:
                params.update(_filter(name, row, rng))
            listing = {"minPrice", "maxPrice", "maxDaysOnMarket"} & params.keys()
            if listing and params.get("status") in (None, "offMarket"):
                params["status"] = "forSale"
            for low, high in (("minPrice", "maxPrice"), ("minBeds", "maxBeds"),
                              ("minSqft", "maxSqft")):  # fmt: skip
                if low in params and high in params and params[low] > params[high]:
                    params[low], params[high] = params[high], params[low]
        if "radius" in params and rng.random() < 0.5:
            params["sort"] = "distance"
            if rng.random() < 0.2:
                params["order"] = "desc"
        else:
            params.update(sort=rng.choice(SORTS), order=rng.choice(("asc", "desc")))
        params["limit"] = rng.choice(PAGE_SIZES)
        searches.append(Search(params, "/v1/properties" if i % 2 == 0 else "/v1/properties/search"))
    return searches


def deep_cursor_searches(count: int, seed: int, page: int = 10_000) -> list[tuple[Search, int]]:
    """Searches to page `page` deep by cursor, each with the offset of the page before it
    (whose `meta.nextCursor` is the cursor of page `page`): broad filters, every sort and
    order, 10 a page, so page 10,000 exists from about 100,000 matches."""
    rng = random.Random(seed)
    filters: list[dict[str, Any]] = [{}, {"status": "offMarket"}, {"minYearBuilt": 1940},
                                     {"propertyType": "singleFamily"}, {"minBeds": 2}]  # fmt: skip
    limit = 10
    out = []
    for i in range(count):
        params = dict(filters[i % len(filters)])
        params.update(sort=SORTS[(i // len(filters)) % len(SORTS)],
                      order=rng.choice(("asc", "desc")), limit=limit)  # fmt: skip
        out.append((Search(params), (page - 2) * limit))
    return out


# -- datasette --------------------------------------------------------------------------


DATASETTE_TESTS = {"eq": "exact", "ge": "gte", "le": "lte"}
"""Each test of a column filter (`propdata.search.filters`) as a datasette filter operator."""
_FILTER_OF = {f.parameter: f for f in filters.FILTERS}


def _datasette_value(name: str, value: Any) -> Any:
    """A filter's value as its column holds it."""
    if name == "city":  # our filter compares the normalised name, stored as city_key
        return city_key(str(value))
    if name == "state":
        return str(value).upper()
    kind = DECLARED[name].kind
    return kind(value) if kind in (int, float) else str(value)


def datasette_params(search: Search, *, not_null: bool = False) -> list[tuple[str, Any]]:
    """The same search in datasette's table filter syntax (?column__op=value), as pairs.

    With `not_null`, rows whose sort value is null are left out: datasette cannot sort them
    last in ascending order, so the comparison asks for the non-null rows alone.
    """
    out: list[tuple[str, Any]] = []
    for name, value in search.params.items():
        if name in _FILTER_OF:
            f = _FILTER_OF[name]
            out.append((f"{f.column}__{DATASETTE_TESTS[f.test]}", _datasette_value(name, value)))
    column = SORT_COLUMNS[search.sort]
    out.append(("_sort_desc" if search.order == "desc" else "_sort", column))
    if not_null and search.sort in NULLABLE_SORTS:
        out.append((f"{column}__notnull", 1))
    out.append(("_size", int(search.params.get("limit", 100))))
    out += [("_col", c) for c in SEARCH_COLUMNS]
    out.append(("_shape", "objects"))
    return out


def datasette_path(search: Search, table_path: str, *, not_null: bool = False) -> str:
    """`table_path` (/<database>/properties.json) with the search's filters, sort and size."""
    return (
        table_path + "?" + urlencode(datasette_params(search, not_null=not_null), quote_via=quote)
    )


# -- the comparison ---------------------------------------------------------------------


def compare(
    search: Search,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    theirs_not_null: dict[str, Any] | None,
) -> tuple[str, str]:
    """Compare one search's answers; return (verdict, detail).

    Verdicts: "same order"; "same rows" (equal totals and sort values, the same ids but
    for the order of ties: datasette orders by the sort column alone, we break ties by id
    in the sort's direction, and sort nulls last where datasette sorts them first); "differ".
    """
    total, their_total = ours["meta"]["total"], theirs.get("filtered_table_rows_count")
    if total != their_total:
        return "differ", f"total {total} vs datasette {their_total}"
    key, column = search.sort, SORT_COLUMNS[search.sort]
    mine = [(item["id"], item[key]) for item in ours["data"]]
    rows = theirs["rows"]
    if [i for i, _ in mine] == [r["id"] for r in rows]:
        return "same order", ""
    if theirs_not_null is not None:  # ascending on a nullable column: compare non-nulls
        rows = theirs_not_null["rows"]
        nulls = [m for m in mine if m[1] is None]
        mine = [m for m in mine if m[1] is not None]
        if len(rows) > len(mine) and nulls:
            return "differ", "datasette has more non-null rows than our page shows"
        rows = rows[: len(mine)]
    theirs_pairs = [(r["id"], r[column]) for r in rows]
    if [v for _, v in mine] != [v for _, v in theirs_pairs]:
        return "differ", "the sort values differ"
    groups_mine = _groups(mine)
    groups_theirs = _groups(theirs_pairs)
    for n, (a, b) in enumerate(zip(groups_mine, groups_theirs, strict=True)):
        last = n == len(groups_mine) - 1
        if not last and a != b:
            return "differ", "a group of equal sort values holds different ids"
        if last and len(a) != len(b):
            return "differ", "the last group differs in size"
    return "same rows", "ties (or nulls) in another order"


def _groups(pairs: Sequence[tuple[str, Any]]) -> list[set[str]]:
    groups: list[set[str]] = []
    previous: Any = object()
    for ident, value in pairs:
        if not groups or value != previous:
            groups.append(set())
            previous = value
        groups[-1].add(ident)
    return groups

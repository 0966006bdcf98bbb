"""The synthetic national set: reproducible, valid, real places, the promised mix and flow."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import statistics
from collections import Counter

import addfips
import msgspec
import pytest
import zipcodes

from propdata.ingest import loader, synthetic
from propdata.kit.addresses import street_key
from propdata.kit.db import SQLiteDatabase
from propdata.kit.geography import bare_county
from propdata.properties import lifecycle
from propdata.properties.schemas import PropertyDetail

AS_OF = dt.date(2025, 6, 15)
N = 20_000


@pytest.fixture(scope="module")
def records() -> list[PropertyDetail]:
    return [r for _, r in synthetic.generate(N, 11, AS_OF)]


def _digest(n: int, seed: int, as_of: dt.date = AS_OF) -> str:
    h = hashlib.sha256()
    encoder = msgspec.json.Encoder()
    for line, record in synthetic.generate(n, seed, as_of):
        h.update(str(line).encode())
        h.update(encoder.encode(record))
    return h.hexdigest()


def test_same_seed_same_output_other_seed_other_output() -> None:
    first = _digest(1_500, 7)
    assert _digest(1_500, 7) == first
    assert _digest(1_500, 8) != first
    assert _digest(1_500, 7, AS_OF + dt.timedelta(days=1)) != first


DATED = {"lastUpdated", "lastPriceChangeDate", "removedDate", "yearBuilt", "date", "year",
         "asOfDate"}  # fmt: skip
"""The calendar fields: every other field is the same whatever day the set is built."""


def _undated(value: object) -> object:
    if isinstance(value, dict):
        return {k: _undated(v) for k, v in value.items() if k not in DATED}
    if isinstance(value, list):
        return [_undated(v) for v in value]
    return value


def _shifted(text: str | None, days: int) -> str | None:
    if text is None:
        return None
    moved = dt.date.fromisoformat(text[:10]) + dt.timedelta(days=days)
    return moved.isoformat() + text[10:]


def test_the_build_day_moves_only_the_calendar() -> None:
    # Across a year's end and a leap day: 2027-12-30 is 923 days after 2025-06-20.
    early, late = dt.date(2025, 6, 20), dt.date(2027, 12, 30)
    days = (late - early).days
    first = [r for _, r in synthetic.generate(4_000, 5, early)]
    second = [r for _, r in synthetic.generate(4_000, 5, late)]
    assert len(first) == len(second) == 4_000
    for a, b in zip(first, second, strict=True):
        assert _undated(msgspec.to_builtins(a)) == _undated(msgspec.to_builtins(b)), a.id
        # The dates keep their distance to the build day; years built and taxed, their years.
        assert [_shifted(e.date, days) for e in a.price_history] == [
            e.date for e in b.price_history
        ]
        assert _shifted(a.last_updated, days) == b.last_updated
        assert _shifted(a.last_price_change_date, days) == b.last_price_change_date
        assert _shifted(a.removed_date, days) == b.removed_date
        years = late.year - early.year
        assert [t.year + years for t in a.tax_history] == [t.year for t in b.tax_history]
        assert (a.year_built is None) == (b.year_built is None)
        if a.year_built is not None:
            assert a.year_built + years == b.year_built


def test_numbering_and_ids(records: list[PropertyDetail]) -> None:
    lines = [line for line, _ in synthetic.generate(300, 2, AS_OF)]
    assert lines == list(range(1, 301))
    assert records[0].id == "syn-0000001" and records[-1].id == f"syn-{N:07d}"
    assert len({r.id for r in records}) == N
    assert list(synthetic.generate(0, 1, AS_OF)) == []
    assert [r.id for _, r in synthetic.generate(3, 1, AS_OF)] == [
        "syn-0000001", "syn-0000002", "syn-0000003",
    ]  # fmt: skip


def test_every_record_is_valid_and_consistent(records: list[PropertyDetail]) -> None:
    decoder = msgspec.json.Decoder(PropertyDetail)
    for record in records:
        assert loader.validate(record, AS_OF) is None, record.id
        assert decoder.decode(msgspec.json.encode(record)) == record, record.id
        history = record.price_history
        derived = lifecycle.derive(history, record.status)
        assert record.list_price == lifecycle.current_list_price(history, record.status)
        assert record.original_list_price == derived.original_list_price
        assert record.previous_list_price == derived.previous_list_price
        assert record.removed_date == derived.removed_date
        assert record.days_on_market == lifecycle.days_on_market(
            derived, history, record.status, AS_OF
        )
        newest = history[0].date if history else "0000-00-00"
        assert newest <= record.last_updated[:10] <= AS_OF.isoformat(), record.id
        assert all(e.date >= (AS_OF - dt.timedelta(days=3_650)).isoformat() for e in history)


def test_sources_follow_the_events(records: list[PropertyDetail]) -> None:
    seen: Counter[tuple[str, str]] = Counter()
    for record in records:
        for e in record.price_history:
            seen[(e.event, e.source)] += 1
    for (event, source), _ in seen.items():
        if event == "sold":
            assert source in ("publicRecord", "mls")
        else:
            assert source in ("mls", "agent", "owner")
    events = {event for event, _ in seen}
    assert events == {"listedForSale", "priceChange", "pendingSale", "sold", "delisted",
                      "relisted", "listedForRent", "rentalRemoved"}  # fmt: skip


def test_unique_street_addresses_within_a_zip(records: list[PropertyDetail]) -> None:
    exact = Counter((r.address.street_address, r.address.zip_code) for r in records)
    assert max(exact.values()) == 1
    normalised = Counter(
        (street_key(r.address.street_address or ""), r.address.zip_code) for r in records
    )
    assert max(normalised.values()) == 1
    pattern = re.compile(r"^\d+ (?:[NSEW]{1,2} )?[\w ]+ [A-Z][a-z]+(?: [NSEW]{1,2})?"
                         r"(?: (?:Apt|Unit) \d+)?$")  # fmt: skip
    assert all(pattern.match(r.address.street_address or "") for r in records)
    units = [r for r in records if " Apt " in (r.address.street_address or "")
             or " Unit " in (r.address.street_address or "")]  # fmt: skip
    assert units and all(r.property_type == "condo" for r in units)


def test_places_are_real_and_consistent(records: list[PropertyDetail]) -> None:
    fips = addfips.AddFIPS()
    places = {(r.address.zip_code, r.address.city, r.address.state, r.address.county,
               r.address.fips_code) for r in records}  # fmt: skip
    assert len({p[0] for p in places}) == len(places)  # one city/county per ZIP
    for code, city, state, county, fips_code in places:
        (entry,) = zipcodes.matching(code)  # type: ignore[no-untyped-call]
        assert entry["zip_code_type"] == "STANDARD" and entry["active"]
        assert (entry["city"], entry["state"]) == (city, state)
        assert county == bare_county(entry["county"])
        assert not county.endswith((" County", " Parish"))
        assert fips_code == fips.get_county_fips(entry["county"], state=state)
        assert fips_code is not None and fips_code[:2] == fips.get_state_fips(state)
    table = {z.code: z for z in synthetic.zip_table()}
    for record in records[::50]:
        place, c = table[record.address.zip_code], record.coordinates
        assert c is not None
        assert abs(c.latitude - place.latitude) < 0.08  # within ~9 km
        assert abs(c.longitude - place.longitude) < 0.12


def test_records_are_concentrated_in_zip_codes(records: list[PropertyDetail]) -> None:
    per_zip = Counter(r.address.zip_code for r in records)
    assert 100 <= len(per_zip) <= 170
    assert min(per_zip.values()) >= 12
    assert 80 <= statistics.median(per_zip.values()) <= 250
    states = Counter(r.address.state for r in records)
    assert states.most_common(1)[0][0] in ("CA", "TX")
    assert states["CA"] > 5 * states["IA"]


def test_status_mix(records: list[PropertyDetail]) -> None:
    share = {k: v / N for k, v in Counter(r.status for r in records).items()}
    assert 0.17 <= share["forSale"] <= 0.24
    assert 0.08 <= share["recentlySold"] <= 0.12
    assert 0.07 <= share["forRent"] <= 0.12
    assert 0.56 <= share["offMarket"] <= 0.64


def test_events_flow_through_each_of_the_last_60_months(records: list[PropertyDetail]) -> None:
    listed: Counter[str] = Counter()
    sold: Counter[str] = Counter()
    for record in records:
        for e in record.price_history:
            if e.event in ("listedForSale", "relisted"):
                listed[e.date[:7]] += 1
            elif e.event == "sold":
                sold[e.date[:7]] += 1
    months = []
    year, month = AS_OF.year, AS_OF.month
    for _ in range(60):
        months.append(f"{year}-{month:02d}")
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    assert min(sold[m] for m in months) >= 100
    assert min(listed[m] for m in months) >= 100
    full = months[1:]  # the as_of month is half over
    assert max(sold[m] for m in full) < 2 * min(sold[m] for m in full)


def test_details_fit_the_property_type(records: list[PropertyDetail]) -> None:
    by_type: dict[str, list[PropertyDetail]] = {}
    for r in records:
        by_type.setdefault(r.property_type or "", []).append(r)
    assert set(by_type) == set(synthetic.PROPERTY_TYPES)
    for r in by_type["land"]:
        assert (r.bedrooms_total, r.bathrooms_total, r.living_area, r.year_built, r.stories) == (
            None, None, None, None, None,
        )  # fmt: skip
        assert r.lot_size and r.rent_estimate is None and r.status != "forRent"
    for kind in ("singleFamily", "condo", "townhouse", "multiFamily"):
        for r in by_type[kind]:
            assert r.living_area and r.year_built and r.stories and r.bathrooms_total
            assert r.bedrooms_total is not None
            assert (r.bathrooms_total * 2).is_integer()
    area = {k: statistics.median(r.living_area or 0 for r in v) for k, v in by_type.items()}
    assert area["condo"] < area["townhouse"] < area["singleFamily"] < area["multiFamily"]
    assert any(r.bathrooms_total % 1 == 0.5 for r in by_type["singleFamily"] if r.bathrooms_total)
    assert all(r.lot_size is None for r in by_type["condo"])


def test_listing_types_and_prices(records: list[PropertyDetail]) -> None:
    for r in records:
        if r.status == "offMarket":
            assert r.listing_type is None and r.list_price is None
        if r.status == "forSale":
            assert r.listing_type is not None and r.list_price is not None
            assert r.days_on_market is not None
        if r.status == "forRent":
            assert r.list_price is not None and r.list_price < 30_000  # a monthly rent
    kinds = Counter(r.listing_type for r in records)
    assert kinds["standard"] > 10 * (kinds["foreclosure"] + kinds["shortSale"] + kinds["auction"])
    assert all(kinds[k] for k in ("newConstruction", "foreclosure", "shortSale", "auction"))
    for r in records:
        if r.listing_type == "newConstruction":
            assert r.year_built is not None and r.year_built >= AS_OF.year - 2


def test_price_levels_look_like_the_us(records: list[PropertyDetail]) -> None:
    def median_value(states: set[str]) -> float:
        values = [r.value_estimate.value for r in records
                  if r.address.state in states and r.value_estimate
                  and r.property_type == "singleFamily"]  # fmt: skip
        assert len(values) > 50
        return statistics.median(values)

    assert median_value({"CA", "NY", "MA", "WA"}) > 1.8 * median_value({"MS", "WV", "AR", "OH"})


def test_estimates_taxes_and_scores(records: list[PropertyDetail]) -> None:
    for r in records:
        for estimate in (r.value_estimate, r.rent_estimate):
            if estimate is not None:
                assert estimate.low < estimate.value < estimate.high
                assert estimate.as_of_date == AS_OF.isoformat()
        years = [t.year for t in r.tax_history]
        assert years == sorted(years, reverse=True) and years[0] == AS_OF.year - 1
        assert 1 <= len(years) <= 10 and (len(years) >= 5 or r.year_built == years[-1])
        assert r.year_built is None or r.year_built <= years[-1]
        assert all(t.tax_paid and t.assessed_value for t in r.tax_history)
        s = r.scores
        assert s is not None
        for score in (s.walkability, s.transit, s.bike):
            assert score is not None and 0 <= score <= 100
    table = {z.code: z.density for z in synthetic.zip_table()}
    dense = [
        r.scores.walkability
        for r in records
        if r.scores and r.scores.walkability is not None and table[r.address.zip_code] > 0.8
    ]
    sparse = [
        r.scores.walkability
        for r in records
        if r.scores and r.scores.walkability is not None and table[r.address.zip_code] < 0.3
    ]
    assert dense and sparse and statistics.mean(dense) > statistics.mean(sparse) + 30


async def test_load_through_the_loader(fresh_db: SQLiteDatabase) -> None:
    report = await loader.load(
        fresh_db, synthetic.generate(5_000, 3, AS_OF), origin="synthetic", as_of=AS_OF,
        replace_origin=True,
    )  # fmt: skip
    assert report.rejects == []
    assert report.inserted == 5_000
    row = await fresh_db.fetch_one("SELECT COUNT(*), COUNT(DISTINCT zip_code) FROM properties")
    assert row is not None and row[0] == 5_000 and row[1] >= 20


@pytest.mark.slow
def test_generated_apart_the_records_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synthetic, "APART_FROM", 1)
    monkeypatch.setattr(synthetic, "CHUNK", 7)
    apart = list(synthetic.generate_apart(40, 3, AS_OF))
    assert apart == list(synthetic.generate(40, 3, AS_OF))
    stopped = synthetic.generate_apart(40, 3, AS_OF)
    assert next(stopped) == apart[0]
    stopped.close()  # a consumer that stops early ends the child

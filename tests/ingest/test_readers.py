"""The import readers: format detection, the API's own shape, RESO mapping, row rejects."""

from __future__ import annotations

import csv
import datetime as dt
import io
from pathlib import Path

import msgspec
import pytest

from propdata.ingest.loader import Reject, validate
from propdata.ingest.readers import (
    RESO_PROPERTY_TYPES,
    RowError,
    read_file,
    read_lines,
    reso_property_type,
    reso_record,
    write_rejects,
)
from propdata.properties.schemas import PropertyDetail

AS_OF = dt.date(2024, 6, 1)
MINIMAL = (
    '{"id":"p1","status":"offMarket","address":{"city":"Ames","state":"IA",'
    '"zipCode":"50010"},"lastUpdated":"2024-05-01T00:00:00Z"}'
)


def read(path: Path) -> list[tuple[int, PropertyDetail | Reject]]:
    return list(read_file(path, AS_OF))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def rejects(items: list[tuple[int, PropertyDetail | Reject]]) -> dict[int, str]:
    return {line: item.reason for line, item in items if isinstance(item, Reject)}


# -- format detection ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["data.json", "data.txt", "data", "data.csv.gz"])
def test_unsupported_extension_names_the_formats(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, MINIMAL)
    with pytest.raises(ValueError, match=r"\.jsonl.*\.csv"):
        read_file(path, AS_OF)


def test_extension_is_case_insensitive(tmp_path: Path) -> None:
    for name in ("a.JSONL", "b.ndjson"):
        [(line, record)] = read(write(tmp_path / name, MINIMAL + "\n"))
        assert line == 1 and isinstance(record, PropertyDetail)


def test_missing_file_fails_before_reading(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "absent.jsonl", AS_OF)
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "absent.csv", AS_OF)


def test_csv_without_id_or_listing_key_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "x.csv", "name,price\nA,1\n")
    with pytest.raises(ValueError, match="ListingKey"):
        read_file(path, AS_OF)


def test_api_csv_unknown_or_missing_columns_are_refused(tmp_path: Path) -> None:
    header = "id,status,address.city,address.state,address.zipCode,lastUpdated"
    with pytest.raises(ValueError, match=r"unknown column.*colour"):
        read_file(write(tmp_path / "a.csv", header + ",colour\n"), AS_OF)
    with pytest.raises(ValueError, match=r"lacks.*lastUpdated"):
        read_file(write(tmp_path / "b.csv", header.removesuffix(",lastUpdated") + "\n"), AS_OF)
    with pytest.raises(ValueError, match="repeats status"):
        read_file(write(tmp_path / "c.csv", header + ",status\n"), AS_OF)


def test_reso_csv_missing_required_column_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "ListingKey,StandardStatus,City\nA,Active,Ames\n")
    with pytest.raises(ValueError, match="UnparsedAddress"):
        read_file(path, AS_OF)


def test_empty_csv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        read_file(write(tmp_path / "e.csv", "\n\n"), AS_OF)


# -- JSON Lines ---------------------------------------------------------------------------


def test_minimal_record_loads_with_nulls(tmp_path: Path) -> None:
    [(_, record)] = read(write(tmp_path / "m.jsonl", MINIMAL))
    assert isinstance(record, PropertyDetail)
    assert record.id == "p1" and record.status == "offMarket"
    assert record.address.street_address is None and record.address.county is None
    assert record.list_price is None and record.price_history == [] and record.scores is None
    assert validate(record, AS_OF) is None


def test_blank_lines_are_skipped_and_lines_counted(tmp_path: Path) -> None:
    text = "\n" + MINIMAL + "\n   \n\n" + MINIMAL.replace('"p1"', '"p2"') + "\n"
    items = read(write(tmp_path / "b.jsonl", text))
    assert [line for line, _ in items] == [2, 5]


def test_get_envelope_is_accepted(tmp_path: Path) -> None:
    [(_, record)] = read(write(tmp_path / "e.jsonl", '{"data":' + MINIMAL + "}"))
    assert isinstance(record, PropertyDetail) and record.id == "p1"


def test_computed_and_derived_fields_are_accepted_and_ignored(tmp_path: Path) -> None:
    line = MINIMAL[:-1] + (
        ',"pricePerSquareFoot":150,"grossYield":0.07,"previousListPrice":5,'
        '"lastPriceChangeDate":"2024-01-01","removedDate":"2024-02-01"}'
    )
    [(_, record)] = read(write(tmp_path / "c.jsonl", line))
    assert isinstance(record, PropertyDetail)
    assert record.price_per_square_foot is None and record.gross_yield is None
    assert record.previous_list_price is None and record.removed_date is None


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"id": "x", "status": ', "invalid JSON"),
        ("[1, 2]", "Expected `object`, got `array`"),
        (
            MINIMAL.replace('"zipCode":"50010"', '"zipCode":50010'),
            "address.zipCode: Expected `str`",
        ),
        (
            MINIMAL.replace("offMarket", "sold"),
            "status: Invalid enum value 'sold' (allowed: forSale",
        ),
        (MINIMAL[:-1] + ',"colour":"red"}', "unknown field `colour`"),
        (MINIMAL[:-1] + ',"listPrice":"250000"}', "listPrice: Expected `int | null`, got `str`"),
        (
            MINIMAL[:-1]
            + ',"priceHistory":[{"date":"2024-01-01","event":"listed","source":"mls"}]}',
            "priceHistory[0].event: Invalid enum value 'listed'",
        ),
        (
            MINIMAL.replace(',"lastUpdated":"2024-05-01T00:00:00Z"', ""),
            "missing required field `lastUpdated`",
        ),
        ('{"data":' + MINIMAL.replace('"IA"', "7") + "}", "address.state: Expected `str`"),
        ("\xff\xfe not utf-8", "invalid JSON"),
        (MINIMAL[:-1] + ',"livingArea":9223372036854775808}', "livingArea: Expected `int` <="),
        (MINIMAL[:-1] + ',"bathroomsTotal":1e400}', "bathroomsTotal: Number out of range"),
    ],
)
def test_malformed_lines_are_rejects_naming_the_field(
    tmp_path: Path, line: str, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        (MINIMAL + "\n").encode()
        + line.encode("latin-1" if line.startswith("\xff") else "utf-8")
        + b"\n"
        + (MINIMAL.replace('"p1"', '"p3"') + "\n").encode()
    )
    items = read(path)
    assert [line for line, _ in items] == [1, 2, 3]
    assert isinstance(items[0][1], PropertyDetail) and isinstance(items[2][1], PropertyDetail)
    bad = items[1][1]
    assert isinstance(bad, Reject) and bad.line == 2
    assert reason in bad.reason


def test_reject_carries_the_id_when_it_can_be_read(tmp_path: Path) -> None:
    [(_, bad)] = read(write(tmp_path / "i.jsonl", MINIMAL.replace("offMarket", "gone")))
    assert isinstance(bad, Reject) and bad.id == "p1"


# -- CSV in the API's own shape -----------------------------------------------------------

API_HEADER = [
    "id", "status", "listPrice", "address.streetAddress", "address.city", "address.state",
    "address.zipCode", "coordinates.latitude", "coordinates.longitude", "scores.walkability",
    "scores.transit", "scores.bike", "priceHistory", "taxHistory", "lastUpdated", "grossYield",
]  # fmt: skip


def api_csv(tmp_path: Path, rows: list[list[str]]) -> Path:
    path = tmp_path / "api.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(API_HEADER)
        writer.writerows(rows)
    return path


def api_row(**cells: str) -> list[str]:
    base = {
        "id": "c1", "status": "forSale", "listPrice": "1,250", "address.streetAddress": "1 Main St",
        "address.city": "Ames", "address.state": "ia", "address.zipCode": "50010",
        "coordinates.latitude": "42.03", "coordinates.longitude": "-93.62",
        "scores.walkability": "", "scores.transit": "", "scores.bike": "",
        "priceHistory": '[{"date":"2024-05-01","event":"listedForSale","price":1250,'
                        '"source":"mls"}]',
        "taxHistory": "", "lastUpdated": "2024-05-02T00:00:00Z", "grossYield": "0.05",
    }  # fmt: skip
    base.update({k.replace("__", "."): v for k, v in cells.items()})
    return [base[c] for c in API_HEADER]


def test_api_csv_row_becomes_a_record(tmp_path: Path) -> None:
    [(line, record)] = read(api_csv(tmp_path, [api_row()]))
    assert line == 2 and isinstance(record, PropertyDetail)
    assert record.list_price == 1250
    assert record.address.state == "ia"  # the loader upper-cases on write
    assert record.coordinates is not None and record.coordinates.latitude == 42.03
    assert record.scores is None  # every scores.* cell empty
    assert record.tax_history == [] and record.gross_yield is None
    assert record.price_history[0].event == "listedForSale"
    assert validate(record, AS_OF) is None


@pytest.mark.parametrize(
    ("cells", "reason"),
    [
        ({"listPrice": "cheap"}, "listPrice 'cheap' is not a number"),
        ({"listPrice": "1250.5"}, "listPrice '1250.5' is not a whole number"),
        ({"status": "sold"}, "status: Invalid enum value 'sold'"),
        ({"address__zipCode": ""}, "address.zipCode: Expected `str`, got `null`"),
        ({"coordinates__longitude": ""}, "coordinates.longitude: Expected `float`, got `null`"),
        ({"priceHistory": "[{oops"}, "priceHistory is not a JSON array"),
        (
            {"priceHistory": '[{"date":"2024-05-01","event":"x","source":"mls"}]'},
            "priceHistory[0].event",
        ),
        ({"scores__bike": "7.5"}, "scores.bike '7.5' is not a whole number"),
    ],
)
def test_api_csv_bad_cells_are_rejects(tmp_path: Path, cells: dict[str, str], reason: str) -> None:
    items = read(
        api_csv(tmp_path, [api_row(id="ok1"), api_row(id="bad", **cells), api_row(id="ok2")])
    )
    assert [line for line, _ in items] == [2, 3, 4]
    bad = items[1][1]
    assert isinstance(bad, Reject) and bad.id == "bad" and reason in bad.reason, bad
    assert all(isinstance(item, PropertyDetail) for _, item in (items[0], items[2]))


def test_api_csv_structural_problems_are_rejects(tmp_path: Path) -> None:
    def encoded(row: list[str]) -> bytes:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow(row)
        return out.getvalue().encode()

    path = tmp_path / "s.csv"
    path.write_bytes(
        encoded(API_HEADER)
        + encoded(api_row(id="g1"))
        + b"only,three,cells\n"
        + encoded(api_row(id="g3")).replace(b"Main St", b"Main \xff St")
        + b"\n"
        + encoded(api_row(id="g2", address__streetAddress="1 Main\nSt"))
        + encoded(api_row(id="g4"))
    )
    items = read(path)
    assert [line for line, _ in items] == [2, 3, 4, 6, 8]
    assert rejects(items) == {
        3: f"the row has 3 cells, the header has {len(API_HEADER)}",
        4: "address.streetAddress is not valid UTF-8",
    }
    multi = items[3][1]
    assert isinstance(multi, PropertyDetail) and multi.address.street_address == "1 Main\nSt"


# -- RESO mapping -------------------------------------------------------------------------


def reso(**cells: str | None) -> dict[str, str | None]:
    row: dict[str, str | None] = {
        "ListingKey": "L1",
        "StandardStatus": "Active",
        "UnparsedAddress": "123 Main St",
        "City": "Ames",
        "StateOrProvince": "IA",
        "PostalCode": "50010",
        "ListPrice": "250000",
        "DaysOnMarket": "10",
    }
    row.update(cells)
    return {k: v for k, v in row.items() if v is not None}


def history(record: PropertyDetail) -> list[tuple[str, str, int | None]]:
    return [(e.date, e.event, e.price) for e in record.price_history]


@pytest.mark.parametrize("status", ["Active", "ActiveUnderContract", "Pending", "ComingSoon",
                                    "Active Under Contract", "active"])  # fmt: skip
def test_reso_listed_statuses_are_for_sale_from_days_on_market(status: str) -> None:
    record = reso_record(reso(StandardStatus=status), AS_OF)
    assert record.status == "forSale"
    assert history(record) == [("2024-05-22", "listedForSale", 250000)]  # 1 June - 10 days
    assert record.list_price == 250000 and record.days_on_market == 10
    assert record.last_updated == "2024-06-01T00:00:00Z"
    assert validate(record, AS_OF) is None


def test_reso_price_cut_keeps_both_prices_without_inventing_a_change_date() -> None:
    record = reso_record(reso(OriginalListPrice="275,000", ListPrice="250000"), AS_OF)
    assert history(record) == [("2024-05-22", "listedForSale", 275000)]
    assert record.original_list_price == 275000 and record.list_price == 250000
    assert validate(record, AS_OF) is None


@pytest.mark.parametrize("status", ["Active", "Pending", "ComingSoon"])
def test_reso_lease_listing_is_for_rent(status: str) -> None:
    record = reso_record(
        reso(StandardStatus=status, PropertyType="ResidentialLease", ListPrice="1,800"), AS_OF
    )
    assert record.status == "forRent" and record.property_type is None
    assert history(record) == [("2024-05-22", "listedForRent", 1800)]
    assert validate(record, AS_OF) is None


def test_reso_listing_without_days_on_market_is_rejected() -> None:
    with pytest.raises(RowError, match="needs DaysOnMarket"):
        reso_record(reso(DaysOnMarket=None), AS_OF)


def test_reso_recent_close_is_recently_sold_with_dated_events() -> None:
    row = reso(StandardStatus="Closed", CloseDate="2024-04-01", ClosePrice="245,000",
               OriginalListPrice="260000", DaysOnMarket="30")  # fmt: skip
    record = reso_record(row, AS_OF)
    assert record.status == "recentlySold"
    assert history(record) == [
        ("2024-04-01", "sold", 245000),
        ("2024-03-02", "listedForSale", 260000),
    ]
    assert all(e.source == "mls" for e in record.price_history)
    assert record.list_price == 250000 and record.original_list_price == 260000
    assert validate(record, AS_OF) is None


def test_reso_old_close_is_off_market() -> None:
    row = reso(StandardStatus="Closed", CloseDate="2023-01-15", ClosePrice="200000")
    record = reso_record(row, AS_OF)
    assert record.status == "offMarket"
    assert history(record) == [
        ("2023-01-15", "sold", 200000),
        ("2023-01-05", "listedForSale", 250000),
    ]
    assert record.list_price is None and record.original_list_price is None
    assert record.days_on_market is None
    assert validate(record, AS_OF) is None


def test_reso_close_without_days_on_market_has_only_the_sale() -> None:
    row = reso(StandardStatus="Closed", CloseDate="2024-05-01", ClosePrice="", DaysOnMarket=None)
    record = reso_record(row, AS_OF)
    assert record.status == "recentlySold"
    assert history(record) == [("2024-05-01", "sold", None)]
    assert validate(record, AS_OF) is None


def test_reso_close_on_the_180th_day_boundary() -> None:
    day_180 = (AS_OF - dt.timedelta(days=180)).isoformat()
    day_181 = (AS_OF - dt.timedelta(days=181)).isoformat()
    assert (
        reso_record(reso(StandardStatus="Closed", CloseDate=day_180), AS_OF).status
        == "recentlySold"
    )
    assert (
        reso_record(reso(StandardStatus="Closed", CloseDate=day_181), AS_OF).status == "offMarket"
    )


def test_reso_closed_lease_is_off_market() -> None:
    row = reso(StandardStatus="Closed", PropertyType="ResidentialLease", CloseDate="2024-05-01",
               ClosePrice="1750", ListPrice="1800", DaysOnMarket="20")  # fmt: skip
    record = reso_record(row, AS_OF)
    assert record.status == "offMarket"
    assert history(record) == [
        ("2024-05-01", "rentalRemoved", 1750),
        ("2024-04-11", "listedForRent", 1800),
    ]
    assert validate(record, AS_OF) is None
    undated = {k: v for k, v in row.items() if k != "DaysOnMarket"}
    bare = reso_record(undated, AS_OF)
    assert bare.status == "offMarket" and bare.price_history == []


@pytest.mark.parametrize("status", ["Canceled", "Cancelled", "Expired", "Withdrawn", "Hold"])
def test_reso_ended_listings_are_off_market_without_invented_events(status: str) -> None:
    record = reso_record(reso(StandardStatus=status, OriginalListPrice="260000"), AS_OF)
    assert record.status == "offMarket" and record.price_history == []
    assert record.list_price is None and record.original_list_price is None
    assert record.days_on_market is None
    assert validate(record, AS_OF) is None


@pytest.mark.parametrize(
    ("cells", "reason"),
    [
        ({"StandardStatus": "Delete"}, "deleted at the source"),
        ({"StandardStatus": "Incomplete"}, "not complete"),
        ({"StandardStatus": "Sold"}, "StandardStatus 'Sold' is not a RESO status"),
        ({"StandardStatus": "Closed"}, "needs CloseDate"),
        ({"StandardStatus": "Closed", "CloseDate": "2024-07-01"}, "after the import date"),
        (
            {"StandardStatus": "Closed", "CloseDate": "04/01/2024"},
            "CloseDate '04/01/2024' is not a date",
        ),
        ({"ListPrice": "abc"}, "ListPrice 'abc' is not a number"),
        ({"ListPrice": "-5"}, "ListPrice must not be negative"),
        ({"ListPrice": "1,25"}, "ListPrice '1,25' is not a number"),
        ({"DaysOnMarket": "ten"}, "DaysOnMarket 'ten' is not a number"),
        ({"DaysOnMarket": "40000"}, "DaysOnMarket 40000 is more than 36525 days"),
        ({"ListPrice": "9" * 20}, "ListPrice '99999999999999999999' is out of range"),
        ({"Latitude": "9" * 400, "Longitude": "1"}, "is out of range"),
        ({"BedroomsTotal": "3.5"}, "BedroomsTotal '3.5' is not a whole number"),
        ({"BathroomsTotalDecimal": "x"}, "BathroomsTotalDecimal 'x' is not a number"),
        ({"LivingArea": "1.2e3"}, "LivingArea '1.2e3' is not a number"),
        ({"Latitude": "42.0"}, "Longitude is empty"),
        ({"PostalCode": "5001"}, "PostalCode '5001' is not a five-digit ZIP"),
        ({"PostalCode": "ABCDE"}, "PostalCode 'ABCDE'"),
        ({"StateOrProvince": "Iowa"}, "StateOrProvince 'IOWA' is not a two-letter US state code"),
        ({"City": None}, "City is empty"),
        ({"ModificationTimestamp": "2024-05-01 10:00:00"}, "has no UTC offset"),
        ({"ModificationTimestamp": "yesterday"}, "not an ISO 8601 timestamp"),
    ],
)
def test_reso_bad_rows_name_the_column(cells: dict[str, str | None], reason: str) -> None:
    with pytest.raises(RowError) as caught:
        reso_record(reso(**cells), AS_OF)
    assert reason in str(caught.value)


def test_reso_numbers_places_and_timestamps() -> None:
    row = reso(
        ListPrice="1,250,000.00", PostalCode="50010-1234", StateOrProvince="ia",
        CountyOrParish="Story County", BedroomsTotal="3", BathroomsTotalDecimal="2.5",
        LivingArea="1,234.6", LotSizeSquareFeet="8712.5", YearBuilt="1999.0", StoriesTotal="2",
        Latitude="42.03", Longitude="-93.62", UnparsedAddress="123  Main St, Ames, IA 50010-1234",
        ModificationTimestamp="2024-05-31T20:15:00-05:00",
    )  # fmt: skip
    record = reso_record(row, AS_OF)
    assert record.list_price == 1_250_000
    a = record.address
    assert (a.street_address, a.city, a.state, a.zip_code) == ("123 Main St", "Ames", "IA", "50010")
    assert (a.county, a.fips_code) == ("Story", "19169")
    assert (record.bedrooms_total, record.bathrooms_total) == (3, 2.5)
    assert (record.living_area, record.lot_size) == (1235, 8712)  # rounded half to even
    assert (record.year_built, record.stories) == (1999, 2)
    assert record.coordinates is not None and record.coordinates.longitude == -93.62
    assert record.last_updated == "2024-06-01T01:15:00Z"
    assert record.listing_type is None and record.tax_history == [] and record.scores is None
    assert validate(record, AS_OF) is None


@pytest.mark.parametrize(
    ("county", "state", "name", "fips"),
    [
        ("Story County", "IA", "Story", "19169"),
        ("Story", "IA", "Story", "19169"),
        ("Orleans Parish", "LA", "Orleans", "22071"),
        ("Baltimore city", "MD", "Baltimore city", "24510"),
        ("Baltimore County", "MD", "Baltimore", "24005"),
        ("Atlantis County", "IA", "Atlantis", None),
    ],
)
def test_reso_county_and_fips(county: str, state: str, name: str, fips: str | None) -> None:
    record = reso_record(reso(CountyOrParish=county, StateOrProvince=state), AS_OF)
    assert (record.address.county, record.address.fips_code) == (name, fips)


@pytest.mark.parametrize(
    ("unparsed", "street"),
    [
        ("123 Main St", "123 Main St"),
        ("123 Main St, Ames, IA 50010", "123 Main St"),
        ("123 Main St, Ames IA", "123 Main St"),
        ("123 Main St Unit 4, Ames, IA 50010-1234, USA", "123 Main St Unit 4"),
        ("12 Elm St, Apt 3", "12 Elm St, Apt 3"),
        ("Ames, IA 50010", None),
    ],
)
def test_reso_street_line_drops_a_trailing_city_state_zip(
    unparsed: str, street: str | None
) -> None:
    assert reso_record(reso(UnparsedAddress=unparsed), AS_OF).address.street_address == street


@pytest.mark.parametrize(("value", "expected"), sorted(RESO_PROPERTY_TYPES.items()))
def test_reso_property_type_table(value: str, expected: str | None) -> None:
    assert reso_property_type(value) == expected


@pytest.mark.parametrize(
    ("property_type", "sub_type", "expected"),
    [
        ("Residential", "SingleFamilyResidence", "singleFamily"),
        ("Residential", "Condominium", "condo"),
        ("Residential", "StockCooperative", None),
        ("Residential", None, None),
        ("ResidentialIncome", None, "multiFamily"),
        ("ResidentialIncome", "Duplex", "multiFamily"),
        ("Land", "UnimprovedLand", "land"),
        ("Farm", None, None),
        ("CommercialSale", None, None),
        ("Single Family Residence", None, "singleFamily"),
        ("Something Else", None, None),
        (None, None, None),
    ],
)
def test_reso_sub_type_wins_when_certain(
    property_type: str | None, sub_type: str | None, expected: str | None
) -> None:
    assert reso_property_type(property_type, sub_type) == expected
    cells = {"PropertyType": property_type, "PropertySubType": sub_type}
    assert reso_record(reso(**cells), AS_OF).property_type == expected


def test_reso_file_ignores_unknown_columns_and_counts_lines(tmp_path: Path) -> None:
    path = tmp_path / "reso.csv"
    path.write_text(
        "ListingKey,StandardStatus,UnparsedAddress,City,StateOrProvince,PostalCode,"
        "DaysOnMarket,PublicRemarks\n"
        "R1,Active,1 A St,Ames,IA,50010,3,Lovely\n"
        "R2,Active,2 B St,Ames,IA,50010,,\n"
        "R3,Expired,3 C St,Ames,IA,50010,,\n",
        encoding="utf-8",
    )
    items = read(path)
    assert [line for line, _ in items] == [2, 3, 4]
    assert rejects(items) == {3: "StandardStatus Active needs DaysOnMarket (or OnMarketDate):"
                                 " without it the listing cannot be dated"}  # fmt: skip
    reject = items[1][1]
    assert isinstance(reject, Reject) and reject.id == "R2"


# -- the rejects report -------------------------------------------------------------------


def test_write_rejects_is_a_csv_ordered_by_line(tmp_path: Path) -> None:
    path = tmp_path / "rejects.csv"
    write_rejects(path, [Reject(9, 'bad "quote", comma', "b"), Reject(2, "no id")])
    with path.open(encoding="utf-8", newline="") as handle:
        assert list(csv.reader(handle)) == [
            ["line", "id", "reason"],
            ["2", "", "no id"],
            ["9", "b", 'bad "quote", comma'],
        ]


def test_records_are_plain_property_details(tmp_path: Path) -> None:
    [(_, record)] = read(write(tmp_path / "m.jsonl", MINIMAL))
    assert type(record) is PropertyDetail
    assert msgspec.json.decode(msgspec.json.encode(record), type=PropertyDetail) == record


# -- lines of a growing file ----------------------------------------------------------------


def test_lines_read_as_the_file_is(tmp_path: Path) -> None:
    """`read_lines` (what --follow reads) gives what `read_file` gives for the same bytes,
    from the start (CSV: header from the first row) or from a line further on."""
    path = tmp_path / "a.csv"
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(API_HEADER)
        writer.writerows([api_row(id="g1"), ["only", "cells"],
                          api_row(id="g2", address__streetAddress="1 Main\nSt"), api_row(id="g3")])  # fmt: skip
    lines = path.read_bytes().splitlines(keepends=True)
    whole = read(path)
    assert [line for line, _ in whole] == [2, 3, 4, 6]
    assert list(read_lines(lines, 1, AS_OF, name="a.csv", kind="csv")) == whole
    assert list(read_lines(lines, 1, AS_OF, name="a.csv", kind=None)) == whole
    assert list(read_lines(lines[3:], 4, AS_OF, name="a.csv", kind="csv",
                           header=API_HEADER)) == whole[2:]  # fmt: skip
    jsonl = write(tmp_path / "a.jsonl", MINIMAL + "\n\nnot json\n" + MINIMAL.replace("p1", "p2"))
    lines = jsonl.read_bytes().splitlines(keepends=True)
    assert list(read_lines(lines, 1, AS_OF, name="a.jsonl", kind=None)) == read(jsonl)
    assert list(read_lines(lines[2:], 3, AS_OF, name="a.jsonl", kind="jsonl")) == read(jsonl)[1:]


def test_reso_parcel_garage_basement_and_fireplaces() -> None:
    record = reso_record(
        reso(ParcelNumber="09-07-202-030", GarageSpaces="2.5", BelowGradeFinishedArea="640.4",
             FireplacesTotal="1"),
        AS_OF,
    )  # fmt: skip
    assert (record.parcel_id, record.garage_spaces, record.basement_finished_area) == (
        "09-07-202-030", 2.5, 640
    )  # fmt: skip
    assert record.fireplaces == 1 and record.overall_quality is record.overall_condition is None
    assert validate(record, AS_OF) is None
    plain = reso_record(reso(), AS_OF)
    assert plain.parcel_id is plain.garage_spaces is plain.fireplaces is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"overall_quality": 11}, "overallQuality 11 is not a grade from 1 to 10"),
        ({"overall_condition": 0}, "overallCondition 0 is not a grade from 1 to 10"),
        ({"parcel_id": " "}, "parcelId is empty (use null when it is unknown)"),
        ({"parcel_id": "9" * 65}, "parcelId is longer than 64 characters"),
        ({"fireplaces": -1}, "fireplaces must not be negative"),
        ({"garage_spaces": -0.5}, "garageSpaces must not be negative"),
    ],
)
def test_the_assessors_fields_are_checked(change: dict[str, object], reason: str) -> None:
    record = msgspec.structs.replace(reso_record(reso(), AS_OF), **change)
    assert validate(record, AS_OF) == reason

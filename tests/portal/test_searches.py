"""The dashboard's saved searches: saved from the form's filters with their match counts,
refusals shown on the page naming the field, the plan's limit, deletion, and the forms'
tokens (both stores)."""

from __future__ import annotations

import re
from typing import Any

from propdata.portal import pages
from propdata.saved_searches.filters import declared
from tests.portal.conftest import Person, attribute, other, text

PAGE = "/dashboard/searches"


def rows(page: str) -> list[str]:
    return re.findall(r'<article class="item" data-testid="search-row".*?</article>', page, re.S)


def search_id(row: str) -> str:
    return attribute(row, "data-search-id")


def match_count(row: str) -> int:
    found = re.search(r'data-testid="match-count">([^<]+)<', row)
    assert found, row[:300]
    return int(found.group(1).replace(",", ""))


def error_of(page: str) -> tuple[str, str]:
    found = re.search(r'data-testid="form-error"(?: data-field="([^"]*)")?>([^<]*)<', page)
    assert found, page[:2000]
    return found.group(1) or "", found.group(2)


async def test_the_page_needs_a_session_and_lists_nothing_at_first(person: Person) -> None:
    page = await person.first_page(PAGE, "sal@example.com")
    assert rows(page.text) == [] and 'data-testid="empty"' in page.text
    assert "0 of 3 on the Free plan" in text(page.text)
    # every filter of GET /v1/properties is a field of the form, under the parameter's name
    for name in declared():
        assert f'name="{name}"' in page.text, name
    # the dashboard leads here
    assert f'href="{PAGE}"' in (await person.client.get("/dashboard")).text


async def test_a_search_is_saved_from_the_filters_with_its_match_count(person: Person) -> None:
    await person.sign_up("sam@example.com")
    made = await person.submit(
        PAGE, PAGE, name="Ames <b>homes</b>", city=" Ames ", state="ia", minBeds="3",
        maxPrice="", zipCode="", status="forSale",
    )  # fmt: skip
    assert made.status_code == 303 and made.headers["location"] == PAGE
    page = (await person.client.get(PAGE)).text
    (row,) = rows(page)
    assert "Ames &lt;b&gt;homes&lt;/b&gt;" in row  # escaped, never markup
    words = text(row)
    # empty fields are left out; the stored filters are the service's (state upper-cased)
    assert "city=Ames" in words and "minBeds=3" in words and "status=forSale" in words
    assert "maxPrice" not in words and "zipCode" not in words
    assert match_count(row) >= 0
    assert 'data-testid="notice"' in page and "Saved" in page
    # shown once: the notice is gone on the next view
    again = (await person.client.get(PAGE)).text
    assert 'data-testid="notice"' not in again and len(rows(again)) == 1


async def test_match_counts_are_what_a_search_finds(person: Person) -> None:
    await person.sign_up("sid@example.com")
    key = await person.make_key("enterprise")
    cases = {"Iowa": {"state": "IA"}, "Ames, 3 beds": {"city": "Ames", "minBeds": "3"}}
    for name, filters in cases.items():
        assert (await person.submit(PAGE, PAGE, name=name, **filters)).status_code == 303
    page = (await person.client.get(PAGE)).text
    for row in rows(page):
        filters = next(f for name, f in cases.items() if f"<h2>{name}</h2>" in row)
        found = await person.client.get(
            "/v1/properties", params={**filters, "limit": "1"},
            headers={"Authorization": f"Bearer {key}"},
        )  # fmt: skip
        assert found.status_code == 200, found.text
        assert match_count(row) == found.json()["meta"]["total"], (filters, text(row))


async def test_refusals_are_shown_on_the_page_naming_the_field(person: Person) -> None:
    await person.sign_up("sue@example.com")
    cases = [
        ({"name": "x", "minBeds": "three"}, "minBeds"),
        ({"name": "x", "zipCode": "500"}, "zipCode"),
        ({"name": "x", "minPrice": "500000", "maxPrice": "100000"}, "minPrice"),
        ({"name": "x", "latitude": "42.0"}, "longitude"),
        ({"name": "", "state": "IA"}, "name"),
        ({"name": "x" * 101, "state": "IA"}, "name"),
    ]
    for fields, field in cases:
        refused = await person.submit(PAGE, PAGE, **fields)
        assert refused.status_code == 400, (fields, refused.status_code)
        assert refused.headers["content-type"].startswith("text/html")
        named, message = error_of(refused.text)
        assert named.split(".")[-1] == field, (fields, named, message)
        # the form keeps what was typed, and marks the field
        for name, value in fields.items():
            if value and len(value) < 50:
                assert f'value="{value}"' in refused.text, (name, value)
        assert 'aria-invalid="true"' in refused.text
    assert rows((await person.client.get(PAGE)).text) == []


async def test_the_plans_limit_is_said_in_words(person: Person) -> None:
    await person.sign_up("sol@example.com")
    for n in range(3):
        assert (await person.submit(PAGE, PAGE, name=f"s{n}", state="IA")).status_code == 303
    full = (await person.client.get(PAGE)).text
    assert 'action="/dashboard/searches" class="card' not in full  # no form that must fail
    assert 'data-testid="limit-reached"' in full and 'href="/dashboard#keys"' in full
    # a form sent anyway (from a page opened before the third was saved) is refused in words
    fourth = await person.submit(PAGE, PAGE, name="one too many", state="IA")
    assert fourth.status_code == 403
    message = text(error_of(fourth.text)[1])
    assert "3" in message and "Developer" in message, message
    assert len(rows(fourth.text)) == 3


async def test_delete_and_anothers_search(person: Person, fresh: Any) -> None:
    await person.sign_up("sy@example.com")
    await person.submit(PAGE, PAGE, name="mine", state="IA")
    sid = search_id(rows((await person.client.get(PAGE)).text)[0])
    other_client, _, _ = await fresh(cache_ttl=0)
    second = other(person, other_client)
    await second.sign_up("stan@example.com")
    theirs = await second.submit(PAGE, f"{PAGE}/{sid}/delete")
    assert theirs.status_code == 404 and 'data-testid="form-error"' in theirs.text
    # without the page's token: 403, nothing changes
    token = await second.token(PAGE)
    forged = await person.client.post(
        f"{PAGE}/{sid}/delete", data={"csrf_token": token}, follow_redirects=False
    )
    assert forged.status_code == 403
    assert len(rows((await person.client.get(PAGE)).text)) == 1
    gone = await person.submit(PAGE, f"{PAGE}/{sid}/delete")
    assert gone.status_code == 303
    assert rows((await person.client.get(PAGE)).text) == []
    missing = await person.submit(PAGE, f"{PAGE}/{sid}/delete")
    assert missing.status_code == 404


async def test_a_long_list_is_paged(person: Person, monkeypatch: Any) -> None:
    monkeypatch.setattr(pages, "PER_PAGE", 2)
    await person.sign_up("sam@example.com")
    for n in range(3):
        assert (await person.submit(PAGE, PAGE, name=f"s{n}", state="IA")).status_code == 303
    first = (await person.client.get(PAGE)).text
    assert (
        len(rows(first)) == 2
        and "1\u20132 of 3" in text(first)
        and "3 of 3 on the Free" in text(first)
    )
    assert 'href="?offset=2"' in first
    second = (await person.client.get(PAGE + "?offset=2")).text
    assert len(rows(second)) == 1 and 'href="?offset=0"' in second
    names = {
        re.sub(r".*<h2>([^<]+)</h2>.*", r"\1", r, flags=re.S) for r in rows(first) + rows(second)
    }
    assert names == {"s0", "s1", "s2"}
    for odd in ("-1", "x", "1e3", "99999999999"):  # read as the start, never a 500
        assert len(rows((await person.client.get(f"{PAGE}?offset={odd}")).text)) == 2


async def test_an_account_without_an_active_key_is_asked_to_make_one(person: Person) -> None:
    await person.sign_up("sky@example.com")
    dashboard = (await person.client.get("/dashboard")).text
    found = re.search(r'data-key-id="([^"]+)"', dashboard)
    assert found
    await person.submit("/dashboard", f"/dashboard/keys/{found.group(1)}/revoke")
    page = await person.client.get(PAGE)
    assert page.status_code == 200 and "no active API key" in text(page.text)
    assert 'action="/dashboard/searches" class="card' not in page.text
    refused = await person.submit(PAGE, PAGE, name="x", state="IA")
    assert refused.status_code == 403 and "create a key" in error_of(refused.text)[1]


async def test_a_search_may_watch_records_by_id(person: Person) -> None:
    await person.sign_up("sia@example.com")
    made = await person.submit(PAGE, PAGE, name="two homes", propertyIds="t-000, t-001\nt-001")
    assert made.status_code == 303
    (row,) = rows((await person.client.get(PAGE)).text)
    assert match_count(row) == 2 and "2 watched records" in text(row)
    bad = await person.submit(PAGE, PAGE, name="odd", propertyIds="t-000 no/such/id")
    assert bad.status_code == 400 and error_of(bad.text)[0] == "propertyIds"
    assert "no/such/id" in bad.text  # what was typed is kept


async def test_text_that_reads_other_than_it_is_stored_is_refused_naming_the_field(
    person: Person,
) -> None:
    """The form keeps the rules of an API body (`api.body.check_text`)."""
    await person.sign_up("syd@example.com")
    for fields, field in (
        ({"name": "Ames \u202eslmth.exe", "state": "IA"}, "name"),
        ({"name": "Ames \u2066homes\u2069", "state": "IA"}, "name"),
        ({"name": "x", "city": "Am\u202ees"}, "city"),
        ({"name": "Ames\x00", "state": "IA"}, "name"),
    ):
        refused = await person.submit(PAGE, PAGE, **fields)
        assert refused.status_code == 400, (fields, refused.status_code)
        assert error_of(refused.text)[0].split(".")[-1] == field, fields
    assert rows((await person.client.get(PAGE)).text) == []

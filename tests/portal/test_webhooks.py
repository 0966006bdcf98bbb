"""The dashboard's webhooks: an endpoint added from the form with its secret shown once, a
test event delivered to a receiver and its delivery row, resend, disable and enable, secret
rotation, deletion; refusals (a blocked address, the plan's limit, another account's
endpoint, a form without its token) shown on the page in words (both stores)."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from propdata.config import accounts_url
from propdata.kit.db import connect
from propdata.webhooks.schemas import EVENT_TYPES
from tests.live import until
from tests.portal.conftest import Person, Receiver, attribute, new_key_of, other, text

PAGE = "/dashboard/webhooks"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as made:
        yield made


@pytest.fixture
async def hooked(
    fresh: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AsyncIterator[Person]:
    """A visitor on a fresh store whose service delivers to 127.0.0.1 (the receiver)."""
    monkeypatch.chdir(tmp_path)
    client, clock, make_key = await fresh(cache_ttl=0, webhook_allowed_networks="127.0.0.1/32")
    # Deliveries are attempted in the background, when they are due by the wall clock.
    clock.now = time.time()
    embedded = fresh.store.backend == "embedded"
    outbox = fresh.store.folder / "outbox" if embedded else tmp_path / "var" / "outbox"
    db = await connect(accounts_url(fresh.store.url))
    yield Person(client, clock, make_key, outbox, db)
    await db.close()


def rows(page: str) -> list[str]:
    return re.findall(
        r'<article class="item[^"]*" data-testid="webhook-row".*?</article>', page, re.S
    )


def deliveries(row: str) -> list[str]:
    return re.findall(r'<tr data-testid="attempt-row".*?</tr>', row, re.S)


def hook_id(row: str) -> str:
    return attribute(row, "data-webhook-id")


def secret_of(page: str) -> str | None:
    found = re.search(r'data-testid="webhook-secret"[^>]*>([^<]+)<', page)
    return found.group(1) if found else None


def error_of(page: str) -> tuple[str, str]:
    found = re.search(r'data-testid="form-error"(?: data-field="([^"]*)")?>([^<]*)<', page)
    assert found, page[:2000]
    return found.group(1) or "", found.group(2)


async def add(person: Person, url: str, types: list[str] = (), **fields: str) -> Any:  # type: ignore[assignment]
    data: dict[str, Any] = {"csrf_token": await person.token(PAGE), "url": url, **fields}
    if types:
        data["eventTypes"] = list(types)
    return await person.client.post(PAGE, data=data, follow_redirects=False)


async def delivered(person: Person, check: Any, seconds: float = 15) -> str:
    """The page once `check(page)` holds (deliveries are made in the background)."""

    async def shown() -> str | None:
        page = str((await person.client.get(PAGE)).text)
        return page if check(page) else None

    return await until(shown, "the deliveries on the page", seconds)


async def test_the_page_needs_a_session_and_starts_empty(hooked: Person) -> None:
    page = await hooked.first_page(PAGE, "wes@example.com")
    assert rows(page.text) == [] and 'data-testid="empty"' in page.text
    assert "0 of 1 on the Free plan" in text(page.text)
    for name in EVENT_TYPES:
        assert f'name="eventTypes" value="{name}"' in page.text
    assert f'href="{PAGE}"' in (await hooked.client.get("/dashboard")).text
    # a browser that follows a form's address gets a page, never JSON or a 500
    for path in (
        f"{PAGE}/wh_x/test",
        f"{PAGE}/wh_x/deliveries/evt_x/resend",
        "/dashboard/searches/x/delete",
    ):
        answer = await hooked.client.get(path, headers={"Accept": "text/html"})
        assert answer.status_code == 405 and answer.headers["content-type"].startswith("text/html")


async def test_add_test_resend_and_see_the_deliveries(hooked: Person, receiver: Receiver) -> None:
    await hooked.sign_up("wyn@example.com")
    made = await add(hooked, receiver.url, ["webhook.test", "search.entered"],
                     description="staging <receiver>")  # fmt: skip
    assert made.status_code == 303 and made.headers["location"] == PAGE
    page = (await hooked.client.get(PAGE)).text
    secret = secret_of(page)
    assert secret and secret.startswith("whsec_")
    (row,) = rows(page)
    words = text(row)
    assert receiver.url in words and "enabled" in words and "staging &lt;receiver&gt;" in row
    assert "webhook.test" in words and "search.entered" in words and "property.listed" not in words
    assert secret_of((await hooked.client.get(PAGE)).text) is None  # shown once
    wid = hook_id(row)
    assert (await hooked.submit(PAGE, f"{PAGE}/{wid}/test")).status_code == 303
    page = await delivered(hooked, lambda p: "succeeded" in "".join(deliveries(rows(p)[0])))
    (delivery,) = deliveries(rows(page)[0])
    assert "webhook.test" in delivery and "HTTP 204" in text(delivery)
    (sent,) = receiver.received
    # what arrived is signed with the secret shown once
    event = Webhook(secret).verify(sent.body, sent.headers)
    assert event["type"] == "webhook.test"
    event_id = re.search(r'data-event-id="([^"]+)"', delivery)
    assert event_id and event_id.group(1) == sent.headers["webhook-id"] == event["id"]
    again = await hooked.submit(PAGE, f"{PAGE}/{wid}/deliveries/{event_id.group(1)}/resend")
    assert again.status_code == 303
    await delivered(hooked, lambda p: len(receiver.received) == 2)
    assert receiver.received[1].headers["webhook-id"] == event["id"]
    # the receiver holds the POST a moment before the dispatcher records its answer
    page = await delivered(
        hooked,
        lambda p: [text(d).count("succeeded") for d in deliveries(rows(p)[0])] == [1, 1],
    )
    # only an event the endpoint was sent can be sent again
    never = await hooked.submit(PAGE, f"{PAGE}/{wid}/deliveries/evt_never/resend")
    assert never.status_code == 404 and "evt_never" in error_of(never.text)[1]


async def test_a_failed_delivery_shows_its_status_and_error(
    hooked: Person, receiver: Receiver
) -> None:
    await hooked.sign_up("wil@example.com")
    receiver.status = 500
    await add(hooked, receiver.url)
    wid = hook_id(rows((await hooked.client.get(PAGE)).text)[0])
    await hooked.submit(PAGE, f"{PAGE}/{wid}/test")
    page = await delivered(hooked, lambda p: "HTTP 500" in text(p))
    waiting, failed = deliveries(rows(page)[0])  # the attempt to come, the one made
    assert "pending" in text(waiting) and "next try" in text(waiting)
    assert "failed" in text(failed) and "HTTP 500" in text(failed)


async def test_disable_enable_rotate_and_delete(hooked: Person, receiver: Receiver) -> None:
    await hooked.sign_up("wu@example.com")
    await add(hooked, receiver.url)
    first = secret_of((await hooked.client.get(PAGE)).text)
    wid = hook_id(rows((await hooked.client.get(PAGE)).text)[0])
    assert (await hooked.submit(PAGE, f"{PAGE}/{wid}/disable")).status_code == 303
    row = rows((await hooked.client.get(PAGE)).text)[0]
    assert 'data-testid="webhook-status">disabled' in row and "Disabled by you" in text(row)
    assert (await hooked.submit(PAGE, f"{PAGE}/{wid}/enable")).status_code == 303
    row = rows((await hooked.client.get(PAGE)).text)[0]
    assert 'data-testid="webhook-status">enabled' in row and "disabled-reason" not in row
    rotated = await hooked.submit(PAGE, f"{PAGE}/{wid}/rotate-secret", graceSeconds="0")
    assert rotated.status_code == 303
    page = (await hooked.client.get(PAGE)).text
    second = secret_of(page)
    assert second and second.startswith("whsec_") and second != first
    assert "signed with it alone" in text(page)
    bad = await hooked.submit(PAGE, f"{PAGE}/{wid}/rotate-secret", graceSeconds="a week")
    assert bad.status_code == 400 and error_of(bad.text)[0] == "graceSeconds"
    assert (await hooked.submit(PAGE, f"{PAGE}/{wid}/delete")).status_code == 303
    assert rows((await hooked.client.get(PAGE)).text) == []
    gone = await hooked.submit(PAGE, f"{PAGE}/{wid}/test")
    assert gone.status_code == 404 and 'data-testid="form-error"' in gone.text


async def test_refusals_are_said_in_words_on_the_page(hooked: Person, receiver: Receiver) -> None:
    await hooked.sign_up("wim@example.com")
    for url in ("http://example.com/hooks", "https://169.254.169.254/latest", "ftp://x.example/",
                "https://user:pw@example.com/", "not a url", ""):  # fmt: skip
        refused = await add(hooked, url)
        assert refused.status_code == 400, (url, refused.status_code)
        assert refused.headers["content-type"].startswith("text/html")
        field, message = error_of(refused.text)
        assert field == "url" and message, (url, field)
        if url:
            assert f'value="{url}"' in refused.text  # what was typed is kept
    bad_type = await add(hooked, receiver.url, ["property.listed", "nope"])
    assert bad_type.status_code == 400 and error_of(bad_type.text)[0] == "eventTypes"
    assert 'value="property.listed" checked' in bad_type.text
    assert (await add(hooked, receiver.url)).status_code == 303
    second = await add(hooked, receiver.url + "/2")
    assert second.status_code == 403
    message = error_of(second.text)[1]
    assert "1" in message and "Developer" in message, message
    assert len(rows(second.text)) == 1
    # at 1 of 1 the page offers no form that must fail: why, and what raises the limit
    full = (await hooked.client.get(PAGE)).text
    assert f'action="{PAGE}" class="card' not in full and 'name="url"' not in full
    limit = re.search(r'data-testid="limit-reached">([^<]*)<', full)
    assert limit and "the Developer plan holds 5" in limit.group(1), text(full)[-800:]
    assert 'href="/dashboard#keys"' in full and "propdata-client listen" in full


async def test_the_url_hint_follows_the_allowed_networks(hooked: Person, person: Person) -> None:
    """Where the operator allows loopback (`hooked`: 127.0.0.1/32) a receiver on the
    service's machine is offered; where no network is allowed, public addresses only and how
    to receive events locally anyway. Both say how to verify a delivery."""
    await hooked.sign_up("lou@example.com")
    local = text((await hooked.client.get(PAGE)).text)
    assert "http:// to a receiver on this service's machine" in local
    assert 'placeholder="http://127.0.0.1:3000/hook"' in (await hooked.client.get(PAGE)).text
    await person.sign_up("pat@example.com")
    public = text((await person.client.get(PAGE)).text)
    assert "https:// to a public address" in public and "this service's machine" not in public
    assert "deliveries go to public addresses only" in public
    assert "propdata-client listen --forward-to" in public
    assert "PROPDATA_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8" in public
    for page in (local, public):
        assert "verify_webhook(body, headers, secret)" in page and "docs/events.md" in page


async def test_anothers_endpoint_and_forms_without_their_token(
    hooked: Person, fresh: Any, receiver: Receiver
) -> None:
    await hooked.sign_up("wat@example.com")
    made = await add(hooked, receiver.url)
    assert made.status_code == 303, made.text[-3000:]
    wid = hook_id(rows((await hooked.client.get(PAGE)).text)[0])
    other_client, clock, _ = await fresh(cache_ttl=0, webhook_allowed_networks="127.0.0.1/32")
    clock.now = hooked.clock.now  # one time for both apps (each prunes the other's sessions)
    second = other(hooked, other_client)
    await second.sign_up("wendy@example.com")
    for action in ("test", "disable", "enable", "rotate-secret", "delete",
                   "deliveries/evt_nope/resend"):  # fmt: skip
        theirs = await second.submit(PAGE, f"{PAGE}/{wid}/{action}")
        assert theirs.status_code == 404, action
    token = await second.token(PAGE)
    forged = await hooked.client.post(
        f"{PAGE}/{wid}/delete", data={"csrf_token": token}, follow_redirects=False
    )
    assert forged.status_code == 403
    unsigned = await hooked.client.post(PAGE, data={"url": receiver.url}, follow_redirects=False)
    assert unsigned.status_code == 403
    last = (await hooked.client.get(PAGE)).text
    assert len(rows(last)) == 1, text(last)


async def test_the_buttons_spend_the_account_s_60_management_requests_with_its_keys(
    hooked: Person, receiver: Receiver
) -> None:
    """Each button (add, test, resend, rotate, enable, disable, delete) is a management request
    of the account, counted with its keys' API requests: 60 a minute in all."""
    await hooked.sign_up("wilma@example.com")
    key = new_key_of((await hooked.client.get("/dashboard")).text)
    assert key
    api = {"Authorization": f"Bearer {key}"}
    assert (await add(hooked, receiver.url)).status_code == 303
    wid = hook_id(rows((await hooked.client.get(PAGE)).text)[0])
    for action in ["test"] * 26 + ["disable", "enable", "rotate-secret"]:
        assert (await hooked.submit(PAGE, f"{PAGE}/{wid}/{action}")).status_code == 303, action
    for _ in range(30):
        assert (await hooked.client.get("/v1/webhooks", headers=api)).status_code == 200
    refused = await hooked.submit(PAGE, f"{PAGE}/{wid}/test")
    assert refused.status_code == 429 and "60 requests a minute" in text(refused.text)
    assert (await hooked.client.get(f"/v1/webhooks/{wid}", headers=api)).status_code == 429
    hooked.clock.advance(61)
    assert (await hooked.submit(PAGE, f"{PAGE}/{wid}/test")).status_code == 303


async def test_text_that_reads_other_than_it_is_stored_is_refused_naming_the_field(
    hooked: Person, receiver: Receiver
) -> None:
    """The form keeps the rules of an API body (`api.body.check_text`)."""
    await hooked.sign_up("wes@example.com")
    for url, fields, field in (
        (receiver.url + "/\u202ekoohbew", {}, "url"),
        (receiver.url, {"description": "ours \u2067x\u2069"}, "description"),
    ):
        refused = await add(hooked, url, **fields)
        assert refused.status_code == 400, (url, fields, refused.status_code)
        assert error_of(refused.text)[0] == field, (url, fields)
    assert rows((await hooked.client.get(PAGE)).text) == []

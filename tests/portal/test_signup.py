"""Sign-up, log-in, sessions, form tokens and attempt limits (portal.md), on both stores."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest

from propdata.errors import ServiceError, TooManyAttempts
from propdata.kit import crypto
from tests.accounts.test_passwords import LEGACY_SEALED, LEGACY_TOKEN
from tests.portal.conftest import STRONG, Person, new_key_of, other


async def test_sign_up_shows_a_working_free_key_once(person: Person) -> None:
    signed = await person.sign_up("Ada@Example.COM")
    assert signed.status_code == 303 and signed.headers["location"] == "/dashboard"
    cookie = signed.headers["set-cookie"]
    assert (
        "pd_session=" in cookie
        and "HttpOnly" in cookie
        and "SameSite=lax" in cookie.replace("Lax", "lax")
    )
    dashboard = await person.client.get("/dashboard")
    assert dashboard.status_code == 200
    key = new_key_of(dashboard.text)
    assert key and key.startswith("pmd_live_")
    assert f"export PROPDATA_API_KEY={key}" in dashboard.text  # the ready curl lines
    assert "ada@example.com" in dashboard.text  # stored lower-case
    assert dashboard.text.count('data-testid="key-row"') == 1
    assert "Free" in dashboard.text
    # it works on the API, as a Free key
    status = await person.client.get("/v1/auth/status", headers={"Authorization": f"Bearer {key}"})
    assert status.status_code == 200 and status.json()["data"]["plan"] == "free"
    # shown once: the next view has no key
    again = await person.client.get("/dashboard")
    assert new_key_of(again.text) is None and key not in again.text


async def test_the_key_is_not_kept_readable_in_the_store(person: Person) -> None:
    await person.sign_up("bob@example.com")
    db = person.db
    assert db is not None
    rows = await db.fetch_all("SELECT flash FROM sessions")
    assert rows and all(row[0] is not None for row in rows)  # sealed, not yet shown
    dashboard = await person.client.get("/dashboard")
    key = new_key_of(dashboard.text)
    assert key is not None
    for table in ("sessions", "api_keys", "accounts", "audit_log", "account_tokens"):
        for row in await db.fetch_all(f"SELECT * FROM {table}"):
            assert key not in repr(row), table
            assert key[9:] not in repr(row), table


async def test_a_flash_sealed_in_the_hmac_counter_mode_format_still_shows(person: Person) -> None:
    """A store may hold a session's flash sealed in the HMAC counter-mode format: it shows."""
    await person.sign_up("bo@example.com")
    repo = person.accounts().repo
    row = await repo.db.fetch_one("SELECT account_id, created_at FROM sessions")
    assert row is not None
    account_id, created_at = row
    token_hash = crypto.token_hash(LEGACY_TOKEN)
    await repo.insert_session(token_hash, account_id, created_at, person.clock())
    await repo.set_flash(token_hash, LEGACY_SEALED)
    person.client.cookies.clear()
    person.client.cookies.set("pd_session", LEGACY_TOKEN)
    dashboard = await person.client.get("/dashboard")
    assert "Saved “Ames”: 12 records match it now." in dashboard.text


async def test_a_form_without_its_token_changes_nothing(person: Person) -> None:
    await person.client.get("/signup")
    response = await person.client.post(
        "/signup", data={"email": "eve@example.com", "password": STRONG}, follow_redirects=False
    )
    assert response.status_code == 403
    forged = await person.client.post(
        "/signup", data={"email": "eve@example.com", "password": STRONG, "csrf_token": "0" * 64},
        follow_redirects=False,
    )  # fmt: skip
    assert forged.status_code == 403
    assert await person.accounts().by_email("eve@example.com") is None


async def test_another_sessions_token_is_refused(person: Person, fresh: Any) -> None:
    await person.sign_up("one@example.com")
    token_one = await person.token("/dashboard")
    other_client, _, _ = await fresh(cache_ttl=0)
    second = other(person, other_client)
    await second.sign_up("two@example.com")
    # two's browser sends one's token: refused, no key made
    made = await second.client.post("/dashboard/keys", data={"csrf_token": token_one, "name": "x"},
                                   follow_redirects=False)  # fmt: skip
    assert made.status_code == 403
    assert 'data-testid="key-row"' in (await second.client.get("/dashboard")).text
    assert (await second.client.get("/dashboard")).text.count('data-testid="key-row"') == 1


async def test_sign_up_errors_keep_the_email_and_name_the_field(person: Person) -> None:
    cases = [
        ({"email": "not-an-address", "password": STRONG}, 400, "email"),
        ({"email": "carol@example.com", "password": "short"}, 400, "password"),
        ({"email": "carol@example.com", "password": "x" * 129}, 400, "password"),
        ({"email": "carol@example.com", "password": "QwertY123456"}, 400, "password"),
        ({"email": "carol@example.com", "password": "carol@example.com"}, 400, "password"),
    ]
    for fields, status, field in cases:
        response = await person.submit("/signup", "/signup", **fields)
        assert response.status_code == status, (fields, response.text[:400])
        assert 'data-testid="form-error"' in response.text
        assert f'data-field="{field}"' in response.text
        assert fields["password"] not in response.text.replace(fields["email"], "")
        assert f'value="{fields["email"]}"' in response.text  # kept
    assert await person.accounts().by_email("carol@example.com") is None


async def test_an_email_taken_is_409(person: Person, fresh: Any) -> None:
    assert (await person.sign_up("dan@example.com")).status_code == 303
    other_client, _, _ = await fresh(cache_ttl=0)
    second = other(person, other_client)
    taken = await second.sign_up("DAN@example.com")
    assert taken.status_code == 409 and 'data-testid="form-error"' in taken.text


async def test_log_in_out_and_wrong_password(person: Person, fresh: Any) -> None:
    await person.sign_up("erin@example.com")
    assert (await person.submit("/dashboard", "/logout")).headers["location"] == "/"
    away = await person.client.get("/dashboard", follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"] == "/login"
    wrong = await person.log_in("erin@example.com", "not the right password")
    assert wrong.status_code == 401 and 'data-testid="form-error"' in wrong.text
    assert 'value="erin@example.com"' in wrong.text and "not the right password" not in wrong.text
    unknown = await person.log_in("nobody@example.com", "not the right password")
    assert unknown.status_code == 401
    assert re.sub(r"nobody", "erin", unknown.text.split("<form")[0]) == wrong.text.split("<form")[0]
    ok = await person.log_in("Erin@Example.com")
    assert ok.status_code == 303 and ok.headers["location"] == "/dashboard"
    assert (await person.client.get("/dashboard")).status_code == 200


async def test_log_ins_are_limited_per_email(person: Person) -> None:
    await person.sign_up("fay@example.com")
    await person.submit("/dashboard", "/logout")
    for _ in range(5):
        assert (await person.log_in("fay@example.com", "wrong password 123")).status_code == 401
    limited = await person.log_in("fay@example.com")  # even the right password, for now
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert 'data-testid="form-error"' in limited.text and "<form" in limited.text
    person.clock.advance(15 * 60 + 1)
    assert (await person.log_in("fay@example.com")).status_code == 303


@pytest.mark.slow
async def test_log_ins_are_limited_per_client_address(person: Person) -> None:
    for i in range(20):
        assert (await person.log_in(f"x{i}@example.com", "wrong password 123")).status_code == 401
    assert (await person.log_in("x99@example.com", "wrong password 123")).status_code == 429


@pytest.mark.slow
async def test_sign_ups_are_limited_per_client_address(person: Person) -> None:
    for i in range(10):
        assert (await person.sign_up(f"s{i}@example.com")).status_code == 303
        await person.submit("/dashboard", "/logout")
    limited = await person.sign_up("s10@example.com")
    assert limited.status_code == 429 and "retry-after" in limited.headers
    assert await person.accounts().by_email("s10@example.com") is None
    person.clock.advance(3601)
    assert (await person.sign_up("s10@example.com")).status_code == 303


async def test_sessions_expire_after_fourteen_idle_days(person: Person) -> None:
    await person.sign_up("gil@example.com")
    person.clock.advance(13 * 86_400)
    assert (await person.client.get("/dashboard", follow_redirects=False)).status_code == 200
    person.clock.advance(13 * 86_400)  # seen 13 days ago: still alive
    assert (await person.client.get("/dashboard", follow_redirects=False)).status_code == 200
    person.clock.advance(14 * 86_400 + 1)
    assert (await person.client.get("/dashboard", follow_redirects=False)).status_code == 303


@pytest.mark.slow
async def test_parallel_wrong_passwords_never_pass_the_limit(person: Person) -> None:
    import asyncio

    await person.sign_up("hugo@example.com")
    await person.submit("/dashboard", "/logout")
    token = await person.token("/login")
    data = {"csrf_token": token, "email": "hugo@example.com", "password": "wrong password 123"}
    answers = await asyncio.gather(
        *(person.client.post("/login", data=data, follow_redirects=False) for _ in range(12))
    )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [401] * 5 + [429] * 7, statuses


async def test_idle_sessions_leave_the_store(person: Person) -> None:
    await person.sign_up("ida@example.com")
    db = person.db
    assert db is not None
    assert len(await db.fetch_all("SELECT token_hash FROM sessions")) == 1
    person.clock.advance(14 * 86_400 + 1)
    await person.log_in("ida@example.com")  # a new session sweeps the idle one out
    assert len(await db.fetch_all("SELECT token_hash FROM sessions")) == 1


async def test_a_planted_form_cookie_forges_no_signed_in_form(person: Person, fresh: Any) -> None:
    # The attacker's own browser: a form cookie and the token it carries.
    attacker_client, _, _ = await fresh(cache_ttl=0)
    attacker = other(person, attacker_client)
    planted_token = await attacker.token("/signup")
    planted_cookie = attacker.client.cookies["pd_form"]
    # The victim signs in; the attacker's cookie is planted in the victim's browser.
    key = await person.sign_up("vic@example.com")
    assert key.status_code == 303
    kid = re.findall(r'data-key-id="([^"]+)"', (await person.client.get("/dashboard")).text)[0]
    person.client.cookies.set("pd_form", planted_cookie)
    forged = await person.client.post(
        f"/dashboard/keys/{kid}/revoke", data={"csrf_token": planted_token},
        follow_redirects=False,
    )  # fmt: skip
    assert forged.status_code == 403
    assert 'data-testid="key-status">active' in (await person.client.get("/dashboard")).text


async def test_a_token_from_before_log_in_is_refused_after_it(person: Person) -> None:
    await person.sign_up("wyn@example.com")
    await person.submit("/dashboard", "/logout")
    before = await person.token("/login")
    assert (await person.log_in("wyn@example.com")).status_code == 303
    made = await person.client.post(
        "/dashboard/keys", data={"csrf_token": before, "name": "x"}, follow_redirects=False
    )
    assert made.status_code == 403
    assert (await person.client.get("/dashboard")).text.count('data-testid="key-row"') == 1


async def test_failed_sign_ups_count_toward_the_hourly_limit(person: Person) -> None:
    assert (await person.sign_up("taken@example.com")).status_code == 303
    await person.submit("/dashboard", "/logout")
    for _ in range(9):  # probing for registered addresses is one sign-up each
        assert (await person.sign_up("taken@example.com")).status_code == 409
    limited = await person.sign_up("fresh@example.com")
    assert limited.status_code == 429 and "retry-after" in limited.headers
    assert (await person.sign_up("taken@example.com")).status_code == 429


async def test_a_refused_sign_up_costs_no_password_hash(person: Person) -> None:
    import time

    from propdata.accounts.passwords import hash_password

    accounts = person.accounts()
    for i in range(10):
        with contextlib.suppress(ServiceError):
            await accounts.sign_up(f"h{i}@example.com", "short", "10.0.0.9", "http://x")
    started = time.perf_counter()
    await hash_password(STRONG)
    one_hash = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(20):
        with pytest.raises(TooManyAttempts):
            await accounts.sign_up(f"r{i}@example.com", STRONG, "10.0.0.9", "http://x")
    assert time.perf_counter() - started < 4 * one_hash  # 20 hashes would take 20 times one

"""Mailed links (verify, reset), operators' pages, and the accounts command line."""

from __future__ import annotations

import asyncio
from typing import Any

from typer.testing import CliRunner

from propdata.accounts.service import AccountService
from propdata.cli import app as cli
from tests.portal.conftest import STRONG, Person, new_key_of, other

NEW = "a brand new passphrase 77"


async def test_verification_mail_and_link(person: Person) -> None:
    await person.sign_up("ola@example.com")
    (mail,) = person.mails()
    assert mail["To"] == "ola@example.com" and "Confirm" in mail["Subject"]
    link = person.link("verify")
    first = await person.client.get(link)
    assert first.status_code == 200 and "confirmed" in first.text
    assert (await person.accounts().by_email("ola@example.com")).verified  # type: ignore[union-attr]
    used = await person.client.get(link)
    assert used.status_code == 400


async def test_forgot_answers_alike_and_reset_ends_other_sessions(
    person: Person, fresh: Any
) -> None:
    await person.sign_up("pia@example.com")
    other_client, _, _ = await fresh(cache_ttl=0)
    laptop = other(person, other_client)
    assert (await laptop.log_in("pia@example.com")).status_code == 303
    known = await laptop.submit("/forgot", "/forgot", email="pia@example.com")
    unknown = await laptop.submit("/forgot", "/forgot", email="nobody@example.com")
    assert known.status_code == unknown.status_code == 200
    assert known.text.replace("pia", "x") == unknown.text.replace("nobody", "x")
    assert len([m for m in person.mails() if "Reset" in m["Subject"]]) == 1
    link = person.link("reset")
    weak = await person.submit(link, link, password="short")
    assert weak.status_code == 400 and 'data-testid="form-error"' in weak.text
    done = await person.submit(link, link, password=NEW)
    assert done.status_code == 303 and done.headers["location"] == "/dashboard"
    assert (await person.client.get("/dashboard", follow_redirects=False)).status_code == 200
    # the laptop's session ended; the old password no longer works; the link is used up
    assert (await laptop.client.get("/dashboard", follow_redirects=False)).status_code == 303
    assert (await laptop.log_in("pia@example.com", STRONG)).status_code == 401
    assert (await laptop.log_in("pia@example.com", NEW)).status_code == 303
    assert (await person.client.get(link)).status_code == 400


async def _reset_link(person: Person, email: str) -> str:
    """The reset link mailed to a new account of `email` that signed up and logged out."""
    await person.sign_up(email)
    await person.submit("/dashboard", "/logout")
    await person.submit("/forgot", "/forgot", email=email)
    return person.link("reset")


async def test_a_reset_link_lasts_one_hour(person: Person) -> None:
    link = await _reset_link(person, "quin@example.com")
    person.clock.advance(3601)
    assert (await person.client.get(link)).status_code == 400


async def test_a_refused_password_leaves_the_reset_link_as_it_was(person: Person) -> None:
    link = await _reset_link(person, "rex@example.com")
    person.clock.advance(50 * 60)
    assert (await person.submit(link, link, password="short")).status_code == 400
    person.clock.advance(5 * 60)  # not shortened by the refusal
    assert (await person.client.get(link)).status_code == 200
    person.clock.advance(4 * 60 + 30)
    assert (await person.submit(link, link, password="short")).status_code == 400
    person.clock.advance(31)  # nor lengthened: an hour after it was sent, it is dead
    assert (await person.client.get(link)).status_code == 400
    assert (await person.submit("/forgot", link, password=NEW)).status_code in (400, 403)


async def test_a_reset_of_an_unconfirmed_address_revokes_the_keys_made_before_it(
    person: Person, fresh: Any
) -> None:
    # Someone signs up with another person's address and keeps the key.
    squatter_client, _, _ = await fresh(cache_ttl=0)
    squatter = other(person, squatter_client)
    await squatter.sign_up("uma@example.com")
    kept = new_key_of((await squatter.client.get("/dashboard")).text)
    assert kept
    # The address's owner resets the password from the mail.
    await person.submit("/forgot", "/forgot", email="uma@example.com")
    link = person.link("reset")
    assert (await person.submit(link, link, password=NEW)).status_code == 303
    dashboard = (await person.client.get("/dashboard")).text
    assert 'data-testid="notice"' in dashboard and "revoked" in dashboard
    assert 'data-testid="key-status">active' not in dashboard
    answer = await person.client.get(
        "/v1/properties/t-000", headers={"Authorization": f"Bearer {kept}"}
    )
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "revoked_api_key"
    assert (await squatter.client.get("/dashboard", follow_redirects=False)).status_code == 303


async def test_a_reset_of_a_confirmed_address_keeps_the_keys(person: Person) -> None:
    await person.sign_up("val@example.com")
    key = new_key_of((await person.client.get("/dashboard")).text)
    await person.client.get(person.link("verify"))
    await person.submit("/forgot", "/forgot", email="val@example.com")
    link = person.link("reset")
    assert (await person.submit(link, link, password=NEW)).status_code == 303
    answer = await person.client.get(
        "/v1/properties/t-000", headers={"Authorization": f"Bearer {key}"}
    )
    assert answer.status_code == 200
    assert 'data-testid="notice"' not in (await person.client.get("/dashboard")).text


async def make_operator(person: Person, address: str = "root@example.com") -> None:
    accounts: AccountService = person.accounts()
    await accounts.create_account(address, STRONG, admin=True, actor="test")
    assert (await person.log_in(address)).status_code == 303


async def test_admin_is_for_operators_only(person: Person, fresh: Any) -> None:
    assert (await person.client.get("/admin")).status_code == 403
    await person.sign_up("rae@example.com")
    assert (await person.client.get("/admin")).status_code == 403
    token = await person.token("/dashboard")
    posted = await person.client.post("/admin/accounts/disable",
                                      data={"csrf_token": token, "email": "rae@example.com"})  # fmt: skip
    assert posted.status_code == 403
    assert (await person.accounts().by_email("rae@example.com")).status == "active"  # type: ignore[union-attr]


async def test_operator_sets_enterprise_limits_and_disables(person: Person, fresh: Any) -> None:
    await person.sign_up("sam@example.com")
    key = new_key_of((await person.client.get("/dashboard")).text)
    assert key
    sam = await person.accounts().by_email("sam@example.com")
    assert sam
    (held,) = await person.accounts().keys_of(sam)
    op_client, _, _ = await fresh(cache_ttl=0)
    op = other(person, op_client)
    await make_operator(op)
    page = await op.client.get("/admin")
    assert page.status_code == 200 and "sam@example.com" in page.text and held.id in page.text
    bad = await op.submit(
        "/admin", f"/admin/keys/{held.id}/plan", plan="enterprise", perMinute="1e3"
    )
    assert bad.status_code == 400 and 'data-field="perMinute"' in bad.text
    bad = await op.submit(
        "/admin", f"/admin/keys/{held.id}/plan", plan="enterprise", eventsPerDay="0"
    )
    assert bad.status_code == 400 and 'data-field="eventsPerDay"' in bad.text
    set_ = await op.submit("/admin", f"/admin/keys/{held.id}/plan", plan="enterprise",
                           perMinute="7", daily="", defaultPageSize="3", maxPageSize="5",
                           savedSearches="40", webhookEndpoints="7", eventsPerDay="2500")  # fmt: skip
    assert set_.status_code == 303
    shown = "7/min, unlimited/day, pages 3/5, 40 saved searches, 7 webhooks, 2,500 events/day"
    assert shown in (await op.client.get("/admin")).text
    answer = await person.client.get(
        "/v1/properties?state=IA", headers={"Authorization": f"Bearer {key}"}
    )
    assert answer.headers["x-ratelimit-limit"] == "7" and "x-quota-limit" not in answer.headers
    assert len(answer.json()["data"]) <= 3
    disabled = await op.submit("/admin", "/admin/accounts/disable", email="sam@example.com")
    assert disabled.status_code == 303
    after = await person.client.get(
        "/v1/properties/t-000", headers={"Authorization": f"Bearer {key}"}
    )
    assert after.status_code == 401 and after.json()["error"]["code"] == "revoked_api_key"
    assert (await person.client.get("/dashboard", follow_redirects=False)).status_code == 303
    assert (await person.log_in("sam@example.com")).status_code == 401
    audit = (await op.client.get("/admin")).text
    assert "account.disabled" in audit and "enterprise 7/min" in audit
    assert "40 saved searches, 7 webhook endpoints, 2500 events/day" in audit


def test_accounts_command_line(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("PROPDATA_DATABASE_URL", str(tmp_path / "p.db"))
    runner = CliRunner()
    assert runner.invoke(cli, ["data", "init"]).exit_code == 0
    made = runner.invoke(
        cli, ["accounts", "create", "ops@example.com", "--admin"], input=STRONG + "\n"
    )
    assert made.exit_code == 0, made.output
    assert STRONG not in made.output
    weak = runner.invoke(cli, ["accounts", "create", "weak@example.com"], input="short\n")
    assert weak.exit_code == 1 and "12" in weak.output
    listed = runner.invoke(cli, ["accounts", "list"])
    assert "ops@example.com" in listed.output and "operator" in listed.output
    key = runner.invoke(cli, ["keys", "create", "--plan", "pro", "--account", "ops@example.com"])
    assert key.exit_code == 0, key.output
    unknown = runner.invoke(cli, ["keys", "create", "--plan", "pro", "--account", "no@example.com"])
    assert unknown.exit_code == 1
    assert (
        runner.invoke(cli, ["accounts", "create", "two@example.com"], input=STRONG + "\n").exit_code
        == 0
    )
    assert runner.invoke(cli, ["accounts", "admin", "two@example.com"]).exit_code == 0
    assert runner.invoke(cli, ["accounts", "disable", "two@example.com"]).exit_code == 0
    listed = runner.invoke(cli, ["accounts", "list"]).output
    assert "disabled" in listed

    async def keys_of_ops() -> list[Any]:
        from propdata.accounts.repository import KeyRepository
        from propdata.kit.db import connect

        db = await connect(str(tmp_path / "p-accounts.db"))
        try:
            return await KeyRepository(db).all()
        finally:
            await db.close()

    (attached,) = asyncio.run(keys_of_ops())
    assert attached.account_id is not None and attached.plan == "pro"


def test_plan_changes_and_revocations_on_the_command_line_are_audited(
    tmp_path: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("PROPDATA_DATABASE_URL", str(tmp_path / "p.db"))
    runner = CliRunner()
    assert runner.invoke(cli, ["data", "init"]).exit_code == 0
    assert (
        runner.invoke(cli, ["accounts", "create", "zed@example.com"], input=STRONG + "\n").exit_code
        == 0
    )
    made = runner.invoke(cli, ["keys", "create", "--plan", "free", "--account", "zed@example.com"])
    assert made.exit_code == 0, made.output
    secret = made.output.strip().splitlines()[-1]

    async def entries() -> list[Any]:
        from propdata.accounts.repository import AccountRepository, KeyRepository
        from propdata.kit.db import connect

        db = await connect(str(tmp_path / "p-accounts.db"))
        try:
            (key,) = await KeyRepository(db).all()
            return [key, *await AccountRepository(db).audit_of(None)]
        finally:
            await db.close()

    key, *_ = asyncio.run(entries())
    assert runner.invoke(cli, ["keys", "plan", key.id, "pro"]).exit_code == 0
    assert runner.invoke(cli, ["keys", "revoke", "-"], input=secret + "\n").exit_code == 0
    assert runner.invoke(cli, ["keys", "plan", key.id, "gold"]).exit_code == 2
    _, *audit = asyncio.run(entries())
    done = [(e.action, e.key_id, e.from_value, e.to_value, e.actor, e.account_id) for e in audit]
    assert ("key.plan", key.id, "free", "pro", "cli", key.account_id) in done
    assert ("key.revoked", key.id, "active", "revoked", "cli", key.account_id) in done

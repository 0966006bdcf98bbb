"""`propdata keys` and `propdata accounts`: API keys and the portal's accounts."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from propdata.cli.base import (
    NoStore,
    T,
    accounts_app,
    check_store,
    err,
    keys_app,
    no_store,
    require_made,
    settings_or_exit,
)
from propdata.kit import crypto
from propdata.plans import BY_NAME, NAMES, choice

if TYPE_CHECKING:
    # Imported where used: `propdata serve` needs neither, and they cost its start-up
    # (Litestar, Argon2) about 0.35 s before the workers are even started.
    from propdata.accounts.keys import KeyService
    from propdata.accounts.service import AccountService
    from propdata.config import Settings
    from propdata.kit.db import Database


def _on_accounts(
    work: Callable[[Database, Settings], Awaitable[T]],
    refused: tuple[type[Exception], ...],
    code: int,
) -> T:
    """Run `work` against the accounts store, which no data load ever locks; what it refuses
    (`refused`) is said on standard error and exits with `code`."""
    from propdata.app import open_stores

    settings = settings_or_exit()
    check_store(settings, create=False)

    async def main() -> T:
        await require_made(settings)
        db, accounts = await open_stores(settings)
        try:
            return await work(accounts, settings)
        finally:
            if accounts is not db:
                await accounts.close()
            await db.close()

    try:
        return asyncio.run(main())
    except NoStore:
        raise no_store(settings) from None
    except refused as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(code) from exc


def _keys(work: Callable[[KeyService], Awaitable[T]]) -> T:
    """Run a key command against the accounts store."""
    from propdata.accounts.keys import KeyCommandError, KeyService

    return _on_accounts(lambda accounts, _: work(KeyService(accounts)), (KeyCommandError,), 2)


_PLAN_HELP = f"{choice(NAMES)}."
_CUSTOM = f"({choice(tuple(name for name in NAMES if BY_NAME[name].customisable))})"
PerMinute = Annotated[
    int | None, typer.Option("--per-minute", help=f"Custom per-minute limit {_CUSTOM}.")
]
Daily = Annotated[int | None, typer.Option("--daily", help=f"Custom daily quota {_CUSTOM}.")]
DefaultPage = Annotated[
    int | None, typer.Option("--default-page-size", help=f"Custom default page size {_CUSTOM}.")
]
MaxPage = Annotated[
    int | None, typer.Option("--max-page-size", help=f"Custom maximum page size {_CUSTOM}.")
]
SavedSearches = Annotated[
    int | None,
    typer.Option("--saved-searches", help=f"Custom saved searches of the key's owner {_CUSTOM}."),
]
WebhookEndpoints = Annotated[
    int | None,
    typer.Option(
        "--webhook-endpoints", help=f"Custom webhook endpoints of the key's owner {_CUSTOM}."
    ),
]
EventsPerDay = Annotated[
    int | None,
    typer.Option(
        "--events-per-day",
        help=f"Custom cap on the events produced for the key's owner in any 24 h {_CUSTOM}.",
    ),
]


@keys_app.command("create")
def keys_create(
    plan: Annotated[str, typer.Option(help=_PLAN_HELP)],
    name: Annotated[str | None, typer.Option(help="A label for the key.")] = None,
    per_minute: PerMinute = None,
    daily: Daily = None,
    default_page_size: DefaultPage = None,
    max_page_size: MaxPage = None,
    saved_searches: SavedSearches = None,
    webhook_endpoints: WebhookEndpoints = None,
    events_per_day: EventsPerDay = None,
    account: Annotated[
        str | None, typer.Option(help="The email of the portal account that holds the key.")
    ] = None,
) -> None:
    """Create a key; the key itself is printed once, alone on the last line."""
    from propdata.accounts.keys import CustomLimits

    limits = CustomLimits(per_minute, daily, default_page_size, max_page_size, saved_searches,
                          webhook_endpoints, events_per_day)  # fmt: skip
    if account is None:
        key, secret = _keys(lambda svc: svc.create(plan.lower(), name, limits))
    else:
        key, secret = _accounts(
            lambda svc: svc.create_key_for(account, plan.lower(), name, limits, actor="cli")
        )
    err.print(
        f"Created {key.id} ({key.name}) on the {key.plan} plan. Keep the key: it is not shown again."
    )
    print(secret)


@keys_app.command("list")
def keys_list() -> None:
    """List keys (ids, names, plans, status; never the keys themselves)."""
    keys = _keys(lambda svc: svc.all())
    table = Table("id", "name", "prefix", "plan", "per minute", "daily", "page size",
                  "searches/webhooks", "events a day", "status", "created")  # fmt: skip
    for k in keys:
        table.add_row(k.id, k.name, k.prefix + "…", k.plan, str(k.per_minute),
                      "unlimited" if k.daily is None else str(k.daily),
                      f"{k.default_page_size}/{k.max_page_size}",
                      f"{k.saved_searches}/{k.webhook_endpoints}",
                      "unlimited" if k.events_per_day is None else str(k.events_per_day),
                      k.status, k.created_at)  # fmt: skip
    # Piped output (scripts, tests) gets the whole table rather than an 80-column squeeze.
    Console(width=None if sys.stdout.isatty() else 200).print(table)


KeyArgument = Annotated[
    str,
    typer.Argument(
        help="The key id (key_…), or - to read the key itself from standard input. The key"
        " itself as an argument works too, but lands in shell history and `ps`."
    ),
]


def _which_key(argument: str) -> str:
    """The key id or key an operator named: `-` reads the key from standard input."""
    if argument == "-":
        return sys.stdin.readline().strip()
    if argument.startswith(crypto.PREFIX):
        err.print(
            "[yellow]warning:[/yellow] a key on the command line is kept in shell history and"
            " shown by `ps`; name the key by its id, or pass - and the key on standard input."
        )
    return argument


@keys_app.command("plan")
def keys_plan(
    key: KeyArgument,
    plan: Annotated[str, typer.Argument(help=_PLAN_HELP)],
    per_minute: PerMinute = None,
    daily: Daily = None,
    default_page_size: DefaultPage = None,
    max_page_size: MaxPage = None,
    saved_searches: SavedSearches = None,
    webhook_endpoints: WebhookEndpoints = None,
    events_per_day: EventsPerDay = None,
) -> None:
    """Move a key to another plan (custom limits are reset); effective on its next request."""
    from propdata.accounts.keys import CustomLimits

    limits = CustomLimits(per_minute, daily, default_page_size, max_page_size, saved_searches,
                          webhook_endpoints, events_per_day)  # fmt: skip
    named = _which_key(key)
    updated = _keys(lambda svc: _audited(svc).command_plan(named, plan.lower(), limits))
    events = "unlimited" if updated.events_per_day is None else f"{updated.events_per_day:,}"
    err.print(f"{updated.id} is now on the {updated.plan} plan ({updated.per_minute}/min,"
              f" {'unlimited' if updated.daily is None else updated.daily}/day,"
              f" {events} events/day).")  # fmt: skip


def _audited(keys: KeyService) -> AccountService:
    """The keys' store as accounts, whose changes go to the audit log (no mail, no limits)."""
    from propdata.accounts.service import AccountService
    from propdata.kit.mail import OutboxMailer
    from propdata.kit.ratelimit.sqlite import SQLiteLimiter

    return AccountService(
        keys.db, keys, SQLiteLimiter(":memory:"), OutboxMailer("var/outbox", "cli")
    )


@keys_app.command("revoke")
def keys_revoke(key: KeyArgument) -> None:
    """Revoke a key; its next request is refused."""
    named = _which_key(key)
    revoked = _keys(lambda svc: _audited(svc).command_revoke(named))
    err.print(f"{revoked.id} is revoked.")


# -- accounts -----------------------------------------------------------------------------


def _accounts(work: Callable[[AccountService], Awaitable[T]]) -> T:
    """Run an accounts command against the accounts store."""
    from propdata.accounts.keys import KeyCommandError, KeyService
    from propdata.accounts.service import AccountService
    from propdata.errors import ServiceError
    from propdata.kit.mail import mailer_for
    from propdata.kit.ratelimit.sqlite import SQLiteLimiter

    async def with_service(store: Database, settings: Settings) -> T:
        # These commands send no mail and count no attempts; the service still needs both.
        mailer = mailer_for(settings.smtp_url, settings.outbox_path, settings.mail_from)
        limiter = SQLiteLimiter(":memory:")
        return await work(AccountService(store, KeyService(store), limiter, mailer))

    return _on_accounts(with_service, (KeyCommandError, ServiceError), 1)


Email = Annotated[str, typer.Argument(help="The account's email address.")]


@accounts_app.command("create")
def accounts_create(
    email: Email,
    admin: Annotated[bool, typer.Option("--admin", help="An operator: may open /admin.")] = False,
) -> None:
    """Create an account (email counted as confirmed); the password is read from stdin."""
    if sys.stdin.isatty():
        import getpass

        password = getpass.getpass("Password (12 to 128 characters): ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    made = _accounts(lambda svc: svc.create_account(email, password, admin=admin, actor="cli"))
    err.print(f"Created {made.email}{' (operator)' if made.is_admin else ''}.")


@accounts_app.command("list")
def accounts_list() -> None:
    """List accounts with their status and number of keys."""
    people = _accounts(lambda svc: svc.all_accounts())
    table = Table("email", "status", "role", "confirmed", "active keys", "keys", "created")
    for person, keys in people:
        table.add_row(person.email, person.status, "operator" if person.is_admin else "developer",
                      "yes" if person.verified else "no",
                      str(sum(1 for k in keys if k.status == "active")), str(len(keys)),
                      person.created_at)  # fmt: skip
    Console(width=None if sys.stdout.isatty() else 200).print(table)


@accounts_app.command("disable")
def accounts_disable(email: Email) -> None:
    """Disable an account: its keys answer 401 revoked_api_key at once, its sessions end."""
    done = _accounts(lambda svc: svc.disable("cli", email, "cli"))
    err.print(f"{done.email} is disabled.")


@accounts_app.command("admin")
def accounts_admin(email: Email) -> None:
    """Make an account an operator (it may open /admin)."""
    done = _accounts(lambda svc: svc.set_admin(email, actor="cli"))
    err.print(f"{done.email} is an operator.")

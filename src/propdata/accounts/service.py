"""An account's decisions: sign-up, log-in, mailed links, keys held by an account, plan
changes, operators, and the audit log of every change.

The pages (`propdata.portal`) and the command line call `AccountService` alone; everything a
person may or may not do is decided here, and every refusal is a `ServiceError` naming the
form field. It keeps sessions, their flash and form tokens through `accounts.sessions`, and
counts attempts (log-ins, sign-ups, mails) through `accounts.throttle`.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import time

from email_validator import EmailNotValidError, validate_email

from propdata.accounts import billing
from propdata.accounts.keys import CustomLimits, KeyService
from propdata.accounts.passwords import hash_password, problem, verify_password
from propdata.accounts.repository import AccountRepository, KeyRepository
from propdata.accounts.schemas import Account, ApiKey, AuditEntry
from propdata.accounts.sessions import SESSION_LIFETIME, Clock, Flash, Sessions, SignedIn
from propdata.accounts.throttle import Throttle, managed
from propdata.errors import (
    EmailTaken,
    Forbidden,
    InvalidCredentials,
    InvalidField,
    NotFound,
    TooManyAttempts,
)
from propdata.kit import crypto
from propdata.kit.db import Database
from propdata.kit.mail import Mailer
from propdata.kit.ratelimit.base import Limiter
from propdata.plans import BY_NAME, FREE, NAMES, SELF_SERVE, Plan, choice

log = logging.getLogger("propdata.accounts")

RESET_VALID = 3_600.0
VERIFY_VALID = 7 * 86_400.0
MAX_ACTIVE_KEYS = 10
LOGIN_WINDOW = 900.0
LOGIN_PER_EMAIL = 5
LOGIN_PER_CLIENT = 20
SIGNUP_WINDOW = 3_600.0
SIGNUPS_PER_CLIENT = 10
MAILS_PER_EMAIL = 5
"""Reset and verification mails to one address an hour: no one fills an inbox through us."""
KEY_NAME_MAX = 64


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def normal_email(raw: str) -> str:
    """The address as stored: checked for syntax (no DNS lookup) and lower-cased whole."""
    text = raw.strip()
    if not text:
        raise InvalidField("email", "Enter your email address.")
    if len(text) > 254:
        raise InvalidField("email", "That email address is too long.")
    try:
        checked = validate_email(text, check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidField("email", f"That is not an email address we can use: {exc}") from exc
    return checked.normalized.lower()


def key_name(raw: str, fallback: str) -> str:
    name = " ".join(raw.split())
    if not name:
        return fallback
    if len(name) > KEY_NAME_MAX:
        raise InvalidField("name", f"Use at most {KEY_NAME_MAX} characters for the name.")
    if not name.isprintable():
        raise InvalidField("name", "Use letters, digits, spaces and punctuation only.")
    return name


def _new_key_refusal(keys: list[ApiKey], verified: bool) -> InvalidField | None:
    """Why an account holding `keys` may not create one more (a new key is Free), or None."""
    active = [key for key in keys if key.status == "active"]
    if len(active) >= MAX_ACTIVE_KEYS:
        return InvalidField(
            "name", f"An account holds at most {MAX_ACTIVE_KEYS} active keys; revoke one first."
        )
    free = next((key for key in active if key.plan == FREE.name), None)
    if free is not None:
        first = "" if verified else " (confirm your email address first: a paid plan needs it)"
        return InvalidField(
            "name",
            f"An account holds at most one active Free key, and “{free.name}” is yours: a new"
            f" key starts on the Free plan, so move “{free.name}” to a paid plan{first}, or"
            " revoke it, to create another.",
        )
    return None


class AccountService:
    def __init__(
        self,
        db: Database,
        keys: KeyService,
        limiter: Limiter,
        mailer: Mailer,
        clock: Clock = time.time,
        session_lifetime: float = SESSION_LIFETIME,
    ) -> None:
        self.db = db
        self.repo = AccountRepository(db)
        self.key_repo = KeyRepository(db)
        self.keys = keys
        self.mailer = mailer
        self.clock = clock
        self.sessions = Sessions(self.repo, clock, session_lifetime)
        self.throttle = Throttle(limiter, self.sessions.secret)
        self._audit_us = 0

    # -- sessions, their flash and form tokens (kept by `Sessions`)
    async def form_token(self, bound_to: str) -> str:
        """The token every POST must carry in `csrf_token` (see `Sessions.form_token`)."""
        return await self.sessions.form_token(bound_to)

    async def form_token_ok(self, sent: str, bound_to: str) -> bool:
        """Whether `sent` is the token of `bound_to` (a session, or with none a form cookie)."""
        return await self.sessions.form_token_ok(sent, bound_to)

    async def session(self, token: str | None) -> Account | None:
        """The account signed in with this cookie token, if the session lives."""
        return await self.sessions.account(token)

    async def log_out(self, token: str) -> None:
        """End the session of this cookie token."""
        await self.sessions.end(token)

    async def set_flash(self, token: str, flash: Flash) -> None:
        """Keep `flash` for the session's next page."""
        await self.sessions.set_flash(token, flash)

    async def take_flash(self, token: str) -> Flash:
        """What the session's page shows once (empty when there is nothing)."""
        return await self.sessions.take_flash(token)

    # -- sign-up, log-in
    async def sign_up(
        self, raw_email: str, password: str, client: str, base: str
    ) -> tuple[SignedIn, str]:
        """A new account, signed in, with one Free key: returns the session and the key.

        Every try, refused or not, takes one of the client address's sign-ups first: so
        probing which addresses are registered is limited like signing up, and a refused
        try costs no password hash."""
        await self.throttle.allow(
            f"signup:client:{client}",
            SIGNUPS_PER_CLIENT,
            SIGNUP_WINDOW,
            "sign-ups from your network",
        )
        email = normal_email(raw_email)
        wrong = problem(password, email)
        if wrong:
            raise InvalidField("password", wrong)
        if await self.repo.by_email(email) is not None:
            raise EmailTaken(
                "An account with that email address exists already; log in instead.",
                parameter="email",
            )
        password_hash = await hash_password(password)
        now = self.clock()
        account = Account(
            id="acct_" + secrets.token_hex(8), email=email, password_hash=password_hash,
            status="active", is_admin=False, email_verified_at=None, created_at=_iso(now),
        )  # fmt: skip
        async with self.db.transaction():
            if await self.repo.by_email(email) is not None:
                raise EmailTaken(
                    "An account with that email address exists already; log in instead.",
                    parameter="email",
                )
            try:
                await self.repo.insert(account)
            except Exception as exc:  # two sign-ups raced for the address: the index decided
                raise EmailTaken(
                    "An account with that email address exists already; log in instead.",
                    parameter="email",
                ) from exc
            await self._audit(email, account.id, None, "account.created", None, email, client)
            _, secret = await self._new_key(account, "Default key", email, client)
            signed = await self.sessions.start(account)
        await self.send_verification(account, base, limited=False)
        return signed, secret

    async def log_in(self, raw_email: str, password: str, client: str) -> SignedIn:
        """Sign in. Each try takes one of the email's and one of the client's failed-log-in
        allowances before the password is checked, and a success gives them back: so tries
        sent in parallel can never check more passwords than the limits allow."""
        email = raw_email.strip().lower()
        if not email or not password:
            field = "email" if not email else "password"
            raise InvalidField(field, "Enter your email address and your password.")
        guards = [
            (f"login:email:{email}", LOGIN_PER_EMAIL, "failed log-ins for this account"),
            (f"login:client:{client}", LOGIN_PER_CLIENT, "failed log-ins from your network"),
        ]
        taken: list[str] = []
        try:
            for name, limit, what in guards:
                await self.throttle.allow(name, limit, LOGIN_WINDOW, what)
                taken.append(name)
        except TooManyAttempts:
            await self.throttle.forget(taken)
            raise
        account = await self.repo.by_email(email)
        ok = await verify_password(account.password_hash if account else None, password[:1024])
        if account is None or not ok or account.status != "active":
            raise InvalidCredentials(
                "That email address and password do not match an account.", parameter="email"
            )
        await self.throttle.forget(taken)
        return await self.sessions.start(account)

    # -- mailed links
    async def send_verification(self, account: Account, base: str, *, limited: bool = True) -> None:
        """Mail a link that confirms the address; `base` is the service's public address."""
        if account.verified:
            return
        if limited:
            await self.throttle.allow(
                f"mail:{account.email}", MAILS_PER_EMAIL, 3_600.0, "mails to this address"
            )
        token = crypto.new_token()
        await self.repo.drop_tokens(account.id, "verify")
        await self.repo.insert_token(
            crypto.token_hash(token), account.id, "verify", self.clock() + VERIFY_VALID
        )
        await self.mailer.send(
            account.email, "Confirm your email address for propdata",
            "Confirm your email address by opening this link (valid for 7 days):\n\n"
            f"{base}/verify/{token}\n\n"
            "Confirming it lets you choose the Developer and Pro plans.\n"
            "If you did not sign up for propdata, ignore this message.\n",
        )  # fmt: skip

    async def verify(self, token: str) -> Account | None:
        account_id = await self.repo.take_token(crypto.token_hash(token), "verify", self.clock())
        if account_id is None:
            return None
        await self.repo.set_verified(account_id, _iso(self.clock()))
        return await self.repo.by_id(account_id)

    async def forgot(self, raw_email: str, client: str) -> str:
        """Check a reset request and take one of the client's allowances: the address to
        pass to `mail_reset`, which the caller runs after answering, so the answer takes
        the same time whether or not the address has an account."""
        email = normal_email(raw_email)
        await self.throttle.allow(
            f"forgot:client:{client}",
            LOGIN_PER_CLIENT,
            LOGIN_WINDOW,
            "reset requests from your network",
        )
        return email

    async def mail_reset(self, email: str, base: str) -> None:
        """Mail a reset link when the account exists (valid for one hour from now)."""
        account = await self.repo.by_email(email)
        if account is None or account.status != "active":
            return
        attempt = await self.throttle.attempt(
            f"mail:{email}", MAILS_PER_EMAIL, 3_600.0, record=True
        )
        if not attempt.allowed:
            return  # quietly: no one fills an inbox through us
        token = crypto.new_token()
        await self.repo.drop_tokens(account.id, "reset")
        await self.repo.insert_token(
            crypto.token_hash(token), account.id, "reset", self.clock() + RESET_VALID
        )
        await self.mailer.send(
            email, "Reset your propdata password",
            "Someone (we hope you) asked to reset the password of this propdata account.\n"
            "Choose a new password by opening this link within one hour:\n\n"
            f"{base}/reset/{token}\n\n"
            "If it was not you, ignore this message: your password stays as it is.\n",
        )  # fmt: skip

    async def reset_link_live(self, token: str) -> bool:
        return await self.repo.token_live(crypto.token_hash(token), "reset", self.clock())

    async def reset(self, token: str, password: str, client: str) -> SignedIn:
        """Set a new password from a mailed link; every session of the account ends and the
        person is signed in afresh. When the address was never confirmed, whoever signed up
        with it may not have been its owner: the keys made before the reset are revoked."""
        dead = InvalidField("token", "This reset link has expired or was used; ask for a new one.")
        token_hash = crypto.token_hash(token)
        account_id = await self.repo.token_account(token_hash, "reset", self.clock())
        account = await self.repo.by_id(account_id) if account_id else None
        if account is None or account.status != "active":
            raise dead
        # A refused password leaves the link as it was: live until an hour after it was sent.
        wrong = problem(password, account.email)
        if wrong:
            raise InvalidField("password", wrong)
        if await self.repo.take_token(token_hash, "reset", self.clock()) != account.id:
            raise dead  # used by a request that came in meanwhile
        password_hash = await hash_password(password)
        async with self.db.transaction():
            await self.repo.set_password(account.id, password_hash)
            await self.repo.end_sessions(account.id)
            # Whoever could open the mail owns the address: a reset also verifies it.
            await self.repo.set_verified(account.id, _iso(self.clock()))
            await self._audit(account.email, account.id, None, "password.reset", None, None, client)
            revoked = 0
            if not account.verified:
                for key in await self.key_repo.of_account(account.id):
                    if key.status == "active":
                        await self.keys.revoke(key.id)
                        await self._audit(account.email, account.id, key.id, "key.revoked",
                                          "active", "revoked", client)  # fmt: skip
                        revoked += 1
            signed = await self.sessions.start(account)
        if revoked:
            await self.set_flash(signed.token, Flash(notice=(
                f"Your password is changed. The address had not been confirmed, so the"
                f" {revoked} key{'s' if revoked > 1 else ''} made before the reset"
                f" {'were' if revoked > 1 else 'was'} revoked: whoever signed up with it may not"
                " have been you. Create a new key below."
            )))  # fmt: skip
        return signed

    # -- keys held by an account
    async def keys_of(self, account: Account) -> list[ApiKey]:
        return await self.key_repo.of_account(account.id)

    async def _own_key(self, account: Account, key_id: str) -> ApiKey:
        key = await self.key_repo.by_id(key_id)
        if key is None or key.account_id != account.id:
            raise NotFound("No such key on this account.")
        return key

    async def new_key_refusal(self, account: Account) -> InvalidField | None:
        """Why the account may not create a key now (what `create_key` would answer), naming
        what lets it; None when it may."""
        keys = await self.key_repo.of_account(account.id)
        return _new_key_refusal(keys, (await self._fresh(account)).verified)

    async def _new_key(
        self, account: Account, name: str, actor: str, client: str
    ) -> tuple[ApiKey, str]:
        keys = await self.key_repo.of_account(account.id)
        refusal = _new_key_refusal(keys, account.verified)
        if refusal is not None:
            raise refusal
        key, secret = await self.keys.create(FREE.name, name, CustomLimits(), account_id=account.id)
        await self._audit(actor, account.id, key.id, "key.created", None, FREE.name, client)
        return key, secret

    async def create_key(self, account: Account, raw_name: str, client: str) -> tuple[ApiKey, str]:
        async with self.db.transaction():
            count = len(await self.key_repo.of_account(account.id))
            name = key_name(raw_name, f"Key {count + 1}")
            return await self._new_key(account, name, account.email, client)

    async def plan_offer(self, account: Account, key_id: str, plan: str) -> tuple[ApiKey, Plan]:
        """The key and the plan a person may move it to (what the confirmation page shows);
        refused as `change_plan` would refuse it."""
        key = await self._own_key(account, key_id)
        await self._check_choice(account, key, plan)
        return key, BY_NAME[plan]

    async def _check_choice(self, account: Account, key: ApiKey, plan: str) -> None:
        if plan not in SELF_SERVE:
            raise InvalidField(
                "plan", f"Choose {choice(SELF_SERVE, titles=True)}; Enterprise is arranged with us."
            )
        if key.status != "active":
            raise InvalidField("plan", "This key is revoked; create a new key instead.")
        if not BY_NAME[key.plan].self_serve:
            raise InvalidField("plan", "Enterprise keys are changed by our operators; write to us.")
        if plan != key.plan and plan != FREE.name and not (await self._fresh(account)).verified:
            raise InvalidField(
                "plan",
                "Confirm your email address first (see the link we mailed you) to choose a paid plan.",
            )

    async def change_plan(self, account: Account, key_id: str, plan: str, client: str) -> ApiKey:
        async with self.db.transaction():
            key = await self._own_key(account, key_id)
            await self._check_choice(account, key, plan)
            if plan == key.plan:
                return key
            if plan == FREE.name:
                others = [k for k in await self.key_repo.of_account(account.id)
                          if k.status == "active" and k.plan == FREE.name and k.id != key.id]  # fmt: skip
                if others:
                    raise InvalidField("plan", "An account holds at most one active Free key.")
            changed = await self.keys.set_plan(key.id, plan, CustomLimits())
            await self._audit(account.email, account.id, key.id, "key.plan", key.plan, plan, client)
        return changed

    async def manage(self, key: ApiKey) -> None:
        """Count a portal button that manages the account's saved searches or webhooks in the
        owner's 60 management requests a minute (the API's count too); 429 past them."""
        await managed(self.throttle.limiter, key)

    async def revoke(self, account: Account, key_id: str, client: str) -> ApiKey:
        async with self.db.transaction():
            key = await self._own_key(account, key_id)
            if key.status == "revoked":
                return key
            revoked = await self.keys.revoke(key.id)
            await self._audit(
                account.email, account.id, key.id, "key.revoked", "active", "revoked", client
            )
        return revoked

    async def billing(self, account: Account) -> list[billing.Line]:
        """The account's statement for the current and the last month."""
        keys = await self.key_repo.of_account(account.id)
        history = await self.repo.key_history(account.id)
        return billing.statement(keys, history, self.clock())

    async def audit_of(self, account: Account | None, limit: int = 50) -> list[AuditEntry]:
        return await self.repo.audit_of(account.id if account else None, limit)

    async def _fresh(self, account: Account) -> Account:
        found = await self.repo.by_id(account.id)
        return found or account

    # -- operators
    async def all_accounts(self) -> list[tuple[Account, list[ApiKey]]]:
        keys = await self.key_repo.all()
        held: dict[str | None, list[ApiKey]] = {}
        for key in keys:
            held.setdefault(key.account_id, []).append(key)
        return [(account, held.get(account.id, [])) for account in await self.repo.all()]

    async def unattached_keys(self) -> list[ApiKey]:
        return [key for key in await self.key_repo.all() if key.account_id is None]

    async def operator_plan(
        self, actor: Account, key_id: str, plan: str, limits: CustomLimits, client: str
    ) -> ApiKey:
        """An operator's plan change: any plan, and custom limits for Enterprise."""
        if not actor.is_admin:
            raise Forbidden("Operators only.")
        if plan not in BY_NAME:
            raise InvalidField("plan", f"Choose {choice(NAMES, titles=True)}.")
        if not BY_NAME[plan].customisable and limits.any():
            raise InvalidField(
                "perMinute", "Custom limits are for the Enterprise plan only; leave them empty."
            )
        async with self.db.transaction():
            key = await self.key_repo.by_id(key_id)
            if key is None:
                raise NotFound("No such key.")
            return await self._plan_audited(actor.email, key, plan, limits, client)

    async def _plan_audited(
        self, actor: str, key: ApiKey, plan: str, limits: CustomLimits, client: str
    ) -> ApiKey:
        changed = await self.keys.set_plan(key.id, plan, limits)
        to = plan if not limits.any() else f"{plan} {_limits_text(limits)}"
        await self._audit(actor, key.account_id, key.id, "key.plan", key.plan, to, client)
        return changed

    async def command_plan(
        self, id_or_key: str, plan: str, limits: CustomLimits, actor: str = "cli"
    ) -> ApiKey:
        """The command line's plan change (any plan, any key), written to the audit log."""
        async with self.db.transaction():
            key = await self.keys.find(id_or_key)
            return await self._plan_audited(actor, key, plan, limits, "cli")

    async def command_revoke(self, id_or_key: str, actor: str = "cli") -> ApiKey:
        """The command line's revocation, written to the audit log."""
        async with self.db.transaction():
            key = await self.keys.find(id_or_key)
            revoked = await self.keys.revoke(key.id)
            if key.status != "revoked":
                await self._audit(actor, key.account_id, key.id, "key.revoked", "active",
                                  "revoked", "cli")  # fmt: skip
        return revoked

    async def disable(self, actor: str, raw_email: str, client: str) -> Account:
        """Disable an account: its keys answer 401 revoked_api_key and its sessions end."""
        email = normal_email(raw_email)
        async with self.db.transaction():
            account = await self.repo.by_email(email)
            if account is None:
                raise InvalidField("email", f"No account has the address {email}.")
            await self.repo.set_status(account.id, "disabled")
            await self.repo.end_sessions(account.id)
            await self._audit(
                actor, account.id, None, "account.disabled", account.status, "disabled", client
            )
        return await self._fresh(account)

    async def create_account(
        self, raw_email: str, password: str, *, admin: bool, actor: str
    ) -> Account:
        """An operator's account creation (the command line): the address counts as verified."""
        email = normal_email(raw_email)
        wrong = problem(password, email)
        if wrong:
            raise InvalidField("password", wrong)
        now = self.clock()
        account = Account(
            id="acct_" + secrets.token_hex(8), email=email, password_hash=await hash_password(password),
            status="active", is_admin=admin, email_verified_at=_iso(now), created_at=_iso(now),
        )  # fmt: skip
        async with self.db.transaction():
            if await self.repo.by_email(email) is not None:
                raise EmailTaken(
                    f"An account with the address {email} exists already.", parameter="email"
                )
            await self.repo.insert(account)
            await self._audit(actor, account.id, None, "account.created", None, email, "cli")
        return account

    async def set_admin(self, raw_email: str, actor: str) -> Account:
        email = normal_email(raw_email)
        async with self.db.transaction():
            account = await self.repo.by_email(email)
            if account is None:
                raise InvalidField("email", f"No account has the address {email}.")
            await self.repo.set_admin(account.id, True)
            await self._audit(actor, account.id, None, "account.admin", "no", "yes", "cli")
        return await self._fresh(account)

    async def by_email(self, raw_email: str) -> Account | None:
        return await self.repo.by_email(normal_email(raw_email))

    async def create_key_for(
        self, raw_email: str, plan: str, name: str | None, limits: CustomLimits, actor: str
    ) -> tuple[ApiKey, str]:
        """An operator's key for an account (any plan; the account's key limits do not bind
        an operator, who may, say, give an Enterprise customer several keys)."""
        account = await self.repo.by_email(normal_email(raw_email))
        if account is None:
            raise InvalidField("account", f"No account has the address {raw_email.strip()}.")
        async with self.db.transaction():
            key, secret = await self.keys.create(plan, name, limits, account_id=account.id)
            await self._audit(actor, account.id, key.id, "key.created", None, plan, "cli")
        return key, secret

    async def _audit(
        self, actor: str, account_id: str | None, key_id: str | None, action: str,
        before: str | None, after: str | None, client: str | None,
    ) -> None:  # fmt: skip
        now = self.clock()
        # Sorts by time, and within a process by order even when the clock stands still.
        self._audit_us = max(int(now * 1_000_000), self._audit_us + 1)
        entry_id = f"{self._audit_us:016x}-{secrets.token_hex(4)}"
        await self.repo.audit(
            AuditEntry(
                entry_id, _iso(now), actor, account_id, key_id, action, before, after, client
            )
        )


def _limits_text(limits: CustomLimits) -> str:
    parts = []
    if limits.per_minute is not None:
        parts.append(f"{limits.per_minute}/min")
    parts.append(f"{limits.daily}/day" if limits.daily is not None else "unlimited/day")
    if limits.default_page_size is not None or limits.max_page_size is not None:
        parts.append(f"pages {limits.default_page_size or '-'}/{limits.max_page_size or '-'}")
    if limits.saved_searches is not None:
        parts.append(f"{limits.saved_searches} saved searches")
    if limits.webhook_endpoints is not None:
        parts.append(f"{limits.webhook_endpoints} webhook endpoints")
    if limits.events_per_day is not None:
        parts.append(f"{limits.events_per_day} events/day")
    return ", ".join(parts)

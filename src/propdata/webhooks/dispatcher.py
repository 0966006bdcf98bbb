"""The webhook dispatcher: fans events out to endpoints and attempts their deliveries.

Fan-out: an enabled endpoint whose owner has events past its `cursor_seq` is claimed (on
PostgreSQL `FOR UPDATE SKIP LOCKED`, so any number of dispatchers share the work), and the
events that pass its filters become pending deliveries while the cursor moves past them, in
one transaction: each event reaches each endpoint once. A disabled endpoint's cursor stays
where it is, so what arrives meanwhile is delivered, oldest first, once it is enabled.

Delivery: due deliveries are claimed with a lease (`claimed_until`), POSTed with the Standard
Webhooks headers (`standardwebhooks` signs them) to the address `addresses.Gate` checked, and
their outcome written back; a dispatcher that dies mid-attempt loses its lease and another
(or itself, restarted) attempts the delivery again: at least once, across crashes.

    dispatcher = Dispatcher(accounts_db, Gate(), wakeups, mailer)
    task = asyncio.create_task(dispatcher.run())     # until cancelled
    await dispatcher.run_once()                      # tests: everything due, now
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import ssl
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from standardwebhooks import Webhook

from propdata.accounts.keys import KeyService
from propdata.events.produce import stopped_owners
from propdata.events.repository import EventRepository
from propdata.kit.db import Database, StoreUnavailable
from propdata.kit.flock import try_lock
from propdata.kit.mail import Mailer
from propdata.kit.metrics import WEBHOOK_BACKLOG, WEBHOOK_DELIVERIES, WEBHOOK_LAG
from propdata.kit.wakeup import POLL, Wakeups
from propdata.webhooks.addresses import Gate, IPAddress, Refused, Target, Unresolvable, parse
from propdata.webhooks.repository import WebhookRepository
from propdata.webhooks.retries import Retries, retry_after
from propdata.webhooks.schemas import MAX_PENDING, Due, Outcome, iso, passes

log = logging.getLogger("propdata.webhooks")

TOTAL_TIMEOUT = 15.0
"""Seconds an attempt may take in all (contract: a 2xx within 15 s)."""
CONNECT_TIMEOUT = 3.0
LEASE = 60.0
"""Seconds a claimed delivery is this dispatcher's: longer than an attempt can take."""
FAILING_FOR = 5 * 86_400.0
"""An endpoint failing this long without a success is disabled (`failing`)."""
FINISHED_KEPT = 30 * 86_400.0
"""Finished deliveries are listed this long."""
FAN_OUT_PAGE = 500
"""Events read per endpoint per fan-out pass."""
SWEEP_EVERY = 1.0
"""Seconds between two looks for the pending deliveries of stopped owners (cancelled)."""
_RESPONSE_READ = 65_536
"""Bytes of a receiver's answer read (and thrown away) so its connection can be kept."""


def _unix(text: str) -> float | None:
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class _Signers:
    """`standardwebhooks.Webhook` per secret (decoding a secret costs more than signing)."""

    def __init__(self, size: int = 1024) -> None:
        self._held: OrderedDict[str, Webhook] = OrderedDict()
        self._size = size

    def get(self, secret: str) -> Webhook:
        signer = self._held.get(secret)
        if signer is None:
            signer = self._held[secret] = Webhook(secret)
            if len(self._held) > self._size:
                self._held.popitem(last=False)
        else:
            self._held.move_to_end(secret)
        return signer


def signature(signers: _Signers, due: Due, body: str, at: dt.datetime, now: float) -> str:
    """`webhook-signature`: the current secret's, and during a rotation's grace the previous
    one's beside it."""
    secrets = [due.secret]
    if due.old_secret and due.old_secret_until is not None and now < due.old_secret_until:
        secrets.append(due.old_secret)
    return " ".join(signers.get(s).sign(due.event_id, at, body) for s in secrets)


TransportFactory = Callable[[Target], httpx.AsyncBaseTransport]


PER_OWNER = 16
"""Attempts of one owner's deliveries a dispatcher has under way at most: a receiver (or a
name) that never answers holds that many, and the other owners' deliveries go on."""
PER_RECEIVER = 8
"""Connections (and so attempts at once) to one receiver's name and address; more attempts
wait their turn before reaching the pool, whose own queue is costly to keep long."""


def default_transport(target: Target) -> httpx.AsyncBaseTransport:
    return httpx.AsyncHTTPTransport(
        retries=0, verify=ssl.create_default_context(), http2=False,
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
    )  # fmt: skip


class _Lanes:
    """The connections to one receiver's name and address: up to PER_RECEIVER transports of
    one connection each, lent to one attempt at a time, the most recently used first.

    Why not one pool of PER_RECEIVER connections: httpcore's pool looks at every connection it
    holds (a readability check of each socket) twice per request, a tenth of a delivery's CPU
    with eight. A pool of one looks at one."""

    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._make = make
        self._made: list[httpx.AsyncBaseTransport] = []
        self._free: list[httpx.AsyncBaseTransport] = []
        self._turns = asyncio.Semaphore(PER_RECEIVER)

    @contextlib.asynccontextmanager
    async def lend(self) -> AsyncIterator[httpx.AsyncBaseTransport]:
        async with self._turns:
            if self._free:
                lane = self._free.pop()
            else:
                lane = self._make()
                self._made.append(lane)
            try:
                yield lane
            finally:
                self._free.append(lane)

    async def aclose(self) -> None:
        for lane in self._made:
            with contextlib.suppress(Exception):
                await lane.aclose()


class Sender:
    """POSTs to the address that was checked: the URL's host is replaced by the address for
    the connection, while the Host header and TLS (SNI and the certificate's name) keep the
    URL's name. Connections are kept per name and address, never shared between names."""

    def __init__(self, transport: TransportFactory = default_transport, pools: int = 256) -> None:
        self._make = transport
        self._pools: OrderedDict[tuple[str, str, int, str], _Lanes] = OrderedDict()
        self._size = pools

    def _lanes(self, target: Target, address: IPAddress) -> _Lanes:
        key = (target.scheme, target.host, target.port, str(address))
        lanes = self._pools.get(key)
        if lanes is None:
            lanes = self._pools[key] = _Lanes(lambda: self._make(target))
            if len(self._pools) > self._size:
                _, old = self._pools.popitem(last=False)
                asyncio.get_running_loop().create_task(old.aclose())
        else:
            self._pools.move_to_end(key)
        return lanes

    async def post(
        self, target: Target, address: IPAddress, body: bytes, headers: Mapping[str, str]
    ) -> tuple[int, str | None]:
        """The answer's status and Retry-After; raises httpx's errors or TimeoutError."""
        url = httpx.URL(target.url)
        extensions: dict[str, Any] = {
            "timeout": {"connect": CONNECT_TIMEOUT, "read": TOTAL_TIMEOUT,
                        "write": TOTAL_TIMEOUT, "pool": TOTAL_TIMEOUT},
        }  # fmt: skip
        if target.literal is None and target.scheme == "https":
            extensions["sni_hostname"] = target.host
        request = httpx.Request(
            "POST",
            url.copy_with(host=str(address)),
            headers={**headers, "host": url.netloc.decode("ascii")},
            content=body,
            extensions=extensions,
        )
        async with self._lanes(target, address).lend() as lane, asyncio.timeout(TOTAL_TIMEOUT):
            response = await lane.handle_async_request(request)
            try:
                read = 0
                async for chunk in response.aiter_raw():
                    read += len(chunk)
                    if read > _RESPONSE_READ:
                        break
            finally:
                await response.aclose()
        return response.status_code, response.headers.get("retry-after")

    async def close(self) -> None:
        pools, self._pools = list(self._pools.values()), OrderedDict()
        for lanes in pools:
            await lanes.aclose()


def _tls(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def classify(exc: BaseException) -> str:
    """The contract's `error` for an attempt that got no answer."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return "timeout"
    if _tls(exc):
        return "tls"
    return "connection"


Owners = Callable[[str], Awaitable[str | None]]
"""An owner to the address its mail goes to (None: nobody to mail)."""


@dataclass
class Dispatcher:
    db: Database
    gate: Gate
    wakeups: Wakeups
    mailer: Mailer | None = None
    mail_to: Owners | None = None
    clock: Callable[[], float] = time.time
    retries: Retries = field(default_factory=Retries)
    sender: Sender | None = None
    lease: float = LEASE
    batch: int = 200
    concurrency: int = 256

    def __post_init__(self) -> None:
        self.repo = WebhookRepository(self.db)
        self.events = EventRepository(self.db)
        self.keys = KeyService(self.db)
        self.signers = _Signers()
        self.sender = self.sender or Sender()
        self._inflight: set[asyncio.Task[None]] = set()
        self._done: list[tuple[Due, Outcome]] = []
        self._progress = asyncio.Event()
        self._gauged = 0.0
        self._pruned = 0.0
        self._swept = 0.0
        self._owners: dict[str, int] = {}
        """Attempts under way, by owner."""

    async def stopped(self, owners: set[str]) -> set[str]:
        """Those of the owners that stopped (a disabled account, a revoked key without one):
        nothing more of theirs is delivered."""
        return await stopped_owners(self.keys, owners) if owners else set()

    async def cancel_stopped(self) -> int:
        """Fail for good (error `owner`) every pending delivery of a stopped owner; how many."""
        owners = await self.stopped(set(await self.repo.owners_waiting()))
        if not owners:
            return 0
        now = self.clock()
        async with self.db.transaction():
            return await self.repo.cancel(
                await self.repo.endpoints_of(sorted(owners)), now, iso(now)
            )

    # Fan-out

    async def fan_out(self) -> int:
        """Turn events past the cursors of enabled endpoints into deliveries; how many."""
        made = 0
        # Looked for without a transaction first: an idle dispatcher writes nothing (each
        # commit to the accounts store has every worker read its keys version once more).
        while await self.repo.fan_out_waiting(MAX_PENDING):
            async with self.db.transaction():
                endpoints = await self.repo.claim_fan_out(50, MAX_PENDING)
                stopped = await self.stopped({e.owner for e, _ in endpoints})
                rows: list[tuple[str, int, str, str, float]] = []
                now = self.clock()
                for endpoint, pending in endpoints:
                    events = await self.events.logged_after(
                        endpoint.owner,
                        endpoint.cursor_seq,
                        min(FAN_OUT_PAGE, MAX_PENDING - pending),
                    )
                    if endpoint.owner not in stopped:  # a stopped owner's pass by, undelivered
                        rows += [
                            (endpoint.id, event.seq, event.id, event.type, now)
                            for event in events
                            if passes(endpoint, event.type, event.search_id)
                        ]
                    if events:
                        await self.repo.move_cursor(endpoint.id, events[-1].seq)
                await self.repo.insert_deliveries(rows)
            made += len(rows)
            if not endpoints:
                break
        return made

    # Attempts

    async def attempt(self, due: Due) -> Outcome:
        """POST one delivery and say what came of it (never raises but for cancellation)."""
        now = self.clock()
        number = due.attempt + 1
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        wait_asked: float | None = None
        if due.body is None:  # the event is no longer kept: nothing to deliver
            return Outcome(due.id, due.endpoint_id, "failed", number, None, None, None, 0,
                           iso(now), False, now)  # fmt: skip
        target: Target | None = None
        try:
            target = parse(due.url)
            addresses = await self.gate.resolve(target, due.owner)
            body = due.body
            at = dt.datetime.fromtimestamp(int(now), dt.UTC)
            headers = {
                "webhook-id": due.event_id,
                "webhook-timestamp": str(int(now)),
                "webhook-signature": signature(self.signers, due, body, at, now),
                "content-type": "application/json",
                "user-agent": "propdata-webhooks",
            }
            assert self.sender is not None
            status, asked = await self.sender.post(target, addresses[0], body.encode(), headers)
            if status in (429, 503):
                wait_asked = retry_after(asked, now)
        except Refused:
            error = "blocked_address"
        except Unresolvable:
            error = "connection"
        except (httpx.HTTPError, TimeoutError, OSError, ssl.SSLError) as exc:
            error = classify(exc)
        duration = int((time.monotonic() - started) * 1000)
        if status is not None and 200 <= status < 300:
            return Outcome(due.id, due.endpoint_id, "succeeded", number, None, status, None,
                           duration, iso(now), False, now)  # fmt: skip
        gone = status == 410
        if status is not None:
            error = "redirect" if 300 <= status < 400 else "http_status"
        delay = None if gone else self.retries.delay(number, wait_asked)
        state, next_at = ("failed", None) if delay is None else ("pending", now + delay)
        # Where it went is the URL's host alone: a path or query may hold a receiver's token.
        log.warning(
            "webhook delivery failed: endpoint=%s event=%s attempt=%d error=%s status=%s"
            " host=%s", due.endpoint_id, due.event_id, number, error, status,
            target.host if target is not None else "-",
            extra={"endpoint_id": due.endpoint_id, "event_id": due.event_id, "attempt": number,
                   "error": error, "response_status": status,
                   "host": target.host if target is not None else None},
        )  # fmt: skip
        return Outcome(due.id, due.endpoint_id, state, number, next_at, status, error, duration,
                       iso(now), gone, now)  # fmt: skip

    async def _attempt_into(self, due: Due) -> None:
        try:
            outcome = await self.attempt(due)
        except Exception:  # a bug: the lease runs out and the delivery is tried again
            log.exception("webhook delivery %s failed unexpectedly", due.id)
            return
        self._done.append((due, outcome))
        self._progress.set()

    async def claim(self, limit: int) -> list[Due]:
        """Up to `limit` deliveries due now, at most PER_OWNER of one owner under way; those
        of a stopped owner are cancelled instead."""
        now = self.clock()
        if not await self.repo.any_due(now):
            return []
        room = {owner: PER_OWNER - n for owner, n in self._owners.items()}
        while True:
            async with self.db.transaction():
                claimed = await self.repo.claim(now, self.lease, limit, room, PER_OWNER)
            stopped = await self.stopped({due.owner for due in claimed})
            if not stopped:
                return claimed
            await self.cancel_stopped()  # theirs all go: claim again without them
            kept = [due for due in claimed if due.owner not in stopped]
            if kept:
                return kept

    async def flush(self) -> int:
        """Write the outcomes of finished attempts; disable endpoints gone or failing."""
        done, self._done = self._done, []
        if not done:
            return 0
        now = self.clock()
        outcomes = [outcome for _, outcome in done]
        ok = sorted({o.endpoint_id for o in outcomes if o.state == "succeeded"})
        bad = sorted({o.endpoint_id for o in outcomes if o.state != "succeeded"} - set(ok))
        disabled: list[str] = []
        try:
            async with self.db.transaction():
                await self.repo.finish(done)
                await self.repo.succeeded(ok)
                await self.repo.failed(bad, now)
                for endpoint_id in sorted({o.endpoint_id for o in outcomes if o.gone}):
                    await self.repo.disable(endpoint_id, "gone", None)
                for endpoint_id in bad:
                    if await self.repo.disable(endpoint_id, "failing", now - FAILING_FOR):
                        disabled.append(endpoint_id)
        except BaseException:
            self._done[:0] = done  # written with the next flush
            raise
        for due, outcome in done:
            WEBHOOK_DELIVERIES.labels(
                "succeeded" if outcome.state == "succeeded" else "failed"
            ).inc()
            if outcome.attempt == 1:
                produced = _unix(due.event_at) if due.event_at else None
                WEBHOOK_LAG.observe(max(0.0, now - (produced or due.made_at)))
        for due, _ in done:
            if due.endpoint_id in disabled:
                disabled.remove(due.endpoint_id)
                await self._mail_failing(due)
        return len(done)

    async def _mail_failing(self, due: Due) -> None:
        if self.mailer is None or self.mail_to is None:
            return
        try:
            to = await self.mail_to(due.owner)
            if to is None:
                return
            await self.mailer.send(
                to,
                "Webhook endpoint disabled: 5 days of failed deliveries",
                f"Deliveries to your webhook endpoint {due.endpoint_id} ({due.url}) have failed"
                " for 5 days without a success, so it has been disabled.\n\nEvents that"
                " arrive while it is disabled are kept for 30 days (at most 50,000) and"
                " delivered, oldest first, once you enable it again: PATCH"
                f' /v1/webhooks/{due.endpoint_id} with {{"status": "enabled"}}.\n',
            )
        except Exception:
            log.exception("could not mail the owner of webhook endpoint %s", due.endpoint_id)

    async def close(self) -> None:
        """Close the connections kept open to receivers."""
        if self.sender is not None:
            await self.sender.close()

    async def run_once(self) -> int:
        """Fan out, then attempt every delivery due now and write the outcomes; the attempts
        made (tests, and a command that delivers without a server)."""
        await self.fan_out()
        attempts = 0
        while True:
            claimed = await self.claim(self.batch)
            if not claimed:
                return attempts
            await asyncio.gather(*(self._attempt_into(due) for due in claimed))
            attempts += await self.flush()

    def _finished(self, owner: str) -> Callable[[asyncio.Task[None]], None]:
        def done(task: asyncio.Task[None]) -> None:
            self._inflight.discard(task)
            left = self._owners.get(owner, 1) - 1
            if left > 0:
                self._owners[owner] = left
            else:
                self._owners.pop(owner, None)

        return done

    async def _housekeeping(self) -> None:
        now = time.monotonic()
        if now - self._swept >= SWEEP_EVERY:
            self._swept = now
            await self.cancel_stopped()
        if now - self._gauged >= 10:
            self._gauged = now
            WEBHOOK_BACKLOG.set(await self.repo.backlog())
        if now - self._pruned >= 3600:
            self._pruned = now
            async with self.db.transaction():
                await self.repo.prune(self.clock() - FINISHED_KEPT)

    async def run(self) -> None:
        """Deliver until cancelled: woken by new events, looking again at least every second."""
        try:
            while True:
                try:
                    made = await self.fan_out()
                    free = self.concurrency - len(self._inflight)
                    claimed = await self.claim(min(free, self.batch)) if free > 0 else []
                    for due in claimed:
                        task = asyncio.create_task(self._attempt_into(due))
                        self._inflight.add(task)
                        self._owners[due.owner] = self._owners.get(due.owner, 0) + 1
                        task.add_done_callback(self._finished(due.owner))
                    await self.flush()
                    await self._housekeeping()
                except (StoreUnavailable, OSError) as exc:
                    log.warning("webhook dispatcher: store unavailable (%s); trying again", exc)
                    await asyncio.sleep(POLL)
                    continue
                except Exception:  # a bug must not end deliveries for the process's life
                    log.exception("webhook dispatcher failed; trying again")
                    await asyncio.sleep(POLL)
                    continue
                if claimed and len(claimed) == min(free, self.batch):
                    await asyncio.sleep(0)  # more may be due now
                    continue
                if made:
                    continue
                await self._idle()
        finally:
            for task in list(self._inflight):
                task.cancel()
            await asyncio.gather(*self._inflight, return_exceptions=True)
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())
            await self.close()

    async def _idle(self) -> None:
        """Until new events are told of, an attempt ends, or POLL seconds pass."""
        self._progress.clear()
        if self._done:
            return
        woken = asyncio.create_task(self.wakeups.wait("events", POLL))
        progressed = asyncio.create_task(self._progress.wait())
        try:
            await asyncio.wait({woken, progressed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (woken, progressed):
                task.cancel()
            await asyncio.gather(woken, progressed, return_exceptions=True)


class HostTurn:
    """One dispatcher per host on SQLite: the worker that holds an exclusive lock on a file
    beside the accounts store dispatches; the others try again every few seconds, so one
    takes over when it stops."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def take(self) -> bool:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = try_lock(self.path)
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


async def dispatch(dispatcher: Dispatcher, turn: HostTurn | None, retry_every: float = 5.0) -> None:
    """Run the dispatcher, on SQLite once this process holds the host's turn."""
    try:
        while turn is not None and not turn.take():  # noqa: ASYNC110 (a file lock has no event)
            await asyncio.sleep(retry_every)
        await dispatcher.run()
    finally:
        if turn is not None:
            turn.release()

"""The billing statement: each key's days on each plan in a month, from the audit log, and
what they cost (the plan's monthly price * days on it / days in the month)."""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import io
from dataclasses import dataclass

from propdata.accounts.schemas import ApiKey, AuditEntry
from propdata.plans import PLANS

DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Line:
    """One key's days on one plan in one month."""

    key_id: str
    key_name: str
    month: str
    """YYYY-MM (UTC)."""
    plan: str
    days: float
    price_usd: int | None
    """The plan's monthly price; None: by arrangement (Enterprise)."""
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class Span:
    plan: str
    start: float
    end: float


def _at(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def spans(key: ApiKey, history: list[AuditEntry], now: float) -> list[Span]:
    """The key's plans over time, from its audit entries (oldest first), up to `now`."""
    mine = [e for e in history if e.key_id == key.id]
    first_change = next((e for e in mine if e.action == "key.plan"), None)
    plan = first_change.from_value if first_change and first_change.from_value else key.plan
    start = _at(key.created_at)
    out: list[Span] = []
    for entry in mine:
        at = _at(entry.at)
        if entry.action == "key.created" and entry.to_value:
            plan, start = entry.to_value.split()[0], at
        elif entry.action == "key.plan" and entry.to_value:
            out.append(Span(plan, start, at))
            plan, start = entry.to_value.split()[0], at
        elif entry.action == "key.revoked":
            out.append(Span(plan, start, at))
            return [s for s in out if s.end > s.start]
    out.append(Span(plan, start, now))
    return [s for s in out if s.end > s.start]


def month_bounds(now: float, back: int) -> tuple[str, float, float]:
    """The UTC month `back` months before now's: its name, start and end."""
    today = dt.datetime.fromtimestamp(now, dt.UTC)
    year, month = today.year, today.month - back
    while month < 1:
        year, month = year - 1, month + 12
    start = dt.datetime(year, month, 1, tzinfo=dt.UTC)
    days = calendar.monthrange(year, month)[1]
    return f"{year:04d}-{month:02d}", start.timestamp(), start.timestamp() + days * DAY


def statement(keys: list[ApiKey], history: list[AuditEntry], now: float) -> list[Line]:
    """The current and the last month's lines, newest month first, then by key and plan."""
    prices = {plan.name: plan.price_usd for plan in PLANS}
    lines: list[Line] = []
    for back in (0, 1):
        month, start, end = month_bounds(now, back)
        days_in_month = (end - start) / DAY
        for key in keys:
            on: dict[str, float] = {}
            for span in spans(key, history, now):
                overlap = min(span.end, end) - max(span.start, start)
                if overlap > 0:
                    on[span.plan] = on.get(span.plan, 0.0) + overlap / DAY
            for plan, days in on.items():
                price = prices.get(plan)
                cost = None if price is None else round(price * days / days_in_month, 2)
                lines.append(Line(key.id, key.name, month, plan, days, price, cost))
    return lines


COLUMNS = ("keyId", "name", "month", "plan", "days", "priceUsdPerMonth", "costUsd")
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n")
"""What makes a spreadsheet read a cell as a formula (OWASP, "CSV Injection")."""


def text_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: one that starts as a formula would (a key's
    name `=HYPERLINK(...)`) gets a leading `'`, which spreadsheets take as "this is text"."""
    return "'" + text if text.startswith(_FORMULA) else text


def statement_csv(lines: list[Line]) -> str:
    """The statement as CSV (RFC 4180: CRLF ends a row, so a field holding CR or LF is quoted):
    COLUMNS, text through `text_cell`, numbers written as numbers."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for line in lines:
        writer.writerow([
            text_cell(line.key_id), text_cell(line.key_name), text_cell(line.month),
            text_cell(line.plan), f"{line.days:.3f}",
            "" if line.price_usd is None else line.price_usd,
            "" if line.cost_usd is None else f"{line.cost_usd:.2f}",
        ])  # fmt: skip
    return out.getvalue()

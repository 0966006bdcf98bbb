"""The plans: one definition reaches every store and every page of the docs."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from propdata.accounts.keys import CustomLimits, keys_of
from propdata.migrations import schema
from propdata.plans import BY_NAME, ENTERPRISE, PLANS, PRO, Plan
from tests.conftest import Store, drop_store, new_store

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TITLES = "|".join(plan.title for plan in PLANS)


@pytest.fixture
async def bare(backend: str, tmp_path: Path) -> AsyncIterator[Store]:
    """A store of each configuration with nothing in it yet."""
    made = await new_store(backend, tmp_path)
    yield made
    await drop_store(made)


async def test_a_changed_plan_reaches_a_store_made_earlier(
    bare: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with keys_of(bare.url) as keys:
        pro, _ = await keys.create("pro", "pro", CustomLimits())
        plain, _ = await keys.create("enterprise", "plain", CustomLimits())
        own, _ = await keys.create("enterprise", "own", CustomLimits(per_minute=7, daily=70))
    assert (pro.per_minute, pro.max_page_size) == (PRO.per_minute, PRO.max_page_size)

    raised_pro = dataclasses.replace(PRO, per_minute=PRO.per_minute + 1, max_page_size=300)
    raised_ent = dataclasses.replace(ENTERPRISE, per_minute=ENTERPRISE.per_minute + 1, daily=9)
    changed = tuple({PRO.name: raised_pro, ENTERPRISE.name: raised_ent}.get(p.name, p)
                    for p in PLANS)  # fmt: skip
    monkeypatch.setattr(schema, "PLANS", changed)
    async with keys_of(bare.url) as keys:  # a start-up: the accounts store is migrated again
        pro, plain, own = [await keys.find(k.id) for k in (pro, plain, own)]
    assert (pro.per_minute, pro.daily, pro.max_page_size) == (PRO.per_minute + 1, PRO.daily, 300)
    assert (plain.per_minute, plain.daily) == (ENTERPRISE.per_minute + 1, 9)
    assert (own.per_minute, own.daily) == (7, 70)  # the key's own limits stay its own
    assert own.max_page_size == ENTERPRISE.max_page_size

    monkeypatch.setattr(schema, "PLANS", PLANS)
    async with keys_of(bare.url) as keys:  # and back again
        assert (await keys.find(pro.id)).per_minute == PRO.per_minute


def _number(value: int | None, none: str) -> str:
    return none if value is None else f"{value:,}"


def _cell(header: str, plan: Plan) -> str:
    """What a plan table's column says of `plan`, known by the column's header."""
    h = header.lower()
    if "saved search" in h:
        return _number(plan.saved_searches, "unlimited")
    if "webhook" in h:
        return _number(plan.webhook_endpoints, "unlimited")
    if "event" in h:
        return _number(plan.events_per_day, "unlimited")
    if "minute" in h and "usd" not in h:
        return _number(plan.per_minute, "unlimited")
    if "day" in h or "daily" in h:
        return _number(plan.daily, "unlimited")
    if "default" in h and "max" in h:
        return f"{plan.default_page_size:,} / {plan.max_page_size:,}"
    if "default" in h:
        return f"{plan.default_page_size:,}"
    if "max" in h:
        return f"{plan.max_page_size:,}"
    if "usd" in h or "price" in h:
        return _number(plan.price_usd, "custom")
    raise AssertionError(f"a plan table's column {header!r}: teach _cell what it holds")


def _plan_tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table whose first column is `Plan`, as rows of cells (header first)."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if rows and rows[0][0] == "Plan":
            tables.append([rows[0], *rows[2:]])  # without the |---| line
        rows = []
    return tables


def test_every_plan_table_in_the_docs_says_what_the_plans_module_says() -> None:
    seen: list[str] = []
    for path in DOCS:
        for header, *body in _plan_tables(path.read_text()):
            seen.append(path.name)
            assert sorted(row[0] for row in body) == sorted(p.title for p in PLANS), path
            for row in body:
                plan = next(p for p in PLANS if p.title == row[0])
                for column, cell in zip(header[1:], row[1:], strict=True):
                    want = _cell(column, plan)
                    # "unlimited (unless customised)": the words after the value explain it
                    assert cell.lower().split(" (")[0] == want, (path.name, plan.name, column)
    assert {"README.md", "api.md"} <= set(seen)


# A plan's number in a sentence of the docs: the pattern finds the plan and the number.
_PROSE: list[tuple[str, Callable[[Plan], int | None]]] = [
    (rf"plan maximum \(({TITLES}): ([\d,]+)\)", lambda p: p.max_page_size),
    (rf"({TITLES}) key driven past its ([\d,]+) requests a minute", lambda p: p.per_minute),
    (rf"({TITLES}) key \(([\d,]+) requests in its rolling day\)", lambda p: p.daily),
    (rf"({TITLES}) key costs about [\d.]+ MB of Redis \(([\d,]+) entries", lambda p: p.daily),
    (rf"({TITLES}) key at its ([\d,]+)/minute", lambda p: p.per_minute),
]


@pytest.mark.parametrize(("pattern", "number"), _PROSE, ids=[p for p, _ in _PROSE])
def test_a_plan_number_in_the_docs_prose_is_the_plan_s(
    pattern: str, number: Callable[[Plan], int | None]
) -> None:
    found = 0
    for path in DOCS:
        text = " ".join(path.read_text().split())
        for title, value in re.findall(pattern, text):
            plan = next(p for p in PLANS if p.title == title)
            assert int(value.replace(",", "")) == number(plan), (path.name, title, value)
            found += 1
    assert found, f"no sentence matches {pattern!r} any more: update this list"


def test_the_auth_status_examples_show_the_plans_limits() -> None:
    examples = re.findall(r'^\{"data":\{"keyId".*$', (ROOT / "docs" / "api.md").read_text(), re.M)
    assert examples
    for line in examples:
        status = json.loads(line.replace("…", ""))["data"]
        plan = BY_NAME[status["plan"]]
        assert status["limits"] == {
            "perMinute": plan.per_minute, "daily": plan.daily,
            "defaultPageSize": plan.default_page_size, "maxPageSize": plan.max_page_size,
        }  # fmt: skip

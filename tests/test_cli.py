"""The `propdata` command through its runner, against a real SQLite store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from propdata.cli import app
from propdata.cli.base import training_blocks
from propdata.config import load_settings
from propdata.ingest.loader import load
from propdata.kit import crypto
from tests.conftest import Store, build_store, drop_store, new_store, open_db
from tests.factories import AS_OF, record
from tests.live import run_apart, serving_process, until_sync


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    made = {"PROPDATA_DATABASE_URL": str(tmp_path / "cli.db"), "PROPDATA_AS_OF": "2026-11-21"}
    assert run(made, "data", "init")[0] == 0
    return made


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_keys_create_prints_the_key_alone_on_the_last_line(env: dict[str, str]) -> None:
    code, out, err = run(env, "keys", "create", "--plan", "developer", "--name", "ci")
    assert code == 0, err
    key = out.strip().splitlines()[-1]
    assert crypto.well_formed(key)
    code, out, _ = run(env, "keys", "list")
    assert code == 0 and "ci" in out and "developer" in out
    assert key not in out  # never shown again


def test_keys_plan_and_revoke_by_id_or_key(env: dict[str, str]) -> None:
    _, out, _ = run(env, "keys", "create", "--plan", "free")
    key = out.strip().splitlines()[-1]
    code, _, err = run(env, "keys", "plan", key, "pro")
    assert code == 0 and "pro" in err
    code, _, err = run(env, "keys", "plan", key, "enterprise", "--per-minute", "7", "--daily", "70")
    said = " ".join(err.split())  # the console folds long lines
    assert code == 0 and "(7/min, 70/day, unlimited events/day)" in said
    code, _, err = run(env, "keys", "plan", key, "enterprise", "--events-per-day", "5000",
                       "--saved-searches", "40", "--webhook-endpoints", "7")  # fmt: skip
    assert code == 0 and "5,000 events/day" in " ".join(err.split())
    _, out, _ = run(env, "keys", "list")
    assert "events a day" in out and "5000" in out and "40/7" in out
    code, _, err = run(env, "keys", "revoke", key)
    assert code == 0 and "revoked" in err
    _, out, _ = run(env, "keys", "list")
    assert "revoked" in out


def test_a_key_can_come_from_standard_input(env: dict[str, str]) -> None:
    """A key given as an argument lands in `ps` and shell history; `-` reads it
    from standard input instead, and a key on the command line gets a warning."""
    _, out, _ = run(env, "keys", "create", "--plan", "free")
    key = out.strip().splitlines()[-1]
    result = CliRunner().invoke(app, ["keys", "plan", "-", "developer"], env=env, input=key + "\n")
    assert result.exit_code == 0 and "developer" in result.stderr
    assert key not in result.stderr + result.stdout and "warning" not in result.stderr
    code, _, err = run(env, "keys", "plan", key, "pro")
    assert code == 0 and "warning" in err and "shell history" in err
    result = CliRunner().invoke(app, ["keys", "revoke", "-"], env=env, input=key + "\n")
    assert result.exit_code == 0 and "revoked" in result.stderr
    unknown = crypto.new_key()
    result = CliRunner().invoke(app, ["keys", "revoke", "-"], env=env, input=unknown + "\n")
    assert result.exit_code == 2 and unknown not in result.stderr  # never echoed whole


@pytest.mark.parametrize(
    "args",
    [
        ("keys", "create", "--plan", "gold"),
        ("keys", "create", "--plan", "free", "--per-minute", "5"),
        ("keys", "create", "--plan", "enterprise", "--daily", "0"),
        ("keys", "create", "--plan", "pro", "--events-per-day", "5"),
        ("keys", "create", "--plan", "enterprise", "--events-per-day", "0"),
        ("keys", "create", "--plan", "developer", "--saved-searches", "40"),
        ("keys", "create", "--plan", "enterprise", "--webhook-endpoints", "0"),
        ("keys", "plan", "key_nope", "pro"),
        ("keys", "revoke", "key_nope"),
    ],
)
def test_bad_key_commands_exit_2_with_a_reason(env: dict[str, str], args: tuple[str, ...]) -> None:
    code, _, err = run(env, *args)
    assert code == 2 and "error" in err


def test_bad_configuration_is_named(env: dict[str, str]) -> None:
    code, _, err = run({**env, "PROPDATA_CACHE_TTL": "soon"}, "keys", "list")
    assert code == 2 and "PROPDATA_CACHE_TTL" in err


def test_data_generate_replaces_only_the_synthetic_records(
    env: dict[str, str], tmp_path: Path
) -> None:
    record = {
        "id": "mine-1", "status": "offMarket", "listPrice": None,
        "address": {"streetAddress": "1 Elm St", "city": "Ames", "state": "IA", "zipCode": "50010",
                    "county": "Story", "fipsCode": "19169"},
        "bedroomsTotal": 2, "bathroomsTotal": 1.0, "livingArea": 900, "lotSize": None,
        "yearBuilt": 1950, "propertyType": "singleFamily", "daysOnMarket": None,
        "priceHistory": [], "taxHistory": [], "scores": None, "coordinates": None,
        "lastUpdated": "2026-01-01T00:00:00Z", "listingType": None, "originalListPrice": None,
        "previousListPrice": None, "lastPriceChangeDate": None, "removedDate": None,
        "rentEstimate": None, "valueEstimate": None, "grossYield": None,
        "pricePerSquareFoot": None, "stories": 1,
    }  # fmt: skip
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(record) + "\n")
    code, _, err = run(env, "data", "import", str(source))
    assert code == 0, err
    assert "1 new" in err
    code, _, err = run(env, "data", "import", str(source))
    assert code == 0 and "0 new, 0 updated, 1 unchanged" in err
    code, _, err = run(env, "data", "generate", "--properties", "300", "--seed", "3")
    assert code == 0, err
    assert "300 new" in err and "Market statistics" in err
    code, _, err = run(env, "data", "generate", "--properties", "120", "--seed", "4")
    assert code == 0 and "120 new" in err

    import sqlite3

    conn = sqlite3.connect(env["PROPDATA_DATABASE_URL"])
    counts = dict(
        conn.execute("SELECT origin, count(*) FROM properties GROUP BY origin").fetchall()
    )
    assert counts == {"import": 1, "synthetic": 120}
    assert conn.execute("SELECT count(*) FROM market_snapshots").fetchone()[0] > 0
    conn.close()


def test_import_writes_a_rejects_report(env: dict[str, str], tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"id": "x"}\nnot json\n')
    code, _, err = run(env, "data", "import", str(source))
    assert code == 1  # rows were rejected: a script must learn of it
    report = tmp_path / "bad.jsonl.rejects.csv"
    assert report.exists() and "2 rows rejected" in err
    lines = report.read_text().strip().splitlines()
    assert len(lines) == 3  # header + two rejected lines


def test_import_refuses_an_unknown_format(env: dict[str, str], tmp_path: Path) -> None:
    source = tmp_path / "data.xml"
    source.write_text("<x/>")
    code, _, err = run(env, "data", "import", str(source))
    assert code == 2 and "error" in err


def test_standard_input_and_unknown_formats_are_refused_before_following(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, _, err = run(env, "data", "import", "-")
    assert code == 2 and "--follow" in err
    source = tmp_path / "data.xml"
    source.write_text("<x/>")
    code, _, err = run(env, "data", "import", "--follow", str(source))
    assert code == 2 and "unsupported file type" in err
    bad = tmp_path / "data.csv"
    bad.write_text("name,price\n")
    code, _, err = run(env, "data", "import", "--follow", str(bad))
    assert code == 2 and "needs an `id` column" in err


def test_help_lists_every_verb(env: dict[str, str]) -> None:
    _, out, _ = run(env, "--help")
    for verb in ("serve", "keys", "data"):
        assert verb in out
    _, out, _ = run(env, "keys", "--help")
    for verb in ("create", "list", "plan", "revoke"):
        assert verb in out
    _, out, _ = run(env, "data", "--help")
    for verb in ("demo", "import", "generate"):
        assert verb in out


def test_commands_that_only_read_or_manage_never_make_a_store(tmp_path: Path) -> None:
    """A key made in a store no server reads would be lost: refuse, and say where to look."""
    missing = tmp_path / "elsewhere" / "propdata.db"
    env = {"PROPDATA_DATABASE_URL": str(missing), "PROPDATA_AS_OF": "2026-11-21"}
    for args in (("data", "status"), ("data", "rebuild"), ("keys", "list"),
                 ("keys", "create", "--plan", "free"), ("accounts", "list")):  # fmt: skip
        code, out, err = run(env, *args)
        assert code == 2, args
        assert f"there is no store at {missing}" in err and "PROPDATA_DATABASE_URL" in err
        assert out == ""
    assert not missing.parent.exists() or not any(missing.parent.iterdir())


def test_every_store_command_says_which_store_it_used(env: dict[str, str]) -> None:
    path = env["PROPDATA_DATABASE_URL"]
    for args in (("data", "status"), ("keys", "list"), ("accounts", "list")):
        code, out, err = run(env, *args)
        assert code == 0, err
        assert f"store: {path}" in (out if args[0] == "data" else err), args


def test_data_status_tells_counts_the_last_load_and_the_index(
    env: dict[str, str], tmp_path: Path
) -> None:
    code, out, _ = run(env, "data", "status")
    assert code == 0 and "last load that changed records: none" in out and "properties: 0" in out
    code, _, err = run(env, "data", "generate", "--properties", "200")
    assert code == 0, err
    code, out, _ = run(env, "data", "status")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == f"store: {env['PROPDATA_DATABASE_URL']}"
    assert "properties: 200" in out
    synthetic = next(line for line in lines if line.strip().startswith("synthetic: 200 ("))
    statuses = dict(
        (part.split()[0], int(part.split()[1].replace(",", "")))
        for part in synthetic.split("(", 1)[1].rstrip(")").split(", ")
    )
    assert sum(statuses.values()) == 200 and set(statuses) <= {
        "forSale", "forRent", "recentlySold", "offMarket"}  # fmt: skip
    assert "last load that changed records: " in out and "synthetic: 200 new, 0 updated" in out
    assert "search index: not built for this data in " in out
    assert lines[-1] == "rebuild: done"
    off = {**env, "PROPDATA_SEARCH_INDEX": "0"}
    assert "search index: off" in run(off, "data", "status")[1]


def test_data_init_makes_an_empty_store_once(tmp_path: Path) -> None:
    env = {"PROPDATA_DATABASE_URL": str(tmp_path / "new.db")}
    assert run(env, "data", "init")[0] == 0
    assert run(env, "data", "init")[0] == 0  # an existing store: its schema, brought up to date
    code, out, _ = run(env, "data", "status")
    assert code == 0 and "properties: 0" in out


def test_every_progress_bar_of_the_demo_reaches_its_end(env: dict[str, str]) -> None:
    code, _, err = run(env, "data", "demo", "--properties", "300")
    assert code == 0, err
    bars = re.findall(r"^(.+?)\s+━+\s+(\d+)/(\S+)", err, re.MULTILINE)
    assert {name.strip() for name, _, _ in bars} >= {
        "Ames, IA (real)", "Grinnell, IA (real)", "Sacramento, CA (real)", "Durham, NC (real)",
        "synthetic national set",
        "value and rent estimates", "market statistics",
    }  # fmt: skip
    for name, done, total in bars:
        assert done == total, f"{name.strip()} stopped at {done}/{total}"


def test_a_load_produces_the_events_of_saved_searches(env: dict[str, str], tmp_path: Path) -> None:
    """`data import` runs the event producer after its commit: no server needed."""
    import asyncio

    import msgspec

    from propdata.config import load_settings
    from propdata.events.repository import EventRepository
    from propdata.kit.db import connect
    from propdata.saved_searches.repository import (
        SavedSearchRepository,
        SavedSearchRow,
        WatchedRecords,
    )
    from tests.factories import record

    settings = load_settings(env)

    async def watch() -> None:
        data, accounts = await connect(settings.database_url), await connect(settings.accounts_url)
        await SavedSearchRepository(accounts).insert(SavedSearchRow(
            "srch_cli", "key:k", "Ames", '{"city": "Ames"}', "[]", "2026-11-21T00:00:00.000Z"))  # fmt: skip
        await WatchedRecords(data).set_watching(True)
        await data.close()
        await accounts.close()

    async def events() -> list[str]:
        accounts = await connect(settings.accounts_url)
        rows = await EventRepository(accounts).page("key:k", 0, 100)
        await accounts.close()
        return [row.type for row in rows]

    asyncio.run(watch())
    source = tmp_path / "new.jsonl"
    source.write_bytes(msgspec.json.encode(record("cli-1")) + b"\n")
    code, _, err = run(env, "data", "import", str(source))
    assert code == 0, err
    assert "Events: 2 produced" in err
    assert asyncio.run(events()) == ["search.entered", "property.listed"]


def test_a_small_import_leaves_pandas_and_litestar_unimported(
    env: dict[str, str], tmp_path: Path
) -> None:
    """`data import FILE` is what an operator waits for on each small file: its process
    imports neither the demo sets' reader (pandas) nor the API's code (litestar), each about
    half a second of start-up, unless a saved search needs the events producer."""
    import datetime as dt
    import os
    import subprocess
    import sys

    import msgspec

    from propdata.ingest import synthetic

    assert run(env, "data", "generate", "--properties", "300", "--seed", "3")[0] == 0
    source = tmp_path / "one.jsonl"
    (_, record), *_ = synthetic.generate(1, 9, dt.date(2026, 11, 21))
    source.write_bytes(msgspec.json.encode(msgspec.structs.replace(record, id="new-1")) + b"\n")
    probe = (
        "import sys\nfrom propdata.cli import main\n"
        f"sys.argv = ['propdata', 'data', 'import', {str(source)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(sorted({'pandas', 'litestar'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "valued with the stored models" in done.stderr  # the incremental path ran
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _search_index_of(base: str) -> str:
    return str(httpx.get(base + "/health", timeout=10).json()["checks"]["searchIndex"])


async def _change_one_record(store: Store) -> None:
    db = await open_db(store)
    try:
        report = await load(db, enumerate([record("t-003", list_price=345_678)], 1),
                            origin="import", as_of=AS_OF)  # fmt: skip
        assert report.updated == 1
    finally:
        await db.close()


@pytest.mark.slow
def test_data_status_and_health_agree_about_the_search_index(backend: str, tmp_path: Path) -> None:
    """After a load, a server answers from its snapshot and the change read onto it: `/health`
    says `ok`, and `data status` says the same (it once looked for a snapshot made of
    exactly this data version, which a server only builds past the fold rule)."""
    store = run_apart(new_store(backend, tmp_path))
    run_apart(build_store(store))
    env = {**store.env(), "PROPDATA_AS_OF": "2026-11-21"}
    try:
        with serving_process(env) as (base, _):
            until_sync(lambda: _search_index_of(base) == "ok", "the index, at the start", 60)
            code, out, err = run(env, "data", "status")
            assert code == 0, err
            assert "search index: ready for this data: the snapshot in " in out, out
            assert "and no change since it" in out, out
            run_apart(_change_one_record(store))
            until_sync(
                lambda: "1 change since" in run(env, "data", "status")[1], "a new version", 60
            )
            until_sync(lambda: _search_index_of(base) == "ok", "the index, after the load", 60)
            code, out, _ = run(env, "data", "status")
            assert "search index: ready for this data: " in out and "1 change since it" in out
    finally:
        run_apart(drop_store(store))


def test_the_loading_commands_give_the_training_block_cache_its_configured_budget() -> None:
    # `data replicate` and `data import --follow` make one; other commands keep none.
    blocks = training_blocks(load_settings({"PROPDATA_VALUATION_CACHE_MB": "1.5"}))
    assert blocks.budget == 1_572_864 and not blocks.used

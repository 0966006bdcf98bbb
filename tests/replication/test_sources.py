"""`propdata sources add|list|remove` through the command's runner, on both stores: every
option checked and named, secrets only by their variables' names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from propdata.cli import app
from tests.conftest import Store, drop_store, new_store
from tests.conftest import run as run_async

SECRET = "s3cr3t-value-never-shown"


@pytest.fixture
def env(backend: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    store: Store = run_async(new_store(backend, tmp_path))
    made = {**store.env(), "PROPDATA_AS_OF": "2026-11-21", "FEED_TOKEN": SECRET,
            "FEED_SECRET": SECRET}  # fmt: skip
    assert cli(made, "data", "init")[0] == 0
    yield made
    run_async(drop_store(store))


def cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def said(text: str) -> str:
    return " ".join(text.split())


def test_add_list_remove(env: dict[str, str]) -> None:
    code, _, err = cli(env, "sources", "add", "mls", "https://feed.example/odata/Property",
                       "--token-env", "FEED_TOKEN", "--filter", "OriginatingSystemName eq 'X'",
                       "--page-size", "500", "--requests-per-hour", "3600", "--overlap", "60")  # fmt: skip
    assert code == 0, err
    code, _, err = cli(env, "sources", "add", "grid", "https://grid.example/v2/Property",
                       "--oauth-token-url", "https://grid.example/oauth2/token",
                       "--client-id", "abc", "--client-secret-env", "FEED_SECRET",
                       "--scope", "api")  # fmt: skip
    assert code == 0, err
    code, out, err = cli(env, "sources", "list")
    assert code == 0, err
    shown = said(out)
    assert "mls" in shown and "grid" in shown and "new" in shown
    assert "FEED_TOKEN" in shown and "FEED_SECRET" in shown and SECRET not in out + err
    code, _, err = cli(env, "sources", "add", "mls", "https://other.example/Property")
    assert code == 2 and "exists" in err
    code, _, err = cli(env, "sources", "remove", "mls")
    assert code == 0 and "removed" in err
    code, out, _ = cli(env, "sources", "list")
    assert "grid" in out and "mls" not in said(out).replace("grid", "")
    code, _, err = cli(env, "sources", "remove", "mls")
    assert code == 2 and "no source named mls" in said(err)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["BAD-NAME", "https://h/Property"], "NAME must be"),
        (["ok", "ftp://h/Property"], "URL must be an https:// URL"),
        (["ok", "http://feed.example/Property"], "http:// only for this machine"),
        (["ok", "https://user:pw@h/Property"], "URL must not carry a user name"),
        (["ok", "https://h/Property", "--page-size", "0"], "--page-size must be from 1"),
        (["ok", "https://h/Property", "--requests-per-hour", "0"], "--requests-per-hour must be"),
        (["ok", "https://h/Property", "--overlap", "-1"], "--overlap must be from 0"),
        (["ok", "https://h/Property", "--filter", "a eq (1"], "--filter has unbalanced"),
        (["ok", "https://h/Property", "--token-env", "NOT A NAME"], "--token-env must name"),
        (["ok", "https://h/Property", "--token-env", "T", "--client-id", "x"], "--token-env"),
        (["ok", "https://h/Property", "--client-id", "x"], "--oauth-token-url"),
        (
            [
                "ok",
                "https://h/Property",
                "--oauth-token-url",
                "http://h/t",
                "--client-id",
                "x",
                "--client-secret-env",
                "S",
            ],
            "--oauth-token-url must be https",
        ),
        (["ok", "https://h/Property", "--scope", "s"], "--scope goes with"),
    ],
)
def test_bad_input_names_the_option(env: dict[str, str], args: list[str], named: str) -> None:
    code, _, err = cli(env, "sources", "add", *args)
    assert code == 2 and named in said(err), err


def test_a_secret_given_on_the_command_line_is_refused(env: dict[str, str]) -> None:
    """There is no option that takes a secret: only the names of variables."""
    code, _, err = cli(env, "sources", "add", "ok", "https://h/Property", "--token", SECRET)
    assert code == 2 and "No such option" in err


def test_loopback_http_is_allowed_for_tests(env: dict[str, str]) -> None:
    code, _, err = cli(env, "sources", "add", "local", "http://127.0.0.1:4004/odata/Property")
    assert code == 0, err


def test_an_entity_event_source_names_its_log_on_the_same_host(env: dict[str, str]) -> None:
    feed = "https://feed.example/odata/Property"
    code, _, err = cli(env, "sources", "add", "ev", feed, "--entity-events",
                       "https://elsewhere.example/odata/EntityEvent")  # fmt: skip
    assert code == 2 and "--entity-events must be on the same host" in said(err)
    code, _, err = cli(env, "sources", "add", "ev", feed, "--entity-events",
                       "https://feed.example/odata/EntityEvent")  # fmt: skip
    assert code == 0, err
    code, out, _ = cli(env, "sources", "list")
    assert code == 0 and "ev" in out and "watermark -" in said(out)


def test_set_changes_how_a_source_is_followed(env: dict[str, str]) -> None:
    feed = "https://feed.example/odata/Property"
    assert cli(env, "sources", "add", "mls", feed)[0] == 0
    code, _, err = cli(env, "sources", "set", "mls", "--entity-events",
                       "https://feed.example/odata/EntityEvent", "--page-size", "500")  # fmt: skip
    assert code == 0, err
    assert "follows https://feed.example/odata/EntityEvent (its next pass catches up" in said(err)
    assert "page size 500" in said(err)
    code, _, err = cli(env, "sources", "set", "mls", "--no-entity-events")
    assert code == 0 and "follows ModificationTimestamp" in said(err), err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["mls", "--entity-events", "https://elsewhere.example/EntityEvent"],
         "--entity-events must be on the same host"),
        (["mls", "--entity-events", "https://feed.example/EntityEvent", "--no-entity-events"],
         "--entity-events and --no-entity-events exclude each other"),
        (["mls", "--page-size", "0"], "--page-size"),
        (["mls", "--requests-per-hour", "-1"], "--requests-per-hour"),
        (["nosuch", "--overlap", "5"], "no source named nosuch"),
    ],
)  # fmt: skip
def test_set_refuses_bad_input_and_changes_nothing(
    env: dict[str, str], args: list[str], named: str
) -> None:
    assert cli(env, "sources", "add", "mls", "https://feed.example/odata/Property")[0] == 0
    before = cli(env, "sources", "list")[1]
    code, _, err = cli(env, "sources", "set", *args)
    assert code == 2 and named in said(err), err
    assert cli(env, "sources", "list")[1] == before

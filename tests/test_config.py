"""Settings: read from PROPDATA_*, checked at start, every one documented."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from propdata.app import keeper_settings
from propdata.config import ENV, ConfigError, Settings, load_settings
from propdata.search.keeper import KeeperSettings

DOCS = Path(__file__).parent.parent / "docs" / "configuration.md"


def test_defaults() -> None:
    settings = load_settings({})
    assert settings == Settings()
    assert settings.database_url == "var/propdata.db" and settings.redis_url is None
    assert settings.cache_ttl == 60


def test_values_are_read_and_converted() -> None:
    settings = load_settings(
        {"PROPDATA_DATABASE_URL": "/tmp/x.db", "PROPDATA_CACHE_TTL": "2.5", "PROPDATA_AS_OF": "2026-01-31",
         "PROPDATA_REDIS_URL": "redis://127.0.0.1:6379/0", "PROPDATA_LOG_LEVEL": "debug"}
    )  # fmt: skip
    assert settings.cache_ttl == 2.5 and settings.as_of == dt.date(2026, 1, 31)
    assert settings.today() == dt.date(2026, 1, 31)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("PROPDATA_CACHE_TTL", "soon"), ("PROPDATA_CACHE_TTL", "-1"), ("PROPDATA_AS_OF", "31/01/2026"),
     ("PROPDATA_LOG_LEVEL", "LOUD"), ("PROPDATA_REDIS_URL", "http://x"),
     ("PROPDATA_CACHE_MB", "0"), ("PROPDATA_CACHE_MB", "lots"),
     ("PROPDATA_VALUATION_CACHE_MB", "-1"), ("PROPDATA_WORKERS", "0"),
     ("PROPDATA_WORKERS", "1.5"), ("PROPDATA_HEAD_TIMEOUT", "0"), ("PROPDATA_BODY_TIMEOUT", "soon"),
     ("PROPDATA_BODY_TIMEOUT", "-2"), ("PROPDATA_MAX_CONNECTIONS", "0"),
     ("PROPDATA_MAX_CONNECTIONS", "many"), ("PROPDATA_LOG_FORMAT", "xml"),
     ("PROPDATA_METRICS_ALLOWED_NETWORKS", "10.0.0.0/33"), ("PROPDATA_METRICS_TOKEN", "short"),
     ("PROPDATA_INDEX_POLL", "0"), ("PROPDATA_INDEX_FOLD_SHARE", "2")],
)  # fmt: skip
def test_bad_values_name_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_settings({variable: value})


def test_docs_list_every_setting() -> None:
    text = DOCS.read_text()
    documented = set(re.findall(r"`(PROPDATA_[A-Z_]+)`", text))
    assert documented == set(ENV.values())


def test_the_deployment_guide_says_how_each_setting_is_set_on_many_hosts() -> None:
    """docs/deploy.md's table names every setting an operator sets (serve sets the last)."""
    guide = (DOCS.parent / "deploy.md").read_text()
    section = guide.split("## Every setting, on many hosts", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(PROPDATA_[A-Z_]+)`", section))
    assert named == set(ENV.values())


def test_the_cache_budget_is_the_host_s_shared_by_its_workers() -> None:
    assert Settings().cache_bytes == 32 * 1024 * 1024  # a full cache keeps a worker under 150 MB
    settings = load_settings({"PROPDATA_CACHE_MB": "48", "PROPDATA_WORKERS": "3"})
    assert settings.cache_bytes == 16 * 1024 * 1024


def test_the_index_keepers_numbers_are_its_settings_defaults() -> None:
    """The keeper's own defaults (its tests' and commands') are the server's."""
    assert keeper_settings(Settings()) == KeeperSettings()
    tuned = keeper_settings(load_settings({"PROPDATA_INDEX_POLL": "0.5"}))
    assert tuned.poll == 0.5 and tuned.refresh_cap == KeeperSettings().refresh_cap

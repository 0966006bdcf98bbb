"""The ZIP codes' places: the package's table, kept in a file once per package version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from propdata.kit import geography


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    geography._all_places.cache_clear()
    yield tmp_path
    geography._all_places.cache_clear()


def test_places_come_from_the_package_once_then_from_its_file(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = geography._package_places()
    first = geography.zip_places(["50010", "00000", "10001"])
    assert first == {code: asked[code] for code in ("50010", "10001")}
    assert first["50010"] == ("Ames", "IA")
    assert geography._places_file().is_file()
    geography._all_places.cache_clear()  # another process: the file, not the package

    def unasked() -> dict[str, tuple[str, str]]:
        raise AssertionError("the package was asked")

    monkeypatch.setattr(geography, "_package_places", unasked)
    assert geography.zip_places(["50010", "00000", "10001"]) == first
    assert geography._all_places() == asked


def test_a_damaged_file_is_made_again_and_no_cache_folder_only_costs_time(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = geography._places_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"50010": ["Am')
    assert geography.zip_places(["50010"]) == {"50010": ("Ames", "IA")}
    geography._all_places.cache_clear()
    assert geography.zip_places(["50010"]) == {"50010": ("Ames", "IA")}  # rewritten whole
    geography._all_places.cache_clear()
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-such-folder")
    assert geography.zip_places(["50010"]) == {"50010": ("Ames", "IA")}

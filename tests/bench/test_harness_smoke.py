"""The benchmark harness (bench/run.py) still works: a smoke run on a few thousand
properties, about two seconds of wrk a scenario. It asserts that the run completes and
prints every row of the table, never how fast anything is: timings on a shared machine are
for `make bench`, not for tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live import bench_module

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "run.py"


def _scaleout_reachable() -> str:
    """'' when PostgreSQL and Redis answer; else why not (fails the test under CI)."""
    why: str = bench_module("harness").scaleout_available()
    if why and os.environ.get("CI"):
        pytest.fail(f"PostgreSQL or Redis unreachable under CI: {why}")
    return why


@pytest.mark.slow
def test_smoke_run_prints_every_row(tmp_path: Path) -> None:
    why = _scaleout_reachable()
    command = [sys.executable, str(RUN), "--smoke", "--folder", str(tmp_path)]
    if not why:
        command.append("--scaleout")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    assert out.startswith("## Benchmark (make bench)")
    stores = ["embedded"] + ([] if why else ["scale-out"])
    for store in stores:
        for scenario in (
            "1. get by id, cache off (full path)",
            "bare ASGI app, same bytes",
            "2. search mix, cache off",
            "4. offset 100,000 with a filter",
            "7. radius mix, cache off",
            "8. cursor page 20",
            "9. by id with fields=id,listPrice (bytes)",
            "5a. import (records/s, generation excluded)",
            "5b. market statistics rebuild",
            "6. memory per worker after the loads",
            "6. memory per worker with the response cache full",
            "cache hits (cache on, 20 repeated URLs)",
            "10. data import --follow at 200 records/s",
            "11. search mix while --follow takes 200 records/s",
            "5d. data import of 1 new record, end to end",
            "5e. data import of 10 new records, end to end",
            "5f. data import of 100 new records, end to end",
            "12. events: 2,000 changed records against 200 saved searches",
            "13. events: commit to first delivery attempt, idle",
            "14. webhook deliveries beside the search mix",
            "15. event log page by cursor, 20,000 events of one owner",
            "16. 50 idle event streams on one worker",
            "17. 200 event streams of one account, 10 asked at a time",
            "18. list 500 saved searches of 1,000 ids each",
            "19. data export of 3,000 properties (parquet)",
            "20. an export file's download (one worker, loopback)",
            "21. search mix beside a data export of 3,000 properties",
            "22. data replicate of 2,000 RESO records",
            "23. an upstream change served and sent",
        ):
            if store == "scale-out" and scenario.startswith(("10.", "11.", "12.", "13.", "14.",
                                                              "16.", "17.", "18.", "19.", "20.",
                                                              "21.", "22.", "23.")):  # fmt: skip
                continue  # the embedded store only
            rows = [
                line for line in out.splitlines() if scenario in line and f"| {store} |" in line
            ]
            assert len(rows) == 1, (scenario, store, out)
    datasette = [
        line for line in out.splitlines() if line.startswith("| 3. the search mix on datasette")
    ]
    assert len(datasette) == 1
    if (ROOT / "bench" / ".datasette-venv" / "bin" / "python").exists():
        assert "0 differ" in datasette[0], datasette[0]  # the harness's comparison works
    else:
        assert "skipped" in datasette[0]
    assert "n/a (smoke)" in out and "**no**" not in out and "**yes**" not in out
    assert "failed requests" not in out, out
    assert "not incremental" not in out and "not measured" not in out, out  # rows 5d-5f


def test_search_mix_uses_every_search_parameter() -> None:
    """A filter added to the API must join the mix (and the datasette translation)."""
    from propdata.app import create_app
    from propdata.config import Settings

    scenarios = bench_module("bench_mix")
    schema = create_app(Settings(database_url=":memory:")).openapi_schema.to_schema()
    parameters = schema["paths"]["/v1/properties"]["get"]["parameters"]
    filters = {p["name"] for p in parameters if p["in"] == "query"} - {
        "limit", "offset", "sort", "order", "cursor", "fields"
    }  # fmt: skip
    assert filters == set(scenarios.FILTERS) | set(scenarios.GEO)
    rows = [
        {"zip_code": "02825", "city": "Foster", "state": "RI", "status": "forSale",
         "property_type": "condo", "list_price": 250_000, "bedrooms": 2, "bathrooms": 1.5,
         "living_area": 900, "year_built": 1990, "days_on_market": 40}
    ]  # fmt: skip
    mix = scenarios.search_mix(rows, 140, seed=1)
    used = {name for search in mix for name in search.params}
    assert set(scenarios.FILTERS) <= used
    assert {s.sort for s in mix} == set(scenarios.SORTS)
    assert all(1 <= s.params["limit"] <= 100 for s in mix)
    offsets = [s.params["offset"] for s in mix if "offset" in s.params]
    assert 40 <= len(offsets) <= 100 and all(1 <= o <= 1_000 for o in offsets)
    for search in mix:
        translated = dict(scenarios.datasette_params(search))
        assert translated["_size"] == search.params["limit"]
        assert "offset" not in search.first_page.params
        assert search.first_page.params.items() <= search.params.items()
    rows[0].update(latitude=41.88, longitude=-71.7)
    radii = scenarios.radius_mix(rows, 140, seed=1)
    used = {name for search in radii for name in search.params}
    assert set(scenarios.GEO) <= used and {"status", "distance"} <= used | {
        s.params.get("sort") for s in radii
    }
    assert all(0.5 <= s.params.get("radius", 1) <= 25 for s in radii)


def test_write_docs_replaces_only_its_section(tmp_path: Path) -> None:
    run = bench_module("bench_run")
    new = f"## Benchmark (make bench)\nnew table\n{run.END}\n"
    doc = tmp_path / "performance.md"
    doc.write_text(
        "# Performance\n\n## Before\nkept\n\n## Benchmark (make bench)\nold\n\n## After\nkept\n"
    )
    run.write_docs(new, doc)
    assert doc.read_text() == (
        f"# Performance\n\n## Before\nkept\n\n## Benchmark (make bench)\nnew table\n{run.END}\n"
        "\n## After\nkept\n"
    )
    # notes under the generated part's end survive the next run
    doc.write_text(doc.read_text().replace(run.END + "\n", run.END + "\n\n### A/B\nnotes\n"))
    run.write_docs(new.replace("new table", "newer table"), doc)
    assert doc.read_text() == (
        f"# Performance\n\n## Before\nkept\n\n## Benchmark (make bench)\nnewer table\n{run.END}\n"
        "\n### A/B\nnotes\n\n## After\nkept\n"
    )
    plain = tmp_path / "plain.md"
    plain.write_text("# Performance\n\nintro\n")
    run.write_docs(new, plain)
    assert plain.read_text() == f"# Performance\n\nintro\n\n{new}"


def test_write_docs_finds_its_place_in_performance_md(tmp_path: Path) -> None:
    run = bench_module("bench_run")
    text = run.DOCS.read_text()
    start = text.index("\n" + run.SECTION + "\n") + 1
    end = text.index(run.END, start) + len(run.END)
    assert text.count(run.SECTION) == 1 and text.count(run.END) == 1
    doc = tmp_path / "performance.md"
    doc.write_text(text)
    run.write_docs(f"{run.SECTION}\nnew table\n{run.END}\n", doc)
    assert doc.read_text() == text[:start] + f"{run.SECTION}\nnew table\n{run.END}" + text[end:]

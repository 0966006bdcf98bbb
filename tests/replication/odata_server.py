"""A real OData 4 server for the replication tests: SAP CAP (`@sap/cds` with
`@cap-js/sqlite`, from npm), serving a `Property` entity with RESO field names from a CSV.

Test-only: installed from tests/replication/odata/package-lock.json into a cache folder
outside the repository (`PROPDATA_ODATA_CACHE`, default ~/.cache/propdata-odata), never
shipped. better-sqlite3's native module is built against this machine's Node headers when
npm did not run its install script.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.redis_support import free_port

PROJECT = Path(__file__).with_name("odata")
CACHE = Path(os.environ.get("PROPDATA_ODATA_CACHE", Path.home() / ".cache" / "propdata-odata"))
FIELDS = (
    "ListingKey", "ModificationTimestamp", "StandardStatus", "PropertyType", "PropertySubType",
    "OriginatingSystemName", "UnparsedAddress", "StreetNumber", "StreetName", "StreetSuffix",
    "UnitNumber", "City", "StateOrProvince", "PostalCode", "CountyOrParish", "ListPrice",
    "OriginalListPrice", "ClosePrice", "CloseDate", "BedroomsTotal", "BathroomsTotalInteger",
    "LivingArea", "LotSizeArea", "LotSizeUnits", "YearBuilt", "DaysOnMarket", "Latitude",
    "Longitude", "MlgCanView",
)  # fmt: skip


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}; the replication tests need it")
    pytest.skip(f"{what}; the replication tests need it")


def install() -> Path:
    """The cache folder with the lock file's packages installed (once per lock file)."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        _missing("node and npm are not installed")
    lock = (PROJECT / "package-lock.json").read_bytes()
    stamp = CACHE / ".installed"
    digest = hashlib.sha256(lock + (PROJECT / "package.json").read_bytes()).hexdigest()
    native = CACHE / "node_modules/better-sqlite3/build/Release/better_sqlite3.node"
    if stamp.exists() and stamp.read_text() == digest and native.exists():
        return CACHE
    CACHE.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT / "package.json", CACHE / "package.json")
    shutil.copy(PROJECT / "package-lock.json", CACHE / "package-lock.json")
    done = subprocess.run([str(npm), "ci", "--no-audit", "--no-fund"], cwd=CACHE,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    if done.returncode != 0:
        _missing(f"npm ci failed: {done.stderr[-2000:]}")
    if not native.exists():
        gyp = (
            Path(os.path.realpath(str(npm))).parent.parent / "node_modules/node-gyp/bin/node-gyp.js"
        )
        headers = ["--nodedir=/usr"] if Path("/usr/include/node/node.h").exists() else []
        built = subprocess.run([str(node), str(gyp), "rebuild", "--release", *headers],
                               cwd=native.parents[2], capture_output=True, text=True,
                               timeout=900)  # fmt: skip
        if built.returncode != 0 or not native.exists():
            _missing(f"better-sqlite3 could not be built: {built.stderr[-2000:]}")
    stamp.write_text(digest)
    return CACHE


@dataclass
class ODataServer:
    """A running `cds-serve`: its Property collection URL, and writes through OData."""

    base: str
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"{self.base}/odata/Property"

    @property
    def events_url(self) -> str:
        return f"{self.base}/odata/EntityEvent"

    def event(self, sequence: int, key: str, resource: str = "Property") -> None:
        """Append an event to the EntityEvent log."""
        record = {"EntityEventSequence": sequence, "ResourceName": resource,
                  "ResourceRecordKey": key}  # fmt: skip
        response = httpx.post(self.events_url, json=record, timeout=10)
        assert response.status_code == 201, response.text

    def delete(self, key: str) -> None:
        response = httpx.delete(f"{self.url}('{key}')", timeout=10)
        assert response.status_code == 204, response.text

    def patch(self, key: str, **fields: Any) -> None:
        response = httpx.patch(f"{self.url}('{key}')", json=fields, timeout=10)
        assert response.status_code in (200, 204), response.text

    def post(self, record: dict[str, Any]) -> None:
        response = httpx.post(self.url, json=record, timeout=10)
        assert response.status_code == 201, response.text


@contextmanager
def serving(
    folder: Path, rows: Sequence[dict[str, Any]], *, max_page: int
) -> Iterator[ODataServer]:
    """Serve `rows` as the Property collection; `max_page` is the server's own page limit
    (`cds.query.limit.max`): below the client's page size it pages by nextLink."""
    cache = install()
    project = folder / "odata"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("node_modules"))
    (project / "node_modules").symlink_to(cache / "node_modules")
    data = project / "db" / "data" / "reso-Property.csv"
    data.parent.mkdir(parents=True, exist_ok=True)
    with data.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    port = free_port()
    config = ('{"requires":{"db":{"kind":"sqlite","credentials":{"url":":memory:"}}},'
              f'"query":{{"limit":{{"max":{max_page},"default":{max_page}}}}},'
              '"log":{"levels":{"cds":"warn","serve":"warn","odata":"warn"}}}')  # fmt: skip
    env = {**os.environ, "CDS_CONFIG": config, "NODE_ENV": "development"}
    log = (folder / "cds.log").open("wb")
    process = subprocess.Popen(
        [str(project / "node_modules/.bin/cds-serve"), "--port", str(port)],
        cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/odata/Property?$top=1", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((folder / "cds.log").read_text()[-3000:])
            time.sleep(0.2)
        yield ODataServer(base, process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()

"""Serve the test catalogue for the TypeScript SDK's tests; print where, with keys, as JSON.

Run with the project's Python (/work/main/.venv/bin/python). It builds the test catalogue
(tests/factories.py, 42 records, one address in two ZIP codes) into a fresh SQLite store,
exports a snapshot of it (`propdata data export`),
makes keys with the `propdata keys` command line (run in this process through Typer's
runner, as tests/test_cli.py does, to spare an interpreter start per key), serves the store
with `propdata serve` on a free port and prints one JSON line:

    {"baseUrl": ..., "keys": {"main": ..., "free": ..., "quota": ..., "revoked": ...,
     "minute": ..., "pro": ...},
     "cli": [python, "-m", "propdata"], "env": {"PROPDATA_DATABASE_URL": ...}}

then waits until its standard input closes (or SIGTERM), stops the server and deletes the
store. `cli` and `env` let a test run operator commands (`keys plan`) on the same store.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.conftest import build_store, new_store  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from propdata.cli import app  # noqa: E402

CLI = [sys.executable, "-m", "propdata"]
KEYS = {
    "main": ["--plan", "enterprise", "--per-minute", "1000000", "--daily", "100000000"],
    "free": ["--plan", "free"],
    "quota": ["--plan", "enterprise", "--daily", "1"],
    "revoked": ["--plan", "developer"],
    "minute": ["--plan", "enterprise", "--per-minute", "1"],
    "pro": ["--plan", "pro"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(env: dict[str, str], args: list[str], stdin: str | None = None) -> str:
    """Run `propdata ARGS`; its standard output's last line."""
    result = CliRunner().invoke(app, args, env=env, input=stdin)
    if result.exit_code != 0:
        raise RuntimeError(f"propdata {' '.join(args[:2])} failed: {result.stderr}")
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def wait_healthy(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("propdata serve exited")
        try:
            with urllib.request.urlopen(base + "/health", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("propdata serve did not answer /health within 30 s")


def main() -> None:
    # The caller's PROPDATA_* (the Makefile's database, CI's Redis, the base URL and key of
    # another server) must not reach this store's commands and server.
    for name in [name for name in os.environ if name.startswith("PROPDATA_")]:
        del os.environ[name]
    folder = Path(tempfile.mkdtemp(prefix="propdata-ts-"))
    server: subprocess.Popen[bytes] | None = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        store = asyncio.run(new_store("embedded", folder))
        asyncio.run(build_store(store))
        env = {**os.environ, **store.env(), "PROPDATA_CACHE_TTL": "0",
               "PROPDATA_AS_OF": "2026-11-21", "PROPDATA_LOG_LEVEL": "ERROR",
               "PROPDATA_EXPORT_DIR": str(folder / "exports")}  # fmt: skip
        cli(env, ["data", "export"])  # a snapshot for the exports' tests
        keys = {name: cli(env, ["keys", "create", "--name", f"ts-{name}", *args])
                for name, args in KEYS.items()}  # fmt: skip
        cli(env, ["keys", "revoke", "-"], stdin=keys["revoked"] + "\n")
        port = free_port()
        server = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env)
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, server)
        print(json.dumps({"baseUrl": base, "keys": keys, "cli": CLI, "env": store.env()}),
              flush=True)  # fmt: skip
        sys.stdin.read()  # until the test runner closes it or goes away
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

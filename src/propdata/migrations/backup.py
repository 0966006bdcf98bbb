"""Back up a live embedded store, and restore it, with SQLite's online backup.

An embedded install is three SQLite files: the data (`propdata.db`), its accounts
(`propdata-accounts.db`: plans and keys) and the usage counters (`propdata-usage.db`).
`backup` copies the first two, while servers and loads run, as one consistent snapshot each
(SQLite's backup API reads it in one step, under a read transaction: writers go on). The
copies take the same names beside the target, so a backup is itself a store:
PROPDATA_DATABASE_URL=backup.db serves it.

`restore` writes a backup over a store's files the same way (waiting for a load's write
lock if one runs), and moves the data version past the one the store had, so no answer
cached for the store's later data can be served for the restored data.

The usage file is not part of a backup: it holds rolling windows of the last 24 hours and
hourly counts of the last 32 days (the dashboard's charts), and each limiter process keeps its
own map of it, which a file written under it would break. After a restore, keys go on from the
counts they have.

PostgreSQL has its own tools: docs/deploy.md, "Backups".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from propdata.config import accounts_url


@dataclass(frozen=True, slots=True)
class Copied:
    """One file of a backup or a restore."""

    part: str
    """"data" or "accounts"."""
    source: Path
    target: Path
    pages: int


def parts(database_url: str) -> dict[str, Path]:
    """The files of the embedded store at `database_url` a backup holds, by part."""
    if database_url.startswith(("postgresql://", "postgres://")):
        raise ValueError("backup and restore are for the embedded store; see docs/deploy.md")
    data = Path(database_url.removeprefix("sqlite:///").removeprefix("sqlite://"))
    return {"data": data, "accounts": Path(accounts_url(str(data)))}


def _copy(source: Path, target: Path, progress: Callable[[int, int], None] | None) -> int:
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.execute("PRAGMA busy_timeout=30000")
        dst.execute("PRAGMA busy_timeout=30000")  # a restore waits for a load's write lock
        copied: list[int] = [0]

        def step(status: int, remaining: int, total: int) -> None:
            copied[0] = total
            if progress is not None:
                progress(total - remaining, total)

        src.backup(dst, pages=-1, progress=step)  # one step: one consistent snapshot
        return copied[0]
    finally:
        dst.close()
        src.close()


def backup(
    database_url: str, target: Path, progress: Callable[[int, int], None] | None = None
) -> list[Copied]:
    """Copy the live embedded store at `database_url` to `target` (and its siblings)."""
    sources = parts(database_url)
    targets = parts(str(target))
    if not sources["data"].exists():
        raise FileNotFoundError(f"no store at {sources['data']}")
    target.parent.mkdir(parents=True, exist_ok=True)
    done = []
    for part, source in sources.items():
        if source.exists():
            done.append(Copied(part, source, targets[part], _copy(source, targets[part], progress)))
    _check(targets["data"])
    return done


def restore(
    source: Path, database_url: str, progress: Callable[[int, int], None] | None = None
) -> list[Copied]:
    """Write the backup at `source` (and its siblings) over the store at `database_url`."""
    sources = parts(str(source))
    targets = parts(database_url)
    _check(sources["data"])
    before = _data_version(targets["data"])
    targets["data"].parent.mkdir(parents=True, exist_ok=True)
    done = []
    for part, path in sources.items():
        if path.exists():
            done.append(Copied(part, path, targets[part], _copy(path, targets[part], progress)))
    restored = _data_version(targets["data"])
    conn = sqlite3.connect(targets["data"])
    try:
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'data_version'",
            (str(max(before, restored) + 1),),
        )
        conn.commit()
    finally:
        conn.close()
    return done


def _data_version(path: Path) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'data_version'").fetchone()
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()
    return int(row[0]) if row else 0


def _check(path: Path) -> None:
    """Refuse a file that is not a whole SQLite store of ours."""
    if not path.exists():
        raise FileNotFoundError(f"no store at {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path} is not a SQLite store: {exc}") from exc
    finally:
        conn.close()
    if verdict != "ok":
        raise ValueError(f"{path} fails SQLite's check: {verdict}")
    if not {"meta", "properties"} <= tables:
        raise ValueError(f"{path} is not a propdata store (no properties table)")

"""Search index snapshots: written once per data version, memory-mapped by every worker.

Why: building the search index means reading the whole `properties` table (5-10 s and about
58 MB of heap at 1,000,000 properties), which no worker should do for itself. A snapshot is
the index's arrays in files; every worker of a host maps the same files read-only, so the
kernel keeps one copy of their pages in its page cache for all of them, and a worker that
starts finds its index in milliseconds. Two parts are read with pread instead of mapped, so
that what a worker reads of them never stays in its resident memory: the search items
(`items.bin`, 333 MB at 1,000,000 properties) and the groups (`arrays.Group`).

Layout, in one folder per host (`Settings.index_path`):

    <store_id>-<data_version>/index.json     the manifest, written last
    <store_id>-<data_version>/<array>.npy    one numpy file per array
    <store_id>-<data_version>/items.bin      every row's search item, encoded (items.py)
    <store_id>-<data_version>.lock           held (flock) by the worker that builds it,
                                             and by its child process doing the work

A snapshot is built and written by a child process of that worker (`build_snapshot`), so
that the build's heap never stays in a worker. It is written into a temporary folder, each
file fsynced, then renamed into place and the parent folder fsynced: a crash mid-write never
leaves a folder that looks complete.
The manifest names every file with its dtype, shape, length and CRC-32, and a snapshot that
disagrees with it in any way (a file missing, truncated or changed) is never served: the
service builds it again from the table. Old versions go once a newer one is in use, but
those superseded less than `KEEP_SECONDS` ago stay (at most `KEEP_OLDER` of them): a cursor
walk that began on one goes on in its order (`search.keeper`). The newest older one
always stays, for workers still mapping it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from propdata.kit.flock import try_lock
from propdata.search.arrays import Group
from propdata.search.filters import CATEGORICAL, NUMERIC, SORT_COLUMNS
from propdata.search.index import GROUPED, SearchIndex
from propdata.search.items import ItemFile, crc_of

FORMAT = 6
"""Bumped whenever the arrays or their meaning change: an older snapshot is then rebuilt."""
ITEMS = "items.bin"
"""The encoded search items (`search.items`), beside the arrays; `item_offsets.npy`
says where each row's starts."""
MANIFEST = "index.json"
KEEP_OLDER = 3
"""Superseded versions of a store kept at most."""
KEEP_SECONDS = 3600.0
"""How long a superseded version is kept after its successor was written."""
_CHUNK = 1 << 20
_SAFE = re.compile(r"[^A-Za-z0-9_]")

log = logging.getLogger("propdata")


def _name(namespace: str) -> tuple[str, int]:
    """(store part, data version) of a `store_id.data_version` namespace."""
    store, _, version = namespace.rpartition(".")
    return _SAFE.sub("_", store), int(version)


def _arrays(index: SearchIndex) -> dict[str, npt.NDArray[Any]]:
    arrays: dict[str, npt.NDArray[Any]] = {
        "id_bytes": index.id_bytes,
        "id_offsets": index.id_offsets,
        "updated_rank": index.updated_rank,
        "latitude": index.latitude,
        "longitude": index.longitude,
        "geo_order": index.geo_order,
        "geo_keys": index.geo_keys,
        "updated": index.updated,
    }
    arrays.update({f"cat.{name}": index.cats[name] for name in CATEGORICAL})
    arrays.update({f"num.{name}": index.nums[name] for name in NUMERIC})
    arrays.update({f"order.{column}": index.orders[column] for column in SORT_COLUMNS.values()})
    for name in GROUPED:
        rows = index.groups[name].rows
        assert rows is not None, "a snapshot is written from a built index"
        arrays[f"group.{name}"] = rows
    arrays.update({f"group_start.{name}": index.group_starts[name] for name in GROUPED})
    if index.item_offsets is not None:
        arrays["item_offsets"] = index.item_offsets
    return arrays


_crc = crc_of


def _fsync_folder(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _group(
    arrays: dict[str, npt.NDArray[Any]], starts: dict[str, tuple[Path, int]], key: str
) -> Group:
    """A group read from its file with pread (its map is dropped: see `arrays.Group`)."""
    rows = arrays.pop(key)
    if rows.dtype.str != "<i4":
        raise Damaged(f"{key} is {rows.dtype.str}, not <i4")
    file, start = starts[key]
    return Group(None, file, start, len(rows))


class Damaged(ValueError):
    """A snapshot folder that does not match its manifest."""


class BuildLock:
    """An exclusive, non-blocking flock on one version's lock file. The kernel drops it when
    its holder exits, so a worker that dies while building never blocks the others."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """True when this holder has it now; False while another process (or another holder
        in this one) does. OSError when the folder cannot be written."""
        fd = try_lock(self.path, 0o644)
        if fd is None:
            return False
        self._fd = fd
        return True

    def fileno(self) -> int:
        """The lock file's descriptor, while held: a child process given it (`pass_fds`)
        holds the same lock until it exits, even if this holder dies first."""
        assert self._fd is not None, "the lock is held"
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class Snapshots:
    """The snapshots of one host's folder (every store's, each in its own subfolder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, namespace: str) -> Path:
        store, version = _name(namespace)
        return self.folder / f"{store}-{version}"

    def identity(self, namespace: str) -> tuple[int, int] | None:
        """(inode, change time) of the version's folder, None when there is none: a folder
        found damaged is not read again until a new one replaces it."""
        try:
            found = self.path(namespace).stat()
        except OSError:
            return None
        return found.st_ino, found.st_ctime_ns

    def newest(self, namespace: str) -> str | None:
        """The namespace of this store's newest snapshot folder up to `namespace`'s data
        version, None when there is none (whether it loads is `load`'s to say)."""
        store, version = _name(namespace)
        pattern = re.compile(rf"{re.escape(store)}-(\d+)")
        found = [int(m[1]) for entry in self.folder.glob(f"{store}-*")
                 if (m := pattern.fullmatch(entry.name)) and int(m[1]) <= version]  # fmt: skip
        return f"{namespace.rpartition('.')[0]}.{max(found)}" if found else None

    def position(self, namespace: str) -> tuple[int, str | None] | None:
        """The change-feed position a version's snapshot was made at and that entry's mark,
        from its manifest alone (nothing mapped or checked); None when there is none this
        version of the service reads."""
        try:
            manifest = json.loads((self.path(namespace) / MANIFEST).read_bytes())
            if manifest.get("format") != FORMAT or manifest["namespace"] != namespace:
                return None
            return int(manifest["feed"]), manifest["mark"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def host_lock(self, namespace: str) -> BuildLock:
        """The lock of any build of this store's snapshots on this host: one at a time,
        whichever version each starts from (the folder is made when missing)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return BuildLock(self.folder / f"{_name(namespace)[0]}.build.lock")

    def lock(self, namespace: str) -> BuildLock:
        """The lock of one version (the folder is made when missing)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return BuildLock(self.path(namespace).with_suffix(".lock"))

    # -- reading -------------------------------------------------------------------------

    def load(self, namespace: str) -> SearchIndex | None:
        """The snapshot of this data version, its arrays mapped read-only; None when there is
        none, or when it is damaged (logged: it is built again, never served)."""
        path = self.path(namespace)
        if not path.exists():
            return None
        try:
            return self._load(path, namespace)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("search index snapshot %s is unusable (%s); building it again", path, exc)
            return None

    def _load(self, path: Path, namespace: str) -> SearchIndex:
        manifest = json.loads((path / MANIFEST).read_bytes())
        if manifest.get("format") != FORMAT:
            raise Damaged(f"format {manifest.get('format')}, this version reads {FORMAT}")
        if manifest["namespace"] != namespace:
            raise Damaged(f"made for {manifest['namespace']}")
        size = int(manifest["size"])
        arrays: dict[str, npt.NDArray[Any]] = {}
        starts: dict[str, tuple[Path, int]] = {}
        """Each array's file and where in it the array begins (groups are read there)."""
        for key, spec in manifest["arrays"].items():
            file = path / spec["file"]
            length = file.stat().st_size
            if length != spec["bytes"]:
                raise Damaged(f"{spec['file']} holds {length} bytes, not {spec['bytes']}")
            if _crc(file) != spec["crc32"]:
                raise Damaged(f"{spec['file']} does not match its checksum")
            mapped = np.load(file, mmap_mode="r", allow_pickle=False)
            if mapped.dtype.str != spec["dtype"] or list(mapped.shape) != spec["shape"]:
                raise Damaged(f"{spec['file']} is {mapped.dtype.str} {mapped.shape}")
            arrays[key] = mapped.view(np.ndarray)  # the plain array type over the same map
            starts[key] = (file, mapped.offset)
        codes = {name: {value: code for code, value in enumerate(values)}
                 for name, values in manifest["codes"].items()}  # fmt: skip
        placed = len(arrays["geo_order"])
        lengths = {"id_bytes": len(arrays["id_bytes"]), "id_offsets": size + 1,
                   "geo_order": placed, "geo_keys": placed, "item_offsets": size + 1,
                   **{f"group_start.{name}": len(codes[name]) + 1 for name in GROUPED}}  # fmt: skip
        for key, array in arrays.items():
            expected = lengths.get(key, size)
            if len(array) != expected:
                raise Damaged(f"{key} has {len(array)} entries, not {expected}")
        items = None
        offsets = arrays.get("item_offsets")
        spec = manifest.get("items")
        if spec is not None and offsets is not None:
            file = path / spec["file"]
            length = file.stat().st_size
            if length != spec["bytes"] or (size and int(offsets[-1]) != length):
                raise Damaged(f"{spec['file']} holds {length} bytes, not {spec['bytes']}")
            items = ItemFile(file, offsets, spec["crc32"])
        return SearchIndex(
            namespace=namespace, size=size, id_bytes=arrays["id_bytes"],
            id_offsets=arrays["id_offsets"], codes=codes,
            cats={name: arrays[f"cat.{name}"] for name in CATEGORICAL},
            nums={name: arrays[f"num.{name}"] for name in NUMERIC},
            orders={c: arrays[f"order.{c}"] for c in SORT_COLUMNS.values()},
            known={c: int(manifest["known"][c]) for c in SORT_COLUMNS.values()},
            groups={name: _group(arrays, starts, f"group.{name}") for name in GROUPED},
            group_starts={name: arrays[f"group_start.{name}"] for name in GROUPED},
            updated_rank=arrays["updated_rank"], latitude=arrays["latitude"],
            longitude=arrays["longitude"], geo_order=arrays["geo_order"],
            geo_keys=arrays["geo_keys"], item_offsets=offsets, items=items,
            updated=arrays["updated"], feed=int(manifest["feed"]), mark=manifest["mark"],
            exact=bool(manifest["exact"]),
        )  # fmt: skip

    # -- writing (under the version's BuildLock) ----------------------------------------

    def draft(self, namespace: str) -> Path:
        """A new temporary folder for this version's snapshot (leftovers of a builder that
        died are removed first): the build writes its search items there (`ITEMS`), then
        `write` the arrays. Call while holding the version's lock."""
        final = self.path(namespace)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers(final.name)
        return Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=self.folder))

    def discard(self, draft: Path) -> None:
        shutil.rmtree(draft, ignore_errors=True)

    def write(self, index: SearchIndex, draft: Path | None = None) -> Path:
        """Write the snapshot of `index` atomically; replace a damaged one in its place.
        `draft`: the folder from `draft` holding the build's search items, if any. Call
        while holding the version's lock."""
        final = self.path(index.namespace)
        temporary = self.draft(index.namespace) if draft is None else draft
        try:
            specs: dict[str, dict[str, Any]] = {}
            items = temporary / ITEMS
            offsets = index.item_offsets
            if items.exists() and (offsets is None or int(offsets[-1]) != items.stat().st_size):
                items.unlink()  # not the items of these rows (a write that failed): none
            if not items.exists():
                index = dataclasses.replace(index, item_offsets=None, items=None)
            for key, array in _arrays(index).items():
                file = temporary / f"{key}.npy"
                with file.open("wb") as f:
                    np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)
                    f.flush()
                    os.fsync(f.fileno())
                specs[key] = {"file": file.name, "dtype": array.dtype.str,
                              "shape": list(array.shape), "bytes": file.stat().st_size,
                              "crc32": _crc(file)}  # fmt: skip
            manifest: dict[str, Any] = {
                "format": FORMAT, "namespace": index.namespace, "size": index.size,
                "known": index.known, "arrays": specs, "feed": index.feed, "mark": index.mark, "exact": index.exact,
                "codes": {name: list(codes) for name, codes in index.codes.items()},
            }  # fmt: skip
            if items.exists():
                with items.open("rb+") as f:
                    os.fsync(f.fileno())
                manifest["items"] = {"file": ITEMS, "bytes": items.stat().st_size,
                                     "crc32": _crc(items)}  # fmt: skip
            with (temporary / MANIFEST).open("w") as f:
                json.dump(manifest, f)
                f.flush()
                os.fsync(f.fileno())
            _fsync_folder(temporary)
            if final.exists():  # damaged (a sound one is loaded, not written): set it aside
                final.rename(self.folder / f".old-{final.name}-{os.getpid()}")
            temporary.rename(final)
            _fsync_folder(self.folder)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        self._remove_leftovers(final.name)
        return final

    def _remove_leftovers(self, name: str) -> None:
        """Temporary and set-aside folders of this version (its lock is held)."""
        for prefix in (".tmp-", ".old-"):
            for stale in self.folder.glob(f"{prefix}{name}-*"):
                shutil.rmtree(stale, ignore_errors=True)

    # -- pruning -------------------------------------------------------------------------

    def _recent(self, store: str, version: int, older: set[int]) -> list[int]:
        """The older versions to keep: newest first, while their successor (the next newer
        snapshot, whose folder's time is when it was written) is recent enough."""
        present = sorted(v for v in older if self.path(f"{store}.{v}").is_dir())
        chain = [*present, version]
        now = time.time()
        kept: list[int] = []
        for at in range(len(present) - 1, -1, -1):
            try:
                since = self.path(f"{store}.{chain[at + 1]}").stat().st_mtime
            except OSError:
                since = now
            if len(kept) >= KEEP_OLDER or (kept and now - since >= KEEP_SECONDS):
                break
            kept.append(present[at])
        return kept

    def prune(self, namespace: str) -> list[Path]:
        """Once `namespace` is in use, remove this store's older snapshots, with their locks
        and leftovers, but the newest of them and those superseded less than KEEP_SECONDS
        ago (KEEP_OLDER at most). A version being built (its lock held) is left alone;
        workers still mapping a removed one keep their map (the files go when the last map
        does). Returns what was removed."""
        store, version = _name(namespace)
        pattern = re.compile(rf"{re.escape(store)}-(\d+)(\.lock)?")
        older: set[int] = set()
        for entry in self.folder.glob(f"{store}-*"):
            found = pattern.fullmatch(entry.name)
            if found and int(found[1]) < version:
                older.add(int(found[1]))
        removed: list[Path] = []
        kept = self._recent(store, version, older)
        for old in sorted(older - set(kept)):
            path = self.path(f"{store}.{old}")
            lock = BuildLock(path.with_suffix(".lock"))
            try:
                if not lock.acquire():
                    continue
            except OSError:
                continue
            try:
                self._remove_leftovers(path.name)
                if path.exists():
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
                with contextlib.suppress(OSError):
                    lock.path.unlink()
            finally:
                lock.release()
        return removed

"""Search items: a row's wire shape, and the encoded items a search index snapshot keeps.

Why: a search page is up to 100 items of random rows. Reading them from the store was a
`WHERE id IN (...)` of up to 100 ids (at 1,000,000 properties, a B-tree descent each in a
2 GB file, or a round trip to PostgreSQL), then a struct per row and the encoding of them
all: a third of a search request's CPU. A snapshot is one data version, so it can keep
every row's item already encoded as the API answers it; a page is then its items' bytes
joined (`ItemFile.page`), byte for byte what encoding the rows' structs gives.

Each item is kept as its JSON without `distanceMiles` and without its closing `}`: a radius
search's page appends `,"distanceMiles":` with the distance and `}`, any other page only `}`
(`distanceMiles` is on radius searches' items only). The file is read with `pread`, not mapped: its pages
stay in the host's page cache, shared by every worker, and never count in a worker's
resident memory (a mapped file's touched pages would, up to its 300 MB at 1,000,000).
"""

from __future__ import annotations

import logging
import os
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from propdata.properties.schemas import ShortAddress
from propdata.search.repository import SearchRow
from propdata.search.schemas import PropertySearchItem

_TAIL = b"}"
"""What closes a kept item on a page without a radius."""
_DISTANCE = b',"distanceMiles":'
"""What a radius search's page adds to a kept item, before the distance."""
_encode = msgspec.json.Encoder().encode
VERIFY_INLINE = 16 << 20
"""Bytes of items checked before the index is used; a larger file is checked on a thread."""
_CHUNK = 1 << 20

log = logging.getLogger("propdata")


def crc_of(path: Path) -> int:
    """CRC-32 of a file, read in chunks through one buffer (not mapped: no resident pages)."""
    crc = 0
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as f:
        while n := f.readinto(buffer):
            crc = zlib.crc32(view[:n], crc)
    return crc


def search_item(r: SearchRow, distance: float | msgspec.UnsetType) -> PropertySearchItem:
    """The wire item of a row (`distance`: miles, already rounded; UNSET off a radius
    search, and in the kept form)."""
    return PropertySearchItem(
        id=r.id, status=r.status, list_price=r.list_price,
        address=ShortAddress(street_address=r.street_address, city=r.city, state=r.state,
                             zip_code=r.zip_code),
        bedrooms_total=r.bedrooms, bathrooms_total=r.bathrooms, living_area=r.living_area,
        days_on_market=r.days_on_market, last_sale_price=r.last_sale_price,
        last_sale_date=r.last_sale_date, last_updated=r.last_updated, distance_miles=distance,
    )  # fmt: skip


def encoded(rows: Sequence[SearchRow]) -> list[bytes]:
    """Each row's item as kept in a snapshot: its JSON without its closing `}`."""
    out = []
    for r in rows:
        item = _encode(search_item(r, msgspec.UNSET))
        assert item.endswith(_TAIL)
        out.append(item[: -len(_TAIL)])
    return out


class ItemFile:
    """The encoded items of one snapshot: `path` holds them back to back in position order,
    `offsets` (size + 1 entries, mapped) where each starts.

    Not usable (`ready` False) until the file's CRC-32 matches the manifest's: checked at
    once for a small file, on a thread for a large one (0.2 s at 300 MB), so a worker's
    start waits for neither; searches read their items from the store meanwhile."""

    def __init__(self, path: Path, offsets: npt.NDArray[Any], crc32: int) -> None:
        self.path = path
        self.offsets = offsets
        self.ready = False
        self._checking: threading.Thread | None = None
        if path.stat().st_size <= VERIFY_INLINE:
            self._verify(crc32)
        else:
            self._checking = threading.Thread(target=self._verify, args=(crc32,), daemon=True)
            self._checking.start()

    def verified(self) -> bool:
        """Whether the file matches its checksum, once the check is over (waits for it)."""
        if self._checking is not None:
            self._checking.join()
        return self.ready

    def _verify(self, crc32: int) -> None:
        try:
            found = crc_of(self.path)
        except OSError as exc:  # removed meanwhile (pruned): never used
            log.warning(
                "search items %s unreadable (%s); items come from the store", self.path, exc
            )
            return
        if found != crc32:
            log.warning("search items %s do not match their checksum; items come from the"
                        " store", self.path)  # fmt: skip
            return
        self.ready = True

    def read(self, positions: npt.NDArray[Any]) -> list[bytes]:
        """These rows' encoded items, in this order (see `join`)."""
        starts = self.offsets[positions].tolist()
        ends = self.offsets[positions + 1].tolist()
        fd = os.open(self.path, os.O_RDONLY)  # not kept: no descriptor outlives a page
        try:
            read = os.pread
            return [read(fd, e - s, s) for s, e in zip(starts, ends, strict=True)]
        finally:
            os.close(fd)

    def page(self, positions: npt.NDArray[Any], distances: Sequence[float] | None) -> bytes:
        """The JSON array of these rows' items (`read`, then `join`)."""
        return join(self.read(positions), distances)


def join(parts: list[bytes], distances: Sequence[float] | None) -> bytes:
    """The JSON array of kept items, each with its distance (rounded to two places, as the
    API shows them) when given, else without one."""
    if distances is None:
        return b"[" + b"},".join(parts) + (b"}]" if parts else b"]")
    tails = [_DISTANCE + _encode(round(d, 2)) + _TAIL for d in distances]
    return b"[" + b",".join(p + t for p, t in zip(parts, tails, strict=True)) + b"]"


def decode(part: bytes) -> PropertySearchItem:
    """One encoded item, decoded (the last of a page, for its cursor)."""
    return msgspec.json.decode(part + _TAIL, type=PropertySearchItem)


def offsets_of(lengths: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """Where each item starts, from their lengths (int32 while the file is below 2 GB)."""
    total = int(lengths.sum()) if len(lengths) else 0
    offsets = np.zeros(len(lengths) + 1, np.int32 if total < 2**31 else np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets

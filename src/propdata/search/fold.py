"""A live index folded into one: the next snapshot's index, made from the last one.

Why: past the fold rule (`live.fold_due`) the host's next snapshot was read from the whole
table again (11 s of CPU at 1,000,000 properties). The snapshot's rows and the changes
since, read as a worker reads them (`live.Delta`), are already the next version's rows;
merged here they are, array for array, what a read of the table gives, for the cost of
the sorts and a copy of the search items (`build_snapshot.fold_newest`).
"""

from __future__ import annotations

import errno
import logging
import os
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from propdata.search import items as search_items
from propdata.search.index import SearchIndex
from propdata.search.indexer import IndexBuilder
from propdata.search.live import LiveIndex

Positions = npt.NDArray[np.int64]
_COPY = 1 << 20
"""Bytes of the base's search items copied a read at most, where the kernel cannot (`_copy`)."""
_NO_KERNEL_COPY = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP)

log = logging.getLogger("propdata")


def fold(view: LiveIndex, mark: str | None, items: BinaryIO | None = None) -> SearchIndex:
    """`view`'s rows as one index (`mark`: the change feed's entry at its position, as
    `SearchIndex.mark`), the rows a build from the table at its version reads: the
    base's alive rows and the delta's, merged in id order by their id keys, every sort
    order made again. With `items` (a file open for writing, written through its
    descriptor) the rows' search items go there in that order: the base's copied by runs
    of consecutive rows, the delta's as they are. No row is read from the store or encoded
    again, so a new snapshot costs the sorts (`build_snapshot.fold_newest`).

    Codes of categories no row holds any more stay, with no rows: an equality filter on
    one matches nothing, as on an index that never had it."""
    base, delta = view.base, view.delta
    kept = (
        np.arange(base.size, dtype=np.int64) if view.alive is None else np.flatnonzero(view.alive)
    )
    builder = IndexBuilder(view.namespace)
    builder.absorb(base, kept)
    builder.absorb(delta, np.arange(delta.size, dtype=np.int64))
    order = np.argsort(np.concatenate([kept.astype(np.float64), view.id_keys]), kind="stable")
    index = builder.finish(order)
    if items is not None and base.items is not None and base.item_offsets is not None:
        live = np.concatenate([kept, base.size + np.arange(delta.size, dtype=np.int64)])[order]
        try:
            lengths = _copy_items(view, live, items)
        except OSError as exc:  # a full disk, say: the snapshot goes without its items
            log.warning("could not write the search items (%s); searches read them from the"
                        " store", exc)  # fmt: skip
        else:
            index.item_offsets = search_items.offsets_of(lengths)
    index.feed, index.mark, index.exact = view.feed, mark, view.exact
    return index


def _copy_items(view: LiveIndex, live: Positions, out: BinaryIO) -> Positions:
    """Write the search items of the rows at `live` (positions in `view`: the base's, then
    the delta's after `base.size`) to `out` in that order: their lengths."""
    base = view.base
    assert base.items is not None and base.item_offsets is not None
    if not base.items.verified():
        raise OSError(f"{base.items.path} does not match its checksum")
    offsets = base.item_offsets
    ours = live < base.size
    lengths = np.empty(len(live), np.int64)
    at = live[ours]
    lengths[ours] = offsets[at + 1].astype(np.int64) - offsets[at]
    added = view.delta_items
    lengths[~ours] = np.fromiter(map(len, added), np.int64, count=len(added))[
        live[~ours] - base.size
    ]
    joined = ours[1:] & ours[:-1] & (np.diff(live) == 1)
    starts = np.flatnonzero(np.concatenate([[True], ~joined])).tolist()
    ends = [*starts[1:], len(live)]
    out.flush()
    target = out.fileno()
    source = os.open(base.items.path, os.O_RDONLY)
    try:
        for first, end in zip(starts, ends, strict=True):
            row = int(live[first])
            if row >= base.size:  # a delta row: a run of its own
                _write(target, added[row - base.size])
                continue
            _copy(source, target, int(offsets[row]), int(offsets[int(live[end - 1]) + 1]))
    finally:
        os.close(source)
    return lengths


def _copy(source: int, target: int, begin: int, stop: int) -> None:
    """Bytes `begin` to `stop` of `source` onto `target` at its position: in the kernel
    (`copy_file_range`), else through this process where the file system cannot."""
    while begin < stop:
        try:
            copied = os.copy_file_range(source, target, stop - begin, begin)
        except OSError as exc:
            if exc.errno not in _NO_KERNEL_COPY:
                raise
            chunk = os.pread(source, min(_COPY, stop - begin), begin)
            _write(target, chunk)
            copied = len(chunk)
        if not copied:
            raise OSError(f"the search items end at {begin}, before their offsets say")
        begin += copied


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]

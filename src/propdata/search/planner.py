"""Which engine answers a search: the index of the walk's data version, else SQL."""

from __future__ import annotations

from propdata.search.cursor import Cursor
from propdata.search.engines import Engine, IndexEngine, SqlEngine
from propdata.search.keeper import IndexKeeper
from propdata.search.repository import SearchRepository


async def plan(
    indexes: IndexKeeper,
    sql: SqlEngine,
    repo: SearchRepository,
    namespace: str,
    walk: Cursor | None,
) -> list[Engine]:
    """The engines to ask in turn, the first that answers giving the page.

    The current index when it is made for `namespace` or a newer version (asking for it
    starts its making when it is not, and waits a moment for it: `IndexKeeper.find`, which
    gives the newest one made when the wait runs out: the page is then of that version); for
    a cursor walk begun under another data version, that version's
    index while this worker keeps it or the host's snapshot of it is there, since the walk
    follows that version's order. SQL last, always: by offset, or by keyset from the
    walk's last row on the current data (docs/api.md, "Cursor paging").
    """
    index = await indexes.find(namespace)
    store, _, version = namespace.rpartition(".")
    if walk is not None and walk.version != int(version or 0):  # a load landed meanwhile
        index = await indexes.walk_index(f"{store}.{walk.version}")
    elif index is not None and index.version < int(version or 0):  # the newer one is late
        return [IndexEngine(index, repo, index.namespace), sql]
    if index is None:
        return [sql]
    return [IndexEngine(index, repo, namespace), sql]

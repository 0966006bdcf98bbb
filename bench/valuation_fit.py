"""Time a valuation rebuild's compute half on a store:
`python bench/valuation_fit.py STORE [--boost-rounds N]`.

Reads the stock (`read_stock`) and fits and values both models (`_value_both`), nothing
written; prints the two wall times and the process's CPU time (less moved by other jobs
on a shared machine). Run it for two checkouts side by side on one store (each
with its own `PYTHONPATH=src`) to compare them in one run, or with `--boost-rounds 0`
beside the default to measure the second stage (`valuation.boost`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import time
from dataclasses import replace

from propdata.kit.db import connect
from propdata.valuation import rebuild
from propdata.valuation.homes import Params
from propdata.valuation.stock import read_stock

AS_OF = dt.date(2026, 1, 15)


async def main(store: str, params: Params) -> None:
    db = await connect(store)
    cpu = time.process_time()
    try:
        started = time.perf_counter()
        stock = await read_stock(db, AS_OF)
        read = time.perf_counter() - started
        started = time.perf_counter()
        rebuild._value_both(stock, AS_OF, params)
        fit = time.perf_counter() - started
    finally:
        await db.close()
    print(f"{len(stock.ids):,} properties: read {read:.1f} s, fit and value both models"
          f" {fit:.1f} s, total {read + fit:.1f} s, CPU {time.process_time() - cpu:.1f} s")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--boost-rounds", type=int, default=Params().boost_rounds)
    args = parser.parse_args()
    asyncio.run(main(args.store, replace(Params(), boost_rounds=args.boost_rounds)))

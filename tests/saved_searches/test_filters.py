"""A saved search's filters are checked without the web framework: the command-line event
producer, which checks them, loads no Litestar."""

from __future__ import annotations

import subprocess
import sys


def test_the_producer_loads_no_litestar() -> None:
    code = (
        "import sys, propdata.events.produce, propdata.saved_searches.filters;"
        " print(sorted(m for m in sys.modules if m.split('.')[0] in ('litestar', 'starlette')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

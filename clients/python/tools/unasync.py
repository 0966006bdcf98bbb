"""Write the synchronous client (`_sync.py`) from the asynchronous one (`_async.py`).

As encode/httpcore's scripts/unasync.py does: every line of `_async.py` goes through the
substitutions below (`async def` -> `def`, `AsyncClient` -> `Client`, ...), then ruff sorts
the imports and formats the result. Edit `_async.py` only, then run

    python clients/python/tools/unasync.py           # rewrite _sync.py
    python clients/python/tools/unasync.py --check   # exit 1 when _sync.py is not what it makes

`tests/test_unasync.py` fails when the committed `_sync.py` differs from what this makes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "propdata_client"
SOURCE = PACKAGE / "_async.py"
TARGET = PACKAGE / "_sync.py"

DOCSTRING = (
    '"""The synchronous client, `Client`.\n\n'
    "Generated from `_async.py` by `clients/python/tools/unasync.py`: edit that file, not this.\n"
    '"""\n'
)
"""The generated module's docstring, in place of `_async.py`'s."""

SUBS = [
    (r"async def ", "def "),
    (r"async with ", "with "),
    (r"async for ", "for "),
    (r"await ", ""),
    (r"__aenter__", "__enter__"),
    (r"__aexit__", "__exit__"),
    (r"\baclose\(", "close("),
    (r"\baread\(", "read("),
    (r"\baiter_lines\(", "iter_lines("),
    (r"\baiter_bytes\(", "iter_bytes("),
    (r"\bimport asyncio\b", "import time"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bAwaitable\[None\]", "None"),
    (r"\bAwaitable, ", ""),
    (r"\bAn asyncio client\b", "A client"),
    # AsyncClient -> Client, AsyncIterator -> Iterator, AsyncProperties -> Properties, ...
    (r"\bAsync([A-Z]\w*)", r"\1"),
]
"""Line by line, in this order; each must be used, so none outlives the code it was for."""

WHOLE = [
    # An async generator cannot `yield from`; a generator should (ruff's UP028).
    (r"for (\w+) in ([^\n]+):\n(\s+)yield \1\n", r"yield from \2\n"),
]
"""Over the whole text, after the line substitutions."""


def _ruff(*args: str, text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(TARGET), "-"],
        input=text, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def generate(source: str | None = None) -> str:
    """The text of `_sync.py` made from `source` (by default `_async.py`'s)."""
    text = SOURCE.read_text() if source is None else source
    docstring = re.match(r'"""[^\n]*?\n(?:.*?\n)*?"""\n|"""[^\n]*"""\n', text)
    assert docstring, "_async.py starts with its docstring"
    lines = text[docstring.end() :].splitlines(keepends=True)
    used: set[str] = set()
    out: list[str] = []
    for line in lines:
        for pattern, replacement in SUBS:
            line, count = re.subn(pattern, replacement, line)
            if count:
                used.add(pattern)
        out.append(line)
    result = DOCSTRING + "".join(out)
    for pattern, replacement in WHOLE:
        result, count = re.subn(pattern, replacement, result)
        if count:
            used.add(pattern)
    unused = [p for p, _ in SUBS + WHOLE if p not in used]
    assert not unused, f"substitutions no longer used: {unused}"
    result = _ruff("check", "--fix", "--select", "I", "--quiet", "--exit-zero", text=result)
    return _ruff("format", "--quiet", text=result)


def main(argv: list[str]) -> int:
    made = generate()
    if "--check" in argv:
        if TARGET.read_text() != made:
            print(f"{TARGET} is not what {SOURCE.name} makes: run {Path(__file__).name}")
            return 1
        return 0
    TARGET.write_text(made)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

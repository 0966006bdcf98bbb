"""`propdata-client`: the command line of the Python SDK: the MCP server (`mcp`) and the
local webhook forwarder (`listen`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
from collections.abc import Sequence

from propdata_client._version import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="propdata-client", description="The propdata API's Python client."
    )
    parser.add_argument("--version", action="version", version=f"propdata-client {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    mcp = commands.add_parser(
        "mcp",
        help="Run the MCP server (stdio by default)",
        description=(
            "Serve the propdata API to AI agents over the Model Context Protocol. The key, "
            "the API's address and the HTTP token come from PROPDATA_API_KEY, "
            "PROPDATA_BASE_URL and PROPDATA_MCP_TOKEN (secrets in the environment, never on "
            "the command line, where ps shows them to every user). Needs the extra: pip "
            "install 'propdata-client[mcp]'."
        ),
    )
    mcp.add_argument("--http", action="store_true",
                     help="Serve streamable HTTP instead of stdio")  # fmt: skip
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8808, help="HTTP port (default 8808)")
    mcp.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    mcp.add_argument(
        "--token",
        default=None,
        help="The bearer token HTTP clients must send. Set PROPDATA_MCP_TOKEN instead: a "
        "value on the command line is visible to every user of this machine (ps). On a "
        "loopback address without either, a token is made and printed at start",
    )
    mcp.add_argument("--allow-host", action="append", default=[], metavar="HOST[:PORT]",
                     help="Another Host header to accept, e.g. mcp.example.com:443")  # fmt: skip
    mcp.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                     help="A browser origin to accept, e.g. https://app.example.com")  # fmt: skip
    mcp.add_argument(
        "--max-retry-wait",
        type=float,
        default=10.0,
        help="Longest Retry-After (seconds) a tool waits out before answering with an error "
        "that names the wait (default 10)",
    )
    listen = commands.add_parser(
        "listen",
        help="Forward the account's events to a local URL as signed webhooks",
        description=(
            "Follow the event stream and POST each event to --forward-to as a webhook "
            "delivery would (the event's JSON, Standard Webhooks headers), signed with a "
            "secret printed at start (or PROPDATA_LISTEN_SECRET's), so a receiver on this "
            "machine gets webhooks without a public address. The key and the API's address "
            "come from PROPDATA_API_KEY and PROPDATA_BASE_URL. Until the API answers it says "
            "so, and when it will try again."
        ),
    )
    listen.add_argument("--forward-to", required=True, metavar="URL",
                        help="Where to POST each event, e.g. http://localhost:3000/hook")  # fmt: skip
    listen.add_argument("--types", default=None, metavar="TYPE[,TYPE...]",
                        help="Only these event types, e.g. property.priceChanged,search.entered")  # fmt: skip
    listen.add_argument("--search-id", default=None, metavar="ID",
                        help="Only the events of this saved search")  # fmt: skip
    listen.add_argument("--since", default=None, metavar="CURSOR",
                        help="Start after this cursor (one printed earlier, or an events "
                        "page's nextCursor) instead of from now")  # fmt: skip
    listen.add_argument("--secret", default=None, metavar="whsec_...",
                        help="Sign with this secret; prefer PROPDATA_LISTEN_SECRET, since a "
                        "value on the command line is visible to every user of this machine "
                        "(ps). A secret given either way is never printed; without one, a new "
                        "one is made and printed at start")  # fmt: skip
    listen.add_argument("--count", type=int, default=None, metavar="N",
                        help="Stop after forwarding N events (default: run until interrupted)")  # fmt: skip
    return parser


def _listen(args: argparse.Namespace) -> int:
    from propdata_client._sync import Client
    from propdata_client.errors import PropdataError
    from propdata_client.listen import Forwarded, listen, new_secret, retry_said

    if not args.forward_to.startswith(("http://", "https://")):
        print("propdata-client listen: --forward-to must be an http:// or https:// URL.",
              file=sys.stderr)  # fmt: skip
        return 2
    if not os.environ.get("PROPDATA_API_KEY", "").strip():
        print("propdata-client listen: set PROPDATA_API_KEY to your API key.", file=sys.stderr)
        return 2
    given = args.secret or os.environ.get("PROPDATA_LISTEN_SECRET", "").strip()
    secret = given or new_secret()
    types = ",".join(t.strip() for t in (args.types or "").split(",") if t.strip()) or None

    def report(done: Forwarded) -> None:
        event = done.item.event
        outcome = f"{done.status}" if done.status is not None else "no answer"
        if done.error:
            outcome += f" ({done.error})"
        print(f"{event.timestamp:%H:%M:%S} {event.type} {event.id} -> {outcome} "
              f"{done.milliseconds} ms  cursor {done.item.cursor}", flush=True)  # fmt: skip

    def say(text: str) -> None:
        print(f"propdata-client listen: {text}", file=sys.stderr, flush=True)

    try:
        with Client() as client:
            opened = 0

            def on_open() -> None:
                nonlocal opened
                opened += 1
                if opened == 1:
                    say(f"connected; forwarding its events to {args.forward_to}")
                else:
                    say("connected again")

            def on_retry(error: PropdataError | None, wait: float) -> None:
                print(retry_said(client.base_url, error, wait), file=sys.stderr, flush=True)

            say(f"connecting to the event stream of {client.base_url}")
            if not given:
                say(f"signing secret {secret}")
            elif args.secret:
                say("signing with the secret given by --secret (PROPDATA_LISTEN_SECRET keeps "
                    "it off the command line)")  # fmt: skip
            else:
                say("signing with the secret in PROPDATA_LISTEN_SECRET")
            listen(client, args.forward_to, secret, since=args.since, types=types,
                   search_id=args.search_id, count=args.count, report=report,
                   on_open=on_open, on_retry=on_retry)  # fmt: skip
    except PropdataError as exc:
        print(f"propdata-client listen: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"propdata-client listen: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "listen":
        return _listen(args)
    if args.command != "mcp":
        _parser().print_help(sys.stderr)
        return 2
    try:
        from propdata_client.mcp_server import serve
    except ImportError as exc:
        print(
            f"propdata-client mcp needs the MCP SDK ({exc}): pip install 'propdata-client[mcp]'",
            file=sys.stderr,
        )
        return 2
    if not os.environ.get("PROPDATA_API_KEY", "").strip():
        print("propdata-client mcp: set PROPDATA_API_KEY to your API key.", file=sys.stderr)
        return 2
    token = args.token or os.environ.get("PROPDATA_MCP_TOKEN", "").strip() or None
    if args.token:
        print("propdata-client mcp: --token is visible to every user of this machine (ps);"
              " set PROPDATA_MCP_TOKEN instead.", file=sys.stderr, flush=True)  # fmt: skip
    if args.http and token is None:
        from propdata_client.mcp_server import LOOPBACK

        if args.host not in LOOPBACK:
            print(
                f"propdata-client mcp: refusing to serve HTTP on {args.host} without a token:"
                " anyone who reaches it would spend your API key. Set PROPDATA_MCP_TOKEN, or"
                " bind 127.0.0.1.",
                file=sys.stderr,
            )
            return 2
        token = secrets.token_urlsafe(32)
        print(f"propdata-client mcp: clients send 'Authorization: Bearer {token}'",
              file=sys.stderr, flush=True)  # fmt: skip
    try:
        asyncio.run(serve(http=args.http, host=args.host, port=args.port, path=args.path,
                          max_retry_wait=args.max_retry_wait, token=token,
                          allowed_hosts=args.allow_host, allowed_origins=args.allow_origin))  # fmt: skip
    except KeyboardInterrupt:
        return 130
    return 0

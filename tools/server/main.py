"""Command line of the reference server: ``tools/server/run --port 8765 --db FILE [...]``.

The server listens on 127.0.0.1 only; any other ``--host`` is refused (exit 64).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .import_geofences import (
    EX_USAGE, ImportFileError, UsageExitParser, import_files, positive_metres, print_report,
)
from .limits import Limits
from .store import DEFAULT_HISTORY_DEPTH, DEFAULT_MAX_CHANGES, Store

LOOPBACK = "127.0.0.1"


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = UsageExitParser(prog="tools/server/run",
                        description="Reference geofence sync and event server (loopback only).")
    p.add_argument("--port", type=_at_least(1), default=8765, help="TCP port (default 8765)")
    p.add_argument("--host", default=LOOPBACK, help="must be 127.0.0.1 (the default)")
    p.add_argument("--db", required=True, help="SQLite database file (created if missing)")
    p.add_argument("--enable-admin", action="store_true",
                   help="serve the test-only /admin routes and fault injection")
    p.add_argument("--key", action="append", default=[],
                   help="create this account at start (repeatable); with --import, the target")
    p.add_argument("--import", dest="imports", action="append", default=[], type=Path,
                   metavar="FILE", help="import geofences into --key before serving (repeatable)")
    p.add_argument("--radius", type=positive_metres, default=None,
                   help="radius in metres for imported rows that have none")
    p.add_argument("--history-depth", type=_at_least(0), default=DEFAULT_HISTORY_DEPTH,
                   help=f"versions of change history kept (default {DEFAULT_HISTORY_DEPTH})")
    p.add_argument("--max-changes", type=_at_least(1), default=DEFAULT_MAX_CHANGES,
                   help="largest changes answer before 410 changes_too_large"
                        f" (default {DEFAULT_MAX_CHANGES})")
    p.add_argument("--max-batch-events", type=_at_least(1), default=Limits.max_batch_events,
                   help=f"events per upload batch (default {Limits.max_batch_events})")
    p.add_argument("--max-batch-bytes", type=_at_least(1), default=Limits.max_batch_bytes,
                   help=f"bytes per upload batch (default {Limits.max_batch_bytes})")
    p.add_argument("--webhook-secret", default=None,
                   help="enable the webhook receiver POST /v1/webhook, verifying signatures with"
                        " this secret (default: $GEOFENCE_WEBHOOK_SECRET, else disabled)")
    p.add_argument("--log-level", default="warning",
                   choices=("critical", "error", "warning", "info", "debug"))
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.host not in (LOOPBACK, "localhost"):
        parser.error(f"refusing to listen on {args.host!r}: this server binds to {LOOPBACK} only")
    if args.imports and len(args.key) != 1:
        parser.error("--import needs exactly one --key")
    if args.port > 65535:
        parser.error("--port must be <= 65535")

    # Bind before anything else: a port in use is an error of its own (exit 69,
    # EX_UNAVAILABLE) that leaves the database as it was (no --import into the database of a
    # server already running there), not a banner followed by uvicorn's exit 3.
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, args.port))
    except OSError as exc:
        sock.close()
        print(f"error: cannot listen on {LOOPBACK}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 69
    port = sock.getsockname()[1]

    store = Store(args.db, history_depth=args.history_depth, max_changes=args.max_changes)
    for key in args.key:
        store.ensure_account(key)
    if args.imports:
        try:
            report = import_files(store, args.key[0], args.imports, args.radius)
        except (ImportFileError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print_report(report, args.key[0])

    import os

    import uvicorn

    secret = args.webhook_secret or os.environ.get("GEOFENCE_WEBHOOK_SECRET")

    from .app import create_app

    app = create_app(
        store,
        admin_enabled=args.enable_admin,
        limits=Limits(args.max_batch_events, args.max_batch_bytes),
        webhook_secret=secret.encode() if secret else None,
    )
    print(f"serving on http://{LOOPBACK}:{port}"
          f"{' (admin enabled)' if args.enable_admin else ''}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=LOOPBACK, port=port, http="h11", loop="asyncio",
                            log_level=args.log_level, access_log=False,
                            timeout_graceful_shutdown=1, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())

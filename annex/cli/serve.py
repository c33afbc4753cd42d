"""The CLI's command group: run the intake server (``annex serve``): ``services.intake`` with
the attestation and lineage routes."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from annex.cli.hints import annex_command
from annex.settings import Settings


def register(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve the evidence intake (attestations, OpenLineage events) until stopped",
        description=(
            "Serve the intake that attestation agents and OpenLineage producers push to: "
            "POST /api/v1/attestations/nonce, POST /api/v1/attestations, POST /api/v1/lineage "
            "and POST /api/v1/lineage/batch (gzip accepted), bearer token from the variable "
            "serve.token_env names, HTTPS when serve.tls_cert_file/tls_key_file are set. "
            "Submissions are written to attestation.spool_dir/incoming and events to "
            "lineage.spool_dir/incoming; `annex collect attestations` and `annex collect "
            "lineage` load them. Runs until Ctrl-C or SIGTERM."
        ),
    )
    serve.add_argument("--host", help="address to listen on (default: serve.host)")
    serve.add_argument("--port", type=int, help="port (default: serve.port; 0: any free port)")
    serve.add_argument("--quiet", action="store_true", help="no access log")
    serve.set_defaults(run=cmd_serve)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from services.attestation import attestation_routes
    from services.intake import IntakeServer
    from services.lineage import lineage_routes

    if not args.quiet:
        logging.getLogger("annex.serve").setLevel(logging.INFO)
    routes = [*attestation_routes(settings), *lineage_routes(settings)]
    server = IntakeServer(settings, routes, host=args.host, port=args.port)
    listing = "\n".join(f"  {route}" for route in server.describe_routes())
    print(
        f"annex intake serving {server.url}\n{listing}\n"
        f"submissions are spooled to {settings.attestation.spool_dir / 'incoming'}; "
        f"verify them with `{annex_command('collect attestations')}`\n"
        f"OpenLineage events are spooled to {settings.lineage.spool_dir / 'incoming'}; "
        f"load them with `{annex_command('collect lineage')}`\nCtrl-C to stop.",
        flush=True,
    )
    if server.tls is None:
        print(
            "annex: warning: plain HTTP (no serve.tls_cert_file/tls_key_file): bearer tokens "
            "and evidence cross the network unencrypted unless a TLS proxy fronts this port",
            file=sys.stderr,
        )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0

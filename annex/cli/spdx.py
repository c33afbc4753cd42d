"""The CLI's command group: a model's SPDX 3.0 AI/Dataset document (``annex spdx``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annex.cli.counts import plural
from annex.settings import Settings


def register(commands: Any) -> None:
    spdx = commands.add_parser(
        "spdx",
        help="write the SPDX 3.0 document (AI and Dataset profiles) of a model and its data",
        description=(
            "Write the SPDX 3.0.1 JSON-LD document of a model checkpoint (AI profile) and the "
            "leaf sources of its training content (Dataset profile, with licences, source "
            "categories and crawl facts from their lineage facets), read from the published "
            "copy. The checkpoint is the model's latest in marts.lineage_models unless "
            "--checkpoint names one."
        ),
    )
    spdx.add_argument("--model", required=True, help="model name (marts.lineage_models)")
    spdx.add_argument("--checkpoint", metavar="ID", help="a model_version_id of that model")
    spdx.add_argument(
        "-o",
        "--output",
        type=Path,
        help="file to write (default: <model>.spdx.json; '-' writes to stdout)",
    )
    spdx.set_defaults(run=cmd_spdx)


def cmd_spdx(args: argparse.Namespace, settings: Settings) -> int:
    from annex.errors import QueryError
    from reports.spdx import export_spdx, spdx_json
    from warehouse import Warehouse

    with Warehouse(settings.warehouse).reader() as con:
        try:
            document = export_spdx(con, args.model, model_version_id=args.checkpoint)
        except LookupError as exc:
            raise QueryError(
                str(exc),
                hint="list the models with: `annex sql -c 'SELECT model_name, model_version_id, "
                "created_at FROM marts.lineage_models ORDER BY 1, 3'`",
            ) from None
    text = spdx_json(document)
    if str(args.output) == "-":
        sys.stdout.buffer.write(text)
        return 0
    output = args.output or Path(f"{_file_name(args.model)}.spdx.json")
    output.write_bytes(text)
    print(f"wrote {output} ({plural(len(document.get('@graph', [])), 'SPDX element')})")
    return 0


def _file_name(name: str) -> str:
    """A model name as a safe file name (model names come from lineage events)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "model"

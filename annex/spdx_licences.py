"""The SPDX License List annex matches licences against, and its version: one copy, in the
kernel, because both sides need it. The dataset importers (``collectors.lineage.hf_card``,
``collectors.lineage.croissant``) map declared licences to SPDX ids with it, and the SPDX 3
export (``reports.spdx``) states the list version those ids were checked against.

The list is ``spdx_license_ids.json`` beside this module (its ``_source`` says where it comes
from); standard library only, as the kernel is.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

__all__ = ["spdx_license_id", "spdx_license_list_version"]


@cache
def _spdx_ids() -> tuple[str, dict[str, tuple[str, bool]]]:
    data = json.loads((Path(__file__).parent / "spdx_license_ids.json").read_text("utf-8"))
    table = {lid.lower(): (lid, bool(dep)) for lid, dep in data["licenses"].items()}
    return data["licenseListVersion"], table


def spdx_license_list_version() -> str:
    """The SPDX License List version matched against (``annex/spdx_license_ids.json``)."""
    return _spdx_ids()[0]


def spdx_license_id(text: str) -> tuple[str, bool] | None:
    """Return ``(canonical SPDX id, deprecated)`` for a case-insensitive exact match, else None."""
    return _spdx_ids()[1].get(text.strip().lower())

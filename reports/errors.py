"""The error a report raises: part of ``annex.errors``' hierarchy, with its own exit code."""

from __future__ import annotations

from annex.errors import AnnexError


class ReportError(AnnexError):
    """A report cannot be built: unknown name, bad parameters, or the renderer failed."""

    exit_code = 7

"""Where a test finds the repository's files, named once so moving a test never breaks a path.

A test reads its own fixtures beside itself (``Path(__file__).parent / "fixtures"``); files of
the repository (deploy/ manifests, annex.example.toml, simulator/models) and fixtures that
several packages' tests read (``tests/fixtures/<area>/``) are found from here.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The repository's root folder (where pyproject.toml is)."""

FIXTURES = REPO_ROOT / "tests" / "fixtures"
"""Fixtures shared by the tests of several packages, one folder per area."""

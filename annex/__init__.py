"""annex: GPU-cluster capacity audit and EU AI Act compliance evidence, in DuckDB.

This module imports nothing on purpose: every package may import ``annex.errors`` and
``annex.settings`` without pulling in the CLI or its dependencies.
"""

__version__ = "0.1.0"

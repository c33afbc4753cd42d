"""annex: GPU-cluster capacity audit and EU AI Act compliance evidence, in DuckDB.

This module imports nothing on purpose: every package may import annex's kernel (this version,
``annex.errors``, ``annex.settings``, ``annex.model_registry``, ``annex.spdx_licences``) without
pulling in the CLI (``annex.cli``, an entry point) or its dependencies.
"""

__version__ = "0.1.0"

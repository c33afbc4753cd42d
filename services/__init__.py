"""annex's service layer: one module per evidence source, and one for reports, each the single
place that wires a collection (``collectors``) or a rendering (``reports``) to the warehouse.

The entry points call it: the CLI (``annex.cli``), the Dagster code location (``pipelines``)
and, through the CLI, the intake server (``services.intake``, whose routes the source modules
register). The rule (README "Layout"; enforced by tests/test_layers.py): ``services`` may import
annex's kernel (``annex`` version, ``annex.errors``, ``annex.settings``, ``annex.model_registry``,
``annex.spdx_licences``), ``collectors``, ``warehouse``, ``reports``, ``probes`` and itself;
never ``annex.cli`` nor ``pipelines``.
"""

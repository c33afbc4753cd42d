"""The layer rules of README "Layout", enforced: every first-party import of every module
(module level, inside functions and under ``TYPE_CHECKING`` alike, read from its ``ast``) goes
only where its layer may import.

    kernel      annex (its version), annex.errors, annex.settings, annex.model_registry,
                annex.spdx_licences: imports no other first-party module
    lower       collectors, warehouse, reports, probes: the kernel and each other
    services    the kernel, the lower layers and itself
    pipelines   the kernel, services, the lower layers and itself (never annex.cli)
    entry       annex.cli (and annex.__main__): anything above, simulator included

So nothing under collectors/, warehouse/ or reports/ imports annex beyond its kernel, the
kernel imports neither services nor pipelines, and only the CLI (an entry point, as Dagster's
code location is) calls into pipelines.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

KERNEL = frozenset(
    {"annex", "annex.errors", "annex.settings", "annex.model_registry", "annex.spdx_licences"}
)
LOWER = frozenset({"collectors", "warehouse", "reports", "probes"})
FIRST_PARTY = frozenset({"annex", "services", "pipelines", "simulator", "bench", "tests"} | LOWER)

ALLOWED: dict[str, frozenset[str]] = {
    "kernel": frozenset({"kernel"}),
    "lower": frozenset({"kernel", "lower"}),
    "services": frozenset({"kernel", "lower", "services"}),
    "pipelines": frozenset({"kernel", "lower", "services", "pipelines"}),
    "entry": frozenset({"kernel", "lower", "services", "pipelines", "entry", "simulator"}),
    "simulator": frozenset({"kernel", "lower", "simulator"}),
}
"""Which layers each layer may import (bench/ and tests/ sit above all and are not checked)."""

CHECKED_PACKAGES = ("annex", "services", "pipelines", "simulator", *sorted(LOWER))


def layer_of(module: str) -> str:
    if module in KERNEL:
        return "kernel"
    top = module.split(".")[0]
    if top == "annex":
        return "entry"
    if top in LOWER:
        return "lower"
    return top


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """Every first-party module ``path`` imports, absolute (relative imports resolved); for
    ``from X import Y`` the submodule ``X.Y`` when it is one, else ``X``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if _is_module(sub) else base))
    return [(line, name) for line, name in found if name.split(".")[0] in FIRST_PARTY]


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def checked_files() -> list[Path]:
    return sorted(p for package in CHECKED_PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_the_kernel_and_the_layers_exist() -> None:
    """The rules name real modules (a renamed kernel module would silently pass otherwise)."""
    for name in [*KERNEL, "annex.cli", "services", "pipelines", *LOWER]:
        assert importlib.util.find_spec(name) is not None, name


@pytest.mark.parametrize("path", checked_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layer_rules(path: Path) -> None:
    module = module_name(path)
    layer = layer_of(module)
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {module} ({layer}) imports {target} ({layer_of(target)})"
        for line, target in imported_modules(path, module)
        if layer_of(target) not in ALLOWED[layer]
    ]
    assert not wrong, "layer rule broken (README 'Layout'):\n" + "\n".join(wrong)


def test_nothing_in_annex_but_its_cli_imports_pipelines() -> None:
    """The issue's rule in its own words: annex/ imports pipelines/ only from the CLI."""
    for path in (ROOT / "annex").rglob("*.py"):
        module = module_name(path)
        if module == "annex.cli" or module.startswith("annex.cli."):
            continue
        targets = [t for _, t in imported_modules(path, module)]
        assert not [t for t in targets if t.split(".")[0] in {"pipelines", "services"}], module

"""The rules of tests/README.md, enforced: tests mirror the packages, test basenames are unique
(pytest's default import mode imports each test module by its file name), shared code lives
in tests/helpers, and no test-only module ships inside a package of the wheel."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.helpers.paths import REPO_ROOT

TESTS = REPO_ROOT / "tests"
KINDS = frozenset({"integration", "e2e", "pipelines", "probes", "fuzz"})
"""Folders for kinds of test that cross packages; their own helper modules may sit beside them."""


def _python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def _in_fixtures(path: Path) -> bool:
    """Data folders (a fixture may be a Python file: a producer's own client, say)."""
    parts = path.relative_to(TESTS).parts
    return parts[0] == "fixtures" or "fixtures" in parts[:-1]


def test_every_test_basename_is_unique() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in _python_files():
        if path.name.startswith("test_") and not _in_fixtures(path):
            seen[path.name].append(str(path.relative_to(REPO_ROOT)))
    repeated = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not repeated, f"keep a prefix so each test file's name is unique: {repeated}"


def test_test_folders_mirror_packages() -> None:
    """tests/<package>/<subpackage>/ exists only where <package>/<subpackage> does (a package,
    or a folder of the repository such as docs/ or deploy/ for tests of what they hold)."""
    wrong = []
    for path in _python_files():
        relative = path.relative_to(TESTS)
        if len(relative.parts) == 1 or _in_fixtures(path):
            continue
        top = relative.parts[0]
        if top in KINDS or top == "helpers":
            continue
        if not REPO_ROOT.joinpath(*relative.parts[:-1]).is_dir():
            wrong.append(str(path.relative_to(REPO_ROOT)))
    assert not wrong, f"these tests sit in no package's mirror folder: {wrong}"


def test_shared_modules_live_in_tests_helpers() -> None:
    """A module that is neither a test nor a conftest is shared code: tests/helpers/ holds it
    (the kinds' folders may keep their own, beside the tests that use them)."""
    stray = [
        str(path.relative_to(REPO_ROOT))
        for path in _python_files()
        if not path.name.startswith("test_")
        and path.name != "conftest.py"
        and not _in_fixtures(path)
        and path.relative_to(TESTS).parts[0] not in KINDS | {"helpers"}
    ]
    assert not stray, f"move shared test code into tests/helpers/: {stray}"


def test_no_test_only_module_ships_in_a_package() -> None:
    """Fakes and test fixtures live under tests/, out of the wheel (tests/test_layers.py also
    refuses any import of ``tests`` from a package)."""
    shipped = [
        str(path.relative_to(REPO_ROOT))
        for top in REPO_ROOT.iterdir()
        if (top / "__init__.py").is_file()
        for path in top.rglob("*.py")
        if path.stem in {"testing", "conftest", "fakes"} or path.stem.startswith("test_")
    ]
    assert not shipped, f"move test-only modules under tests/helpers/: {shipped}"

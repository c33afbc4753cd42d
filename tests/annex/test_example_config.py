"""``annex.example.toml`` cites only what exists: every repository file or folder its comments
name, and every README section they point to.

Values (quoted) are the reader's own paths (``trust/nvidia-root.pem``, ``/mnt/attestations``),
not citations; URLs and Kubernetes label keys are neither. A citation is a comment's path whose
first part is an entry at the repository's root, or that ends like a repository file.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "annex.example.toml"
FILE_ENDINGS = (".md", ".py", ".toml", ".yaml", ".yml", ".sql", ".json")
PATH = re.compile(r"(?<![\w./:-])([\w.-]+(?:/[\w.*-]*)*)")
YOURS = {"annex.toml"}
"""Files the comments tell the reader to make (``Copy to annex.toml``), not citations."""
SECTION = re.compile(r'README\.md, "([^"]+)"')


def _comment_text() -> str:
    """The file's comments, quoted values removed, joined into one text."""
    parts = []
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        if "#" not in line:
            continue
        comment = line.split("#", 1)[1]
        parts.append(
            re.sub(r'"[^"]*"(?=\s*(?:$|#|\]|,))', "", comment) if "=" in comment else comment
        )
    return " ".join(part.strip() for part in parts)


def _citations(text: str) -> set[str]:
    top = {entry.name for entry in ROOT.iterdir()}
    found = set()
    for token in PATH.findall(text):
        token = token.rstrip(".,;:")
        if "/" not in token and not token.endswith(FILE_ENDINGS):
            continue
        if "<" in token or token.startswith("/") or token in YOURS:
            continue
        if token.split("/", 1)[0] in top or token.endswith(FILE_ENDINGS):
            found.add(token)
    return found


def test_every_file_the_example_config_cites_exists() -> None:
    cited = _citations(_comment_text())
    assert {"deploy/rbac.yaml", "simulator/models/"} <= cited
    missing = sorted(path for path in cited if not (ROOT / path).exists())
    assert not missing, f"annex.example.toml cites files that do not exist: {missing}"


def test_every_readme_section_the_example_config_cites_exists() -> None:
    sections = SECTION.findall(re.sub(r"\s+", " ", _comment_text()))
    assert sections
    headings = {
        line.lstrip("#").strip()
        for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }
    missing = [section for section in sections if section not in headings]
    assert not missing, f"annex.example.toml cites README sections that do not exist: {missing}"

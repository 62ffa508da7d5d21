"""The documentation site builds with MkDocs in strict mode: a broken link or anchor, or a page left out of the
nav, fails the build; and the README, read on its own, links only to pages that exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from graphql import build_schema, parse, validate

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "WARNING" not in output, output[-6000:]
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()


def test_every_page_is_in_the_nav() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)

    def pages(node: object) -> set[str]:
        if isinstance(node, str):
            return {node}
        items = list(node.values()) if isinstance(node, dict) else list(node)  # type: ignore[call-overload]
        return set().union(*(pages(item) for item in items))

    listed = pages(config["nav"])
    on_disk = {path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md")}
    assert on_disk == listed


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets and all((ROOT / target).exists() for target in targets if "://" not in target), targets


def test_the_readme_graphql_call_is_valid_against_the_schema() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = re.search(r"-d '(\{\"query\".*?\})'", text)
    assert body, "the README's tour lost its GraphQL call"
    schema = build_schema((ROOT / "graphql" / "schema.graphql").read_text(encoding="utf-8"))
    assert validate(schema, parse(json.loads(body.group(1))["query"])) == []

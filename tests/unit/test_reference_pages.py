"""The reference pages are generated from their one source; this fails when a page and its source drift."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field, SecretStr

from service.reference import blocks
from service.reference.pages import PARTS, Part, stale
from service.reference.settings_page import render as render_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("part", PARTS, ids=[part.page for part in PARTS])
def test_each_reference_page_is_what_its_source_generates(part: Part) -> None:
    page = (ROOT / part.page).read_text(encoding="utf-8")
    assert blocks.generated_part(page, part.name, part.code) == part.make(ROOT), (
        f"{part.page} is stale: regenerate it with `python -m service.reference`"
    )


def test_a_changed_source_makes_its_page_stale(tmp_path: Path) -> None:
    for folder in ("docs", "graphql", "proto"):
        _copy(ROOT / folder, tmp_path / folder)
    assert stale(tmp_path) == []
    sdl = tmp_path / "graphql" / "schema.graphql"
    sdl.write_text(
        sdl.read_text(encoding="utf-8") + '\n"""A type added to the schema."""\ntype Added {\n  x: Int!\n}\n'
    )
    assert stale(tmp_path) == ["docs/graphql.md"]


def _copy(source: Path, target: Path) -> None:
    for path in source.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".graphql", ".proto"):
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")


class _Inner(BaseModel):
    """A nested section."""

    #: The cluster's URL.
    url: str | None = None
    #: Sent as a header.
    api_key: SecretStr | None = None


class _Model(BaseModel):
    #: How many, at most.
    limit: int = Field(10, ge=1, le=100)
    mode: Literal["fast", "exact"] = "fast"
    inner: _Inner = _Inner()


def test_every_key_has_its_type_bounds_default_variable_and_comment() -> None:
    page = render_settings(_Model)
    assert "| `limit` | integer (≥ 1, ≤ 100) | `10` | `DOCQA_LIMIT` | How many, at most. |" in page
    assert "| `mode` | one of `fast`, `exact` | `fast` | `DOCQA_MODE` |  |" in page
    assert "### `inner`\n\nA nested section." in page
    assert "| `inner.url` | string or null | `null` | `DOCQA_INNER__URL` | The cluster's URL. |" in page
    assert "`DOCQA_INNER__API_KEY` (secret: environment or file only) | Sent as a header. |" in page


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="no markers"):
        blocks.with_generated_part("# A page\n", "settings", "x\n")
    page = f"# A page\n\n{blocks.begin('settings')}\nold\n{blocks.end('settings')}\n\nAfter.\n"
    assert blocks.with_generated_part(page, "settings", "new\n").count("new\n") == 1
    assert "After." in blocks.with_generated_part(page, "settings", "new\n")


def test_the_cli_page_holds_every_flag_and_a_new_one_makes_it_stale() -> None:
    from service.api.cli.parser import build_parser
    from service.reference.cli_page import render as render_cli

    page = blocks.generated_part((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"), "cli")
    assert page is not None
    for flag in ("`--http-port PORT`", "`--grpc-port PORT`", "`--server URL`", "`--token JWT`", "`--as USER`"):
        assert flag in page, flag
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    sub.choices["serve"].add_argument("--metrics-port", type=int, metavar="PORT", help="a flag added later")
    regenerated = render_cli(parser)
    assert "| `--metrics-port PORT` |  | a flag added later |" in regenerated
    assert regenerated != page

"""graphql/schema.graphql is exported from the strawberry schema; this fails when they drift."""

from __future__ import annotations

from pathlib import Path

from service.api.graphql.schema import schema_sdl

SDL = Path(__file__).resolve().parents[2] / "graphql" / "schema.graphql"


def test_checked_in_sdl_matches_the_strawberry_schema() -> None:
    assert SDL.read_text() == schema_sdl(), (
        "graphql/schema.graphql is stale: regenerate it with python -c "
        "\"from service.api.graphql.schema import schema_sdl; print(schema_sdl(), end='')\" > graphql/schema.graphql"
    )

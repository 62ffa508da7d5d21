"""A query text is validated until it has passed once; a refused text is refused every time."""

from __future__ import annotations

import asyncio

from service.api.graphql.schema import build_schema
from service.api.graphql.validation_cache import ValidQueries

DEEP = '{ vectorQuery(storeId: "acme", question: "q") { chunks { text } } }'
FAN_OUT = "{ stores { id } " + "".join(f"a{i}: stores {{ id }} " for i in range(30)) + "}"


def test_a_refused_text_is_refused_every_time() -> None:
    shallow = build_schema(max_depth=1, max_aliases=15)
    for _ in range(3):
        deep = asyncio.run(shallow.execute(DEEP))
        assert deep.errors and "exceeds maximum operation depth" in deep.errors[0].message
        fan = asyncio.run(shallow.execute(FAN_OUT))
        assert fan.errors and fan.errors[0].extensions == {"code": "GRAPHQL_VALIDATION_FAILED"}


def test_a_valid_text_still_answers_and_another_schema_keeps_its_own_limits() -> None:
    lenient = build_schema(max_depth=8)
    for _ in range(2):
        result = asyncio.run(lenient.execute("{ __typename }"))
        assert result.errors is None and result.data == {"__typename": "Query"}
    strict = build_schema(max_depth=1)  # the deep text passing elsewhere does not let it through here
    assert asyncio.run(lenient.execute(DEEP)).errors is not None  # no services: refused while resolving
    deep = asyncio.run(strict.execute(DEEP))
    assert deep.errors and "exceeds maximum operation depth" in deep.errors[0].message


def test_the_set_is_bounded_and_forgets_the_least_recently_used() -> None:
    valid = ValidQueries(max_texts=2)
    valid.add("a")
    valid.add("b")
    assert "a" in valid  # used: now the most recent
    valid.add("c")
    assert "a" in valid and "c" in valid and "b" not in valid

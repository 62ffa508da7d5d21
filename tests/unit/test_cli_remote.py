"""The CLI's ``--server`` mode without a server: URLs, the error table read backwards, a result read back."""

from __future__ import annotations

import pytest

from acl.errors import DocQAError, InvalidArgument, NotFound, RateLimited, Unauthenticated
from service.api.cli.graphql_client import graphql_endpoint, is_loopback
from service.api.cli.remote import answer_of
from service.api.errors import error_for_graphql_code, mapping_for
from service.domain.queries import Answer, SourceChunk, group_by_document

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("url", "endpoint"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/graphql"),
        ("https://docqa.example/api/graphql", "https://docqa.example/api/graphql"),
    ],
)
def test_a_server_url_names_its_graphql_endpoint(url: str, endpoint: str) -> None:
    assert graphql_endpoint(url) == endpoint


@pytest.mark.parametrize("url", ["ftp://host", "127.0.0.1:8080", "http://", "http://user:pw@host"])
def test_a_bad_server_url_is_invalid_argument(url: str) -> None:
    with pytest.raises(InvalidArgument, match="--server"):
        graphql_endpoint(url)


def test_loopback_servers_are_told_apart_from_remote_ones() -> None:
    assert is_loopback("http://127.0.0.1:8080") and is_loopback("http://localhost") and is_loopback("http://[::1]:1")
    assert not is_loopback("http://10.0.0.1:8080") and not is_loopback("https://docqa.example")


@pytest.mark.parametrize(
    ("code", "cls", "exit_code"),
    [
        ("NOT_FOUND", NotFound, 3),
        ("BAD_USER_INPUT", InvalidArgument, 2),
        ("UNAUTHENTICATED", Unauthenticated, 5),
        ("RATE_LIMITED", RateLimited, 75),
        ("SOMETHING_NEW", DocQAError, 70),
    ],
)
def test_a_graphql_code_becomes_the_error_with_the_local_exit_code(code: str, cls: type, exit_code: int) -> None:
    error = error_for_graphql_code(code, "words")
    assert type(error) is cls and error.message == "words"
    assert mapping_for(error).exit_code == exit_code


def test_a_query_result_reads_back_into_the_same_answer() -> None:
    chunk = SourceChunk("a.md", "a.md#0", "A", "", "text", ("A", "Intro"), 0.5, 0.75, 0, 4, (1, 2), "intro", None)
    answer = Answer(
        query_id="q",
        query_class="vector",
        answer="text [1]",
        chunks=(chunk,),
        threshold=0.3,
        level=0.5,
        no_relevant_document=False,
        retry_without_threshold_allowed=False,
        model_id="extractive",
        llm_called=True,
        timings_ms={"embed": 1.5, "total": 2.0},
        documents=group_by_document([chunk], None),
        warnings=("w",),
        conversation_id="c",
    )

    def camel(value: object) -> object:
        if isinstance(value, dict):
            return {_camel(k): camel(v) for k, v in value.items()}
        if isinstance(value, list):
            return [camel(v) for v in value]
        return value

    result = camel(answer.to_dict())
    assert isinstance(result, dict)
    result["timingsMs"] = [{"name": k, "ms": v} for k, v in answer.timings_ms.items()]
    assert answer_of(result) == answer


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)

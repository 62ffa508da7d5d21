"""Summaries and comparisons through the real ibm-watsonx-ai SDK against the stand-in watsonx server (TLS)."""

from __future__ import annotations

from typing import Any

import pytest

from acl.errors import NotFound
from service.domain.analysis import ComparisonRequest, SummaryRequest
from service.domain.queries import Caller
from tests.integration import test_watsonx as _watsonx
from tests.integration.watsonx_standin import StandIn
from tests.unit.analysis_world import EVERYONE, FINANCE, add_sections, with_generator
from tests.unit.engine_world import STORE, make_world

# The watsonx suite's fixtures (stand-in server, TLS certificate, SDK environment), shared rather than copied.
certificate, server, standin, make = _watsonx.certificate, _watsonx.server, _watsonx.standin, _watsonx.make
_sdk_environment = _watsonx._sdk_environment
GENERATION, STREAM = _watsonx.GENERATION, _watsonx.STREAM
BOB = Caller("bob")
SECRET = "The merger with Initech closes on the fifth of May for 48 million euros."


def _long_sections(topic: str, count: int = 3) -> list[tuple[str, list[str]]]:
    sentence = f"The {topic} policy explains how requests are filed, reviewed and approved by a manager. "
    return [(f"{topic.title()} {i}", [sentence * 12]) for i in range(count)]


def test_a_long_document_is_map_reduced_through_the_model_citing_its_sections(standin: StandIn, make: Any) -> None:
    world = with_generator(make_world(), make(context_window=900, max_new_tokens=50))
    add_sections(world, "policy", _long_sections("travel"), EVERYONE)
    add_sections(world, "merger", [("Deal", [SECRET])], FINANCE)
    standin.reply = "Requests are approved by a manager [1]."
    summary = world.engine.summarize(BOB, SummaryRequest(STORE, "policy", "short"))
    assert summary.method == "map_reduce" and summary.llm_called and not summary.extractive
    sent = [r.body["input"] for r in standin.calls(GENERATION)]
    assert len(sent) == 4  # one map step per section, then the reduce step
    for i, body in enumerate(sent[:3]):
        assert f"Travel {i}" in body and "Summarise the document section" in body
    assert "Write a summary of the whole document" in sent[3] and sent[3].count("Requests are approved") == 3
    assert all("Initech" not in body for body in sent)
    assert summary.summary == "Requests are approved by a manager [1]." and summary.sections[0].cited
    assert [s.summary for s in summary.sections] == ["Requests are approved by a manager."] * 3
    assert summary.model_id and summary.input_tokens > 0 and summary.output_tokens > 0


def test_a_short_document_goes_whole_in_one_request(standin: StandIn, make: Any) -> None:
    world = with_generator(make_world(), make())
    add_sections(world, "policy", _long_sections("travel", 2), EVERYONE)
    summary = world.engine.summarize(BOB, SummaryRequest(STORE, "policy"))
    (request,) = standin.calls(GENERATION)
    assert summary.method == "whole" and "Travel 0" in request.body["input"] and "Travel 1" in request.body["input"]


def test_an_unreadable_document_sends_nothing_and_reads_as_missing(standin: StandIn, make: Any) -> None:
    world = with_generator(make_world(), make())
    add_sections(world, "policy", _long_sections("travel", 1), EVERYONE)
    add_sections(world, "merger", [("Deal", [SECRET])], FINANCE, index_acl=EVERYONE)  # index copy not yet revoked
    with pytest.raises(NotFound):
        world.engine.summarize(BOB, SummaryRequest(STORE, "merger"))
    with pytest.raises(NotFound):
        world.engine.compare(BOB, ComparisonRequest(STORE, ("policy", "merger")))
    assert standin.calls(GENERATION) == [] and standin.calls(STREAM) == []


def test_a_comparison_is_written_from_the_aligned_chunks_and_streams(standin: StandIn, make: Any) -> None:
    world = with_generator(make_world(), make())
    add_sections(world, "old", [("Travel", ["Travel is approved by a manager within ten days."])], EVERYONE)
    add_sections(world, "new", [("Travel", ["Travel is approved by a director within five days."])], EVERYONE)
    add_sections(world, "merger", [("Deal", [SECRET])], FINANCE)
    standin.reply = "The old policy needs a manager [1] and the new one a director [2]."
    pieces: list[str] = []
    result = world.engine.compare(BOB, ComparisonRequest(STORE, ("old", "new"), "who approves travel?"), pieces.append)
    (request,) = standin.calls(STREAM)
    assert "ten days" in request.body["input"] and "five days" in request.body["input"]
    assert "Initech" not in request.body["input"] and "who approves travel?" in request.body["input"]
    assert "".join(pieces) == result.comparison and "[2]" in result.comparison and not result.extractive


def test_when_the_model_fails_the_extractive_result_comes_back_with_the_reason(standin: StandIn, make: Any) -> None:
    world = with_generator(make_world(), make())
    add_sections(world, "policy", _long_sections("travel", 2), EVERYONE)
    standin.fail(GENERATION, status=503, times=100)
    summary = world.engine.summarize(BOB, SummaryRequest(STORE, "policy"))
    assert summary.extractive and summary.generation_error and "503" in summary.generation_error
    assert summary.summary.startswith("The travel policy explains")

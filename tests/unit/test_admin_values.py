"""What an administrator may set is bounded and clean: prompt templates, model ids, store names, source URIs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from indexer.source_uris import MAX_SOURCE_URI_CHARS, shown_source_uri, validate_source_uri
from service.domain.queries import SourceChunk
from service.domain.store import DEFAULT_PROMPT_TEMPLATE
from service.domain.store_settings import (
    MAX_PROMPT_TEMPLATE_CHARS,
    fill_template,
    validate_model_id,
    validate_prompt_template,
    validate_store_name,
)
from service.generation.prompt import ContextChunk, Prompt, quote_text, render_chunk

# ---------------------------------------------------------------------------- prompt templates


@pytest.mark.parametrize(
    "template",
    [
        DEFAULT_PROMPT_TEMPLATE,
        "Context:\n{context}\n\nQuestion: {question}\nAnswer:",
        'Answer as JSON {{"answer": ...}}.\t{question}\r\n{context}',
        "Réponds en français : {question}\n{context}",
    ],
)
def test_a_clean_template_is_kept(template: str) -> None:
    assert validate_prompt_template(template) == template


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{context.__class__} {question}", "may not contain {context.__class__}"),
        ("{context} {question[0]}", "may not contain {question[0]}"),
        ("{context} {question} {}", "may not contain {}"),
        ("{0} {context} {question}", "may not contain {0}"),
        ("{context!r} {question}", "may not contain {context!r}"),
        ("{context:>9999999} {question}", "may not contain {context:>9999999}"),
        ("{context:{question}}", "may not contain {context:{question}}"),
        ("{context} {question} {secret}", "may not contain {secret}"),
        ("{context} {question} {" + "x" * 500 + "}", "may not contain {xxxx"),
        ("{context} {question} {", "write a literal brace as {{ or }}"),
        ("{context} {question} }", "write a literal brace as {{ or }}"),
        ("{question} only", "must contain {context} exactly once"),
        ("{context} only", "must contain {question} exactly once"),
        ("{context} {context} {question}", "must contain {context} exactly once"),
        ("{context} {question}\x00", "control characters (found U+0000)"),
        ("{context} {question}\x1b[2J", "control characters (found U+001B)"),
        ("{context} {question}\u202e", "control characters (found U+202E)"),
        ("{context} {question}" + " " * MAX_PROMPT_TEMPLATE_CHARS, f"longer than {MAX_PROMPT_TEMPLATE_CHARS}"),
        ("   ", "must be a non-empty string"),
        (42, "must be a non-empty string"),
    ],
)
def test_a_template_that_could_be_abused_is_refused(template: object, says: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        validate_prompt_template(template)
    assert says in info.value.message
    assert len(info.value.message) < 300  # a refused template is named, never echoed whole


def test_a_template_is_filled_in_one_pass() -> None:
    template = "Q: {question}\n{{literal}}\nC: {context}"
    filled = fill_template(template, {"context": "see {question} and {0}", "question": "what is {context}?"})
    assert filled == "Q: what is {context}?\n{literal}\nC: see {question} and {0}"


def test_a_template_stored_before_the_rules_still_renders() -> None:
    # Unmatched brace: only the two fields are replaced, in one pass; the rest is kept as written.
    assert fill_template("{ {context} / {question}", {"context": "{question}", "question": "q"}) == "{ {question} / q"
    assert (
        fill_template("{context} {other} {question!r}", {"context": "c", "question": "q"}) == "c {other} {question!r}"
    )


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_text_that_goes_in_is_never_read_as_a_field(question: str, text: str) -> None:
    prompt = Prompt(question, (ContextChunk(1, "d", "T", text, 0.9),), DEFAULT_PROMPT_TEMPLATE, "m")
    before, after = DEFAULT_PROMPT_TEMPLATE.split("{context}")
    middle, end = after.split("{question}")
    chunk = render_chunk(prompt.chunks[0], prompt.boundary)
    assert prompt.user_text() == before + chunk + middle + quote_text(question) + end


# ---------------------------------------------------------------------------- model ids and names


@pytest.mark.parametrize(
    "model_id", ["ibm/granite-3-8b-instruct", "meta-llama/llama-3-3-70b-instruct", "extractive", "a:b@c+d.e_f"]
)
def test_a_model_id_is_kept(model_id: str) -> None:
    assert validate_model_id(model_id) == model_id


@pytest.mark.parametrize(
    "model_id", ["", " ibm/granite", "ibm/granite\n", "ibm/gran\x00ite", "../../etc", "-x", "a b", "x" * 201, None]
)
def test_a_model_id_with_junk_is_refused(model_id: object) -> None:
    with pytest.raises(InvalidArgument):
        validate_model_id(model_id)


def test_a_store_name_is_one_clean_line() -> None:
    assert validate_store_name("Human resources (2026)") == "Human resources (2026)"
    for bad in ("two\nlines", "bell\x07", "x" * 201, ""):
        with pytest.raises(InvalidArgument):
            validate_store_name(bad)


# ---------------------------------------------------------------------------- source URIs


@pytest.mark.parametrize(
    "uri", ["", "https://cms.example.com/docs/42?v=3#intro", "http://intranet/doc", "https://例え.jp/ドキュメント"]
)
def test_a_web_source_uri_is_kept(uri: str) -> None:
    assert validate_source_uri(uri) == uri
    assert shown_source_uri(uri) == uri


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("javascript:alert(document.cookie)", "must be an https:// or http:// URL"),
        ("JavaScript:alert(1)", "must be an https:// or http:// URL"),
        ("data:text/html;base64,PHNjcmlwdD4=", "must be an https:// or http:// URL"),
        ("vbscript:msgbox", "must be an https:// or http:// URL"),
        ("file:///etc/passwd", "must be an https:// or http:// URL"),
        ("cms://doc/42", "must be an https:// or http:// URL"),
        ("//evil.example/x", "must be an https:// or http:// URL"),
        ("https:/no-host", "must name a host"),
        ("https://user:secret@cms.example/x", "must not carry credentials"),
        ("https://cms.example/x\r\nSet-Cookie: a=b", "spaces or control characters"),
        ("\x01javascript:alert(1)", "spaces or control characters"),
        (" https://cms.example/x", "spaces or control characters"),
        ("https://cms.example/\u202ecod.exe", "spaces or control characters"),
        ("https://[::1/x", "not a valid URL"),
        ("https://cms.example/" + "x" * MAX_SOURCE_URI_CHARS, f"longer than {MAX_SOURCE_URI_CHARS}"),
        (42, "must be a string"),
    ],
)
def test_a_source_uri_that_is_not_a_web_link_is_refused(uri: object, says: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        validate_source_uri(uri)
    assert says in info.value.message


def test_file_uris_are_shown_on_the_server_only() -> None:
    uri = "file:///srv/docs/hr/handbook.md"
    assert validate_source_uri(uri, allow_file=True) == uri
    chunk = SourceChunk("d", "d#0", "T", uri, "text", (), 0.5, 0.5, 0, 4)
    assert chunk.to_dict()["source_uri"] == ""  # gRPC and GraphQL callers
    assert chunk.to_dict(local=True)["source_uri"] == uri  # the CLI
    for stored in ("javascript:alert(1)", "https://x.example/\x1b[31m"):  # stored before the rule: shown to nobody
        junk = SourceChunk("d", "d#0", "T", stored, "text", (), 0.5, 0.5, 0, 4)
        assert junk.to_dict()["source_uri"] == junk.to_dict(local=True)["source_uri"] == ""

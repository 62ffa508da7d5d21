"""The conversation, history and feedback lines of docs/conversations.md, run as a user runs them; refusals."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from graphql import parse
from service.api.graphql.schema import build_schema
from service.quality.questions import load_questions
from tests.e2e.test_cli import run

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "conversations.md"


def _section() -> str:
    return PAGE.read_text(encoding="utf-8")


def _lines() -> list[list[str]]:
    block = re.search(r"```sh\n(.*?)```", _section(), re.DOTALL)
    assert block, "docs/conversations.md lost its examples"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.startswith("docqa ")]


def test_the_readme_graphql_examples_are_valid_against_the_schema() -> None:
    from graphql import validate

    schema = build_schema()._schema
    for block in re.findall(r"```graphql\n(.*?)```", _section(), re.DOTALL):
        assert validate(schema, parse(block)) == []
    assert validate(schema, parse((ROOT / "graphql" / "examples.graphql").read_text(encoding="utf-8"))) == []


def test_the_readme_lines_do_what_the_section_says(tmp_path: Path) -> None:
    corpus = tmp_path / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data = tmp_path / "data"
    run(data, "index", str(corpus), "--store", "acme", "--quiet")
    lines = _lines()
    assert [line[1:3] for line in lines] == [
        ["ask", "How many vacation days do I get?"],
        ["ask", "and can they be carried over?"],
        ["history", "list"],
        ["history", "show"],
        ["feedback", "rate"],
        ["feedback", "list"],
        ["feedback", "export"],
        ["eval", "regressions.yaml"],
        ["history", "delete"],
        ["history", "purge"],
    ]
    first = json.loads(run(data, *lines[0][1 : lines[0].index(">")] if ">" in lines[0] else lines[0][1:]).stdout)
    values = {"$CONVERSATION": first["conversation_id"], "$QUERY": first["query_id"]}

    def line(n: int) -> list[str]:
        return [values.get(word, word) for word in lines[n][1:]]

    follow = run(data, *line(1)).stdout
    assert f"conversation {first['conversation_id']}" in follow
    searched = re.search(r"^searched: (.*)$", follow, re.MULTILINE)
    assert searched and "vacation" in searched.group(1) and "carried" in searched.group(1)
    listed = run(data, *line(2)).stdout
    assert listed.index("and can they be carried over?") < listed.index("How many vacation days do I get?")
    shown = run(data, *line(3)).stdout
    assert shown.index("How many vacation days") < shown.index("and can they be carried over?")
    assert "rated query" in run(data, *line(4)).stdout
    feedback = run(data, *line(5)).stdout
    assert feedback.startswith("DOWN by bob: expected handbook/vacation-policy.md")
    out = tmp_path / "regressions.yaml"
    run(data, *[str(out) if w == "regressions.yaml" else w for w in line(6)])
    questions = load_questions(str(out))
    [regression] = questions.questions
    assert regression.question == "How many vacation days do I get?"
    assert regression.documents == ("handbook/vacation-policy.md",)
    assert yaml.safe_load(out.read_text())["questions"][0]["id"] == f"fb-{first['query_id']}"
    report = run(data, *[str(out) if w == "regressions.yaml" else w for w in line(7)]).stdout
    assert "hit@1" in report
    assert "deleted conversation" in run(data, *line(8)).stdout
    assert "No history." in run(data, "history", "list", "--as", "bob").stdout
    assert run(data, *line(9)).stdout.startswith("purged 0 entries older than 90 days")


def test_refusals_are_one_line_with_the_right_exit_code(tmp_path: Path) -> None:
    corpus = tmp_path / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data = tmp_path / "data"
    run(data, "index", str(corpus), "--store", "acme", "--quiet")
    first = json.loads(run(data, "search", "vacation days", "--store", "acme", "--as", "bob", "--json").stdout)
    conversation, query = first["conversation_id"], first["query_id"]
    for args, code, message in (
        (
            ["ask", "and?", "--store", "acme", "--as", "alice", "--conversation", conversation],
            3,
            "conversation not found",
        ),
        (["history", "show", conversation, "--as", "alice"], 3, "conversation not found"),
        (["history", "delete", query, "--as", "alice"], 3, "query not found"),
        (["feedback", "rate", query, "up", "--as", "alice"], 3, "query not found"),
        (["feedback", "rate", query, "sideways", "--as", "bob"], 2, "rating must be UP or DOWN"),
        (["feedback", "rate", query, "up", "--as", "bob", "--comment", "x" * 2001], 2, "comment"),
        (["history", "list", "--as", "bob", "--after", "not-a-cursor"], 2, "invalid cursor"),
        (["history", "delete", "--as", "bob"], 2, "either a query id or --conversation"),
    ):
        result = run(data, *args, check=False)
        assert result.returncode == code, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    shown = json.loads(run(data, "history", "show", conversation, "--as", "alice", "--audit", "--json").stdout)
    assert [t["query_id"] for t in shown["turns"]] == [query]  # read-only audit
    listed = json.loads(run(data, "history", "list", "--as", "bob", "--json").stdout)
    assert [e["query_id"] for e in listed["entries"]] == [query] and listed["entries"][0]["rating"] is None

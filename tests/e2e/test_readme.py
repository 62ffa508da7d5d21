"""The README's walk-through does what its comments say, run line by line as a user would."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import run

ROOT = Path(__file__).resolve().parents[2]
Q3 = "What was the revenue in the third quarter?"


def _walkthrough() -> list[list[str]]:
    """The ``docqa`` lines of the README's first code block after the two commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\nexport DOCQA_DATA_DIR=.*?\n(.*?)```", text, re.DOTALL)
    assert block, "the README lost its walk-through"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.startswith("docqa ")]


def _docqa(data_dir: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return run(data_dir, *args)  # exit 0 and no traceback, checked by the CLI suite's helper


def _documents(data_dir: Path, user: str, question: str = Q3) -> set[str]:
    out = _docqa(data_dir, ["search", question, "--store", "acme", "--as", user, "--level", "0", "--json"]).stdout
    answer: dict[str, Any] = json.loads(out)
    return {chunk["document_id"] for chunk in answer["chunks"]}


def test_the_walkthrough_does_what_its_comments_say(tmp_path: Path) -> None:
    lines = _walkthrough()
    assert [line[:3] for line in lines] == [
        ["docqa", "ask", "How many vacation days do I get?"],
        ["docqa", "ask", "What is the travel budget assumption for 2027?"],
        ["docqa", "acl", "set"],
        ["docqa", "groups", "remove-member"],
    ]
    corpus = tmp_path / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data = tmp_path / "data"
    _docqa(data, ["index", str(corpus), "--store", "acme", "--quiet"])

    bob = _docqa(data, lines[0][1:]).stdout
    assert "Answer for bob:" in bob and "vacation-policy.md" in bob
    carol = json.loads(_docqa(data, lines[1][1:]).stdout)
    assert any(c["document_id"] == "finance/budget-2027.txt" for c in carol["chunks"])

    assert "finance/q3-results.md" in _documents(data, "alice")
    _docqa(data, lines[2][1:])  # alice loses Q3 on the next query; carol keeps it
    assert "finance/q3-results.md" not in _documents(data, "alice")
    assert "finance/budget-2027.txt" in _documents(data, "alice", "travel budget 2027")
    assert "finance/q3-results.md" in _documents(data, "carol")

    _docqa(data, lines[3][1:])  # and now carol loses every finance document
    assert not any(d.startswith("finance/") for d in _documents(data, "carol"))
    assert not any(d.startswith("finance/") for d in _documents(data, "carol", "travel budget 2027"))


@pytest.mark.parametrize("command", ["python3 -m venv .venv", "bash examples/demo.sh", "python -m pytest"])
def test_the_two_commands_are_still_the_first_thing(command: str) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = text.split("```sh", 1)[1].split("```", 1)[0]
    assert command in first_block

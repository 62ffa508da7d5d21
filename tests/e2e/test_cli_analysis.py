"""The summary and comparison lines of docs/analysis.md, run as a user runs them on the Acme corpus."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.e2e import test_cli
from tests.e2e.test_cli import ROOT, run

corpus = test_cli.corpus  # the CLI suite's fixture: a copy of examples/acme


def _lines() -> list[list[str]]:
    section = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "docs/analysis.md lost its summary and comparison examples"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.startswith("docqa ")]


def test_the_readme_summary_and_comparison_lines_do_what_they_say(corpus: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    run(data, "index", str(corpus), "--store", "acme", "--quiet")
    summarize, summarize_json, compare, forbidden = _lines()

    text = run(data, *summarize[1:]).stdout
    assert "Extractive summary (sentences quoted from the document, no language model)" in text
    assert "[1]" in text and "sections cited:" in text

    short = json.loads(run(data, *summarize_json[1:]).stdout)
    assert short["extractive"] is True and short["query_class"] == "summary" and short["length"] == "short"
    assert 1 <= short["sections_covered"] <= 5 and short["sections"][0]["chunk_ids"]
    source = (corpus / "handbook" / "vacation-policy.md").read_text(encoding="utf-8")
    for sentence in re.split(r"\s*\[\d+\]\s*", short["summary"]):
        if sentence:
            assert " ".join(sentence.split()[:4]) in " ".join(source.split())  # quoted, not written

    compared = run(data, *compare[1:]).stdout
    assert "Extractive comparison" in compared and "handbook/expenses.md" in compared
    assert "handbook/vacation-policy.md" in compared

    refused = run(data, *forbidden[1:], check=False)
    assert refused.returncode == 3 and refused.stderr.startswith("error: document") and "not found" in refused.stderr
    missing = run(data, "summarize", "finance/nothing.md", "--store", "acme", "--as", "bob", check=False)
    assert missing.stderr.replace("nothing.md", "X") == refused.stderr.replace("q3-results.md", "X")
    one = run(data, "compare", "handbook/expenses.md", "--store", "acme", "--as", "bob", check=False)
    assert one.returncode == 2 and "2 to 5" in one.stderr
    six = ["handbook/expenses.md"] + [f"d{i}" for i in range(5)]
    assert run(data, "compare", *six, "--store", "acme", "--as", "bob", check=False).returncode == 2
    hidden = run(
        data, "compare", "handbook/expenses.md", "finance/q3-results.md", "--store", "acme", "--as", "bob", check=False
    )
    assert hidden.returncode == 3 and "q3" in hidden.stderr and not hidden.stdout

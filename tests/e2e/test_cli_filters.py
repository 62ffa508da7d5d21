"""``docqa ask/search`` metadata filter options as a user runs them: docs/filters.md's examples, and bad input."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_cli import run

ROOT = Path(__file__).resolve().parents[2]


def _readme_lines() -> list[list[str]]:
    """The ``docqa`` lines of the page *Metadata filters* (docs/filters.md)."""
    section = (ROOT / "docs" / "filters.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "docs/filters.md lost its examples"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.startswith("docqa ")]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data_dir = tmp_path_factory.mktemp("data")
    run(data_dir, "index", str(corpus), "--store", "acme", "--quiet")
    return data_dir


def _documents(out: str) -> set[str]:
    return {chunk["document_id"] for chunk in json.loads(out)["chunks"]}


def test_the_readme_examples_do_what_their_comments_say(data: Path) -> None:
    lines = _readme_lines()
    assert len(lines) == 6
    outputs = [run(data, *line[1:]).stdout for line in lines]
    handbook = _documents(outputs[0])
    assert handbook and all(d.startswith("handbook/") for d in handbook)
    assert _documents(outputs[1]) == {"handbook/security.html"}
    assert "Answer for bob:" in outputs[2] and "handbook/vacation-policy.md" in outputs[2]
    assert "security.html" not in outputs[2] and "expenses.md" not in outputs[2]  # the title filter
    assert _documents(outputs[3])  # every file has a modified and an indexed date
    assert _documents(outputs[4]) == set()  # bob may not read finance/: the filter does not widen access
    assert _documents(outputs[5]) == set()
    unfiltered = run(data, "search", "revenue", "--store", "acme", "--as", "alice", "--level", "0", "--json").stdout
    assert "finance/q3-results.md" in _documents(unfiltered)
    narrowed = run(
        data, "search", "revenue", "--store", "acme", "--as", "alice", "--level", "0", "--json",
        "--path-glob", "finance/*.txt", "--k", "3",
    ).stdout  # fmt: skip
    assert _documents(narrowed) == {"finance/budget-2027.txt"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--modified-from", "2024-02-01", "--modified-to", "2024-01-01"], "modified date range is empty"),
        (["--indexed-from", "31/12/2024"], "is not an ISO-8601 date"),
        (["--meta", "Dept=hr"], "metadata key 'Dept' is not valid"),
        (["--meta", "dept"], "give KEY=VALUE"),
        (["--path-glob", "*" * 257], "longer than 256 characters"),
        (["--path-prefix", ""], "must not be empty"),
        (["--content-type", "html"], "is not a media type"),
    ],
)
def test_bad_filter_options_are_one_line_and_exit_2(data: Path, options: list[str], message: str) -> None:
    result = run(data, "search", "vacation", "--store", "acme", "--as", "bob", *options, check=False)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""

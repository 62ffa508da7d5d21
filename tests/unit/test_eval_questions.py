"""The question file of ``docqa eval``: read as written, every mistake named with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from acl.errors import InvalidArgument
from service.quality.questions import load_questions, parse_questions

pytestmark = pytest.mark.unit

GOOD = """\
corpus: sample
root: /srv/docs
questions:
  - id: a1
    question: How many vacation days do I get?
    documents: [handbook/vacation.md]
    terms: ["25 days", twenty-five]
  - id: a2
    question: Who approves travel?
    documents: handbook/travel.md
  - id: u1
    question: What is the capital of Peru?
    unanswerable: true
"""


def test_a_good_file_reads_as_written() -> None:
    questions = parse_questions(GOOD, "q.yaml")
    assert (questions.corpus, questions.root) == ("sample", "/srv/docs")
    first, second, third = questions.questions
    assert first.documents == ("handbook/vacation.md",) and first.terms == ("25 days", "twenty-five")
    assert (first.line, second.line, third.line) == (4, 8, 11)
    assert second.documents == ("handbook/travel.md",) and second.terms == ()
    assert third.unanswerable and third.documents == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("questions: [\n  - id: a\n", "q.yaml:"),
        ("", "q.yaml: the file is empty"),
        ("- a\n- b\n", "q.yaml:1: the file must be a mapping"),
        ("corpus: x\n", "q.yaml:1: no 'questions' list"),
        ("questions: []\n", "q.yaml:1: 'questions' must be a non-empty list"),
        ("questions:\n  - id: a\n    question: q\n    document: [x]\n", "q.yaml:4: unknown key 'document'"),
        ("questions:\n  - id: a\n    question: q\n", "q.yaml:2: an answerable question needs 'documents'"),
        ("questions:\n  - question: q\n    documents: [x]\n", "q.yaml:2: a question needs 'id'"),
        (
            "questions:\n  - {id: a, question: q, documents: [x]}\n  - {id: a, question: r, documents: [y]}\n",
            "q.yaml:3: question id 'a' already used on line 2",
        ),
        (
            "questions:\n  - id: u\n    question: q\n    unanswerable: true\n    documents: [x]\n",
            "q.yaml:5: an unanswerable question lists no documents",
        ),
        ("questions:\n  - {id: u, question: q, unanswerable: maybe}\n", "q.yaml:2: unanswerable must be true or false"),
        ("questions:\n  - {id: a, question: '', documents: [x]}\n", "q.yaml:2: question must not be empty"),
        ("questions:\n  - {id: a, question: q, documents: {x: 1}}\n", "q.yaml:2: documents must be a list"),
        ("questions:\n  - {id: a, question: q, documents: [[x]]}\n", "q.yaml:2: documents must be a single value"),
        ("questions:\n  - {id: a, question: q, documents: [x]}\nextra: 1\n", "q.yaml:3: unknown key 'extra'"),
    ],
)
def test_every_mistake_names_its_line(text: str, expected: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_questions(text, "q.yaml")
    assert caught.value.message.startswith(expected), caught.value.message


def test_unreadable_and_binary_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot read the question file"):
        load_questions(tmp_path / "missing.yaml")
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage\x00")
    with pytest.raises(InvalidArgument, match="not valid YAML"):
        load_questions(binary)


def test_the_shipped_question_files_load() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in [root / "examples" / "acme-questions.yaml", *sorted((root / "bench" / "quality").glob("*.yaml"))]:
        questions = load_questions(path)
        assert questions.questions, path


def test_the_shipped_follow_up_pairs_are_well_formed() -> None:
    import yaml

    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "bench" / "quality" / "followups").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        pairs = data["pairs"]
        assert len(pairs) >= 30, path
        assert len({p["id"] for p in pairs}) == len(pairs), path
        for pair in pairs:
            assert {"first", "follow_up", "standalone", "documents"} <= set(pair), pair.get("id")
            assert pair["follow_up"] != pair["standalone"] and pair["documents"], pair["id"]


def test_passages_near_misses_and_sources_are_read() -> None:
    questions = parse_questions(
        """\
corpus: debian-git
sources:
  - {from: /usr/share/doc/git-doc, include: "**/*.html"}
  - {from: /usr/share/doc/debian-policy/policy.pdf.gz, to: pdf/policy.pdf}
questions:
  - id: g1
    question: How do I get rid of untracked files?
    documents: [git-clean.html]
    passage: "Cleans the working tree by recursively removing files ... starting from the current directory."
  - id: n1
    question: How do I create a branch in Mercurial?
    unanswerable: true
    near: true
"""
    )
    first, near = questions.questions
    assert first.passages == (
        "Cleans the working tree by recursively removing files",
        "starting from the current directory.",
    )
    assert near.near and near.unanswerable
    assert [(s.origin, s.include, s.to) for s in questions.sources] == [
        ("/usr/share/doc/git-doc", "**/*.html", ""),
        ("/usr/share/doc/debian-policy/policy.pdf.gz", "**/*", "pdf/policy.pdf"),
    ]
    # White space, case, citation marks and the space an HTML loader leaves before punctuation aside.
    assert first.quotes_passage("git-clean: cleans the working tree by recursively removing  files  [1]")
    assert not first.quotes_passage("Remove untracked files from the working tree [1]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "questions:\n  - id: a\n    question: q\n    documents: [d]\n    near: true\n",
            ":5: 'near' marks an unanswerable",
        ),
        (
            "questions:\n  - id: u\n    question: q\n    unanswerable: true\n    passage: p\n",
            ":5: an unanswerable question",
        ),
        (
            "sources: [{to: x}]\nquestions:\n  - id: a\n    question: q\n    documents: [d]\n",
            ":1: a source needs 'from'",
        ),
        (
            "questions:\n  - id: u\n    question: What is PPR-9087?\n    unanswerable: true\n    identifier: true\n",
            ":5: 'identifier' marks an answerable question",
        ),
        (
            "questions:\n  - id: a\n    question: q\n    documents: [d]\n    identifier: sometimes\n",
            ":5: identifier must be true or false",
        ),
    ],
)
def test_new_keys_are_checked_with_their_line(text: str, expected: str) -> None:
    with pytest.raises(InvalidArgument, match=expected):
        parse_questions(text, "q.yaml")


def test_identifier_questions_are_marked_apart() -> None:
    questions = parse_questions(
        """\
questions:
  - id: i1
    question: What does max_wal_senders limit?
    documents: [runtime-config-replication.html]
    identifier: true
  - id: a1
    question: How many standbys may stream at once?
    documents: [runtime-config-replication.html]
"""
    )
    assert [q.identifier for q in questions.questions] == [True, False]


def test_the_shipped_identifier_questions_are_answerable_and_marked() -> None:
    root = Path(__file__).resolve().parents[2]
    for name, at_least in (("postgresql-15.yaml", 12), ("debian-git.yaml", 8)):
        marked = [q for q in load_questions(root / "bench" / "quality" / name).questions if q.identifier]
        assert len(marked) >= at_least, name
        assert all(q.documents and not q.unanswerable for q in marked), name

"""A question set: questions with the documents that answer them, or marked unanswerable.

The file is YAML::

    corpus: postgresql-doc-15            # optional, shown in reports
    root: /usr/share/doc/postgresql-doc-15/html   # optional, where the corpus lies
    questions:
      - id: a001
        question: How can I build an index without blocking writes?
        documents: [sql-createindex.html]   # any of them counts as a hit
        terms: [CONCURRENTLY]               # an answer quoting any of them quotes the answering term
        passage: "... builds the index without taking any locks that prevent concurrent inserts ..."
      - id: i001
        question: What does max_wal_senders limit?
        documents: [runtime-config-replication.html]
        identifier: true                    # names an exact identifier (counted apart: identifier_hit_at_3)
      - id: u001
        question: How large should the InnoDB buffer pool be?
        unanswerable: true
        near: true                          # near the corpus's domain (another product, version, ...)

``passage`` is the answering text, verbatim; "..." marks cuts, and an answer
quotes the passage when it holds one of its pieces (``quotes_passage``).
``sources`` (instead of ``root``) assembles a corpus from several places for
``bench/quality.py``: ``- {from: /usr/share/doc/git-doc, include: "**/*.html"}``,
``- {from: /usr/share/doc/debian-policy/policy.pdf.gz, to: pdf/policy.pdf}``.

Every mistake is reported with the file and line it is on, and nothing is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from acl.errors import InvalidArgument

#: The longest question file read, in bytes.
MAX_FILE_BYTES = 5_000_000
_QUESTION_KEYS = frozenset({"id", "question", "documents", "terms", "unanswerable", "passage", "near", "identifier"})
_TOP_KEYS = frozenset({"corpus", "root", "sources", "questions"})
_SOURCE_KEYS = frozenset({"from", "include", "to"})
#: Words a piece of a passage needs to count (a shorter one would be found by chance).
_PASSAGE_WORDS = 4
_CUTS = re.compile(r"\s*(?:\.\.\.|…)\s*")
_CITATION = re.compile(r"\s*\[\d+\]")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+(?=[,.;:!?)\]])")


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """One question: the documents that answer it (none when unanswerable) and its key terms."""

    id: str
    question: str
    documents: tuple[str, ...]
    terms: tuple[str, ...]
    unanswerable: bool
    line: int
    #: The answering text's pieces (a passage cut at "..."), verbatim; () when the file gives none.
    passages: tuple[str, ...] = ()
    #: An unanswerable question near the corpus's domain (another product or version), not off it.
    near: bool = False
    #: An answerable question that names an exact identifier (a setting, a function, a code, an option, a
    #: command) that its documents spell: counted apart (``identifier_hit_at_3``).
    identifier: bool = False

    def quotes_passage(self, answer: str) -> bool | None:
        """Whether ``answer`` holds a piece of the passage (white space, case and citation marks aside);
        None when the question has no passage."""
        pieces = [_normal(p) for p in self.passages]
        pieces = [p for p in pieces if len(p.split()) >= _PASSAGE_WORDS] or pieces
        if not pieces:
            return None
        text = _normal(_CITATION.sub("", answer))
        return any(piece in text for piece in pieces)


def _normal(text: str) -> str:
    return _SPACE_BEFORE_PUNCTUATION.sub("", " ".join(text.split())).casefold().strip(" .")


@dataclass(frozen=True, slots=True)
class CorpusSource:
    """Where ``bench/quality.py`` copies part of a corpus from: a folder (its files matching ``include``) or
    one file (``to``: its path in the corpus; a ``.gz`` file is unpacked)."""

    origin: str
    include: str = "**/*"
    to: str = ""


@dataclass(frozen=True, slots=True)
class QuestionSet:
    path: str
    corpus: str
    root: str
    questions: tuple[EvalQuestion, ...]
    sources: tuple[CorpusSource, ...] = ()

    def line_of(self, question_id: str) -> int:
        return next(q.line for q in self.questions if q.id == question_id)


class _Reader:
    """Reads the composed YAML tree, so that every error can name its line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, node: Node | None, message: str) -> InvalidArgument:
        where = f"{self.path}:{node.start_mark.line + 1}" if node is not None else self.path
        return InvalidArgument(f"{where}: {message}")

    def mapping(self, node: Node, allowed: frozenset[str], what: str) -> dict[str, tuple[Node, Node]]:
        if not isinstance(node, MappingNode):
            raise self.error(node, f"{what} must be a mapping")
        found: dict[str, tuple[Node, Node]] = {}
        for key, value in node.value:
            name = self.scalar(key, "a key")
            if name not in allowed:
                raise self.error(key, f"unknown key {name!r} in {what} (known: {', '.join(sorted(allowed))})")
            if name in found:
                raise self.error(key, f"{name!r} given twice in {what}")
            found[name] = (key, value)
        return found

    def scalar(self, node: Node, what: str) -> str:
        if not isinstance(node, ScalarNode) or node.tag.endswith(":null"):
            raise self.error(node, f"{what} must be a single value")
        return str(node.value).strip()

    def text(self, node: Node, what: str, limit: int = 2_000) -> str:
        value = self.scalar(node, what)
        if not value:
            raise self.error(node, f"{what} must not be empty")
        if len(value) > limit:
            raise self.error(node, f"{what} is longer than {limit} characters")
        return value

    def texts(self, node: Node, what: str) -> tuple[str, ...]:
        if isinstance(node, ScalarNode):
            return (self.text(node, what),)
        if not isinstance(node, SequenceNode):
            raise self.error(node, f"{what} must be a list")
        return tuple(self.text(item, what) for item in node.value)

    def flag(self, node: Node, what: str) -> bool:
        if not isinstance(node, ScalarNode) or not node.tag.endswith(":bool"):
            raise self.error(node, f"{what} must be true or false")
        return str(node.value).lower() in ("true", "yes", "on")


def load_questions(path: str | Path) -> QuestionSet:
    """The question set in ``path``; InvalidArgument naming the file and line of the first mistake."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"{name}: cannot read the question file: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidArgument(f"{name}: larger than {MAX_FILE_BYTES} bytes")
    return parse_questions(data, name)


def parse_questions(data: bytes | str, name: str = "<questions>") -> QuestionSet:
    """The question set in ``data`` (YAML text); errors name ``name`` and the line."""
    reader = _Reader(name)
    try:
        root = yaml.compose(data, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InvalidArgument(f"{name}{line}: not valid YAML: {exc.problem or exc.context}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{name}: not valid YAML: {exc}") from None
    if root is None:
        raise InvalidArgument(f"{name}: the file is empty")
    top = reader.mapping(root, _TOP_KEYS, "the file")
    if "questions" not in top:
        raise reader.error(root, "no 'questions' list")
    corpus = reader.scalar(top["corpus"][1], "corpus") if "corpus" in top else ""
    where = reader.scalar(top["root"][1], "root") if "root" in top else ""
    sources = _sources(reader, top["sources"][1]) if "sources" in top else ()
    items = top["questions"][1]
    if not isinstance(items, SequenceNode) or not items.value:
        raise reader.error(items, "'questions' must be a non-empty list")
    questions: list[EvalQuestion] = []
    seen: dict[str, int] = {}
    for item in items.value:
        question = _question(reader, item)
        if question.id in seen:
            raise reader.error(item, f"question id {question.id!r} already used on line {seen[question.id]}")
        seen[question.id] = question.line
        questions.append(question)
    return QuestionSet(name, corpus, where, tuple(questions), sources)


def _sources(reader: _Reader, node: Node) -> tuple[CorpusSource, ...]:
    if not isinstance(node, SequenceNode) or not node.value:
        raise reader.error(node, "'sources' must be a non-empty list")
    out: list[CorpusSource] = []
    for item in node.value:
        fields = reader.mapping(item, _SOURCE_KEYS, "a source")
        if "from" not in fields:
            raise reader.error(item, "a source needs 'from'")
        out.append(
            CorpusSource(
                origin=reader.text(fields["from"][1], "from"),
                include=reader.text(fields["include"][1], "include") if "include" in fields else "**/*",
                to=reader.text(fields["to"][1], "to") if "to" in fields else "",
            )
        )
    return tuple(out)


def _question(reader: _Reader, item: Node) -> EvalQuestion:
    fields = reader.mapping(item, _QUESTION_KEYS, "a question")
    for required in ("id", "question"):
        if required not in fields:
            raise reader.error(item, f"a question needs {required!r}")
    unanswerable = reader.flag(fields["unanswerable"][1], "unanswerable") if "unanswerable" in fields else False
    documents = reader.texts(fields["documents"][1], "documents") if "documents" in fields else ()
    terms = reader.texts(fields["terms"][1], "terms") if "terms" in fields else ()
    passages = reader.texts(fields["passage"][1], "passage") if "passage" in fields else ()
    near = reader.flag(fields["near"][1], "near") if "near" in fields else False
    identifier = reader.flag(fields["identifier"][1], "identifier") if "identifier" in fields else False
    if unanswerable and documents:
        raise reader.error(fields["documents"][0], "an unanswerable question lists no documents")
    if near and not unanswerable:
        raise reader.error(fields["near"][0], "'near' marks an unanswerable question")
    if identifier and unanswerable:
        raise reader.error(fields["identifier"][0], "'identifier' marks an answerable question")
    if unanswerable and passages:
        raise reader.error(fields["passage"][0], "an unanswerable question has no passage")
    if not unanswerable and not documents:
        raise reader.error(item, "an answerable question needs 'documents' (or 'unanswerable: true')")
    return EvalQuestion(
        id=reader.text(fields["id"][1], "id", 100),
        question=reader.text(fields["question"][1], "question", 10_000),
        documents=documents,
        terms=terms,
        unanswerable=unanswerable,
        line=item.start_mark.line + 1,
        passages=tuple(piece for text in passages for piece in _CUTS.split(text) if piece.strip()),
        near=near,
        identifier=identifier,
    )

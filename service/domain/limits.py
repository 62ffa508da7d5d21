"""Every bound on a request, once: question length, chunk counts, documents per query."""

from __future__ import annotations

from dataclasses import dataclass

from acl.errors import InvalidArgument

#: ``max_chunks`` that asks MultiDocumentQuery for whole documents instead of chunks.
WHOLE_DOCUMENTS = -1
#: The largest ``max_chunks`` a store's settings may hold.
MAX_STORE_CHUNKS = 100


#: The characters no question may hold: C0 controls but tab, line feed and carriage return, and DEL.
_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F)) - {"\t", "\n", "\r"}


@dataclass(frozen=True, slots=True)
class Limits:
    """What one query may ask for (``query.*`` in the configuration), and what one summary or comparison may
    consider (``analysis.*``: a longer document is sampled evenly, in order, and the result says so)."""

    max_question_chars: int = 4000
    max_k: int = 100
    max_documents: int = 1000
    max_document_id_chars: int = 1000
    #: Sentences an extractive summary ranks at most (its similarity matrix is this squared).
    max_sentences: int = 2000
    #: Chunks per document a comparison aligns into topics at most.
    max_compared_chunks: int = 400

    def chunk_count(
        self, requested: int | None, default: int, *, allow_whole: bool = False, name: str = "max_chunks"
    ) -> int:
        """The number of chunks to use: ``requested``, else ``default``; 1..max_k (or WHOLE_DOCUMENTS)."""
        k = default if requested is None else requested
        if allow_whole and k == WHOLE_DOCUMENTS:
            return k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= self.max_k:
            raise InvalidArgument(f"{name} must be between 1 and {self.max_k}")
        return k

    def question(self, question: object) -> str:
        """The question, stripped; InvalidArgument when empty or too long."""
        if not isinstance(question, str) or not question.strip():
            raise InvalidArgument("question must not be empty")
        if len(question) > self.max_question_chars:
            raise InvalidArgument(f"question is longer than {self.max_question_chars} characters")
        storable_text(question, "question")
        return question.strip()

    def document_ids(self, ids: object) -> list[str]:
        """Distinct document ids in order; InvalidArgument when none, too many, or malformed."""
        unique = list(dict.fromkeys(ids))  # type: ignore[call-overload]
        if not unique:
            raise InvalidArgument("at least one document id is required")
        if len(unique) > self.max_documents:
            raise InvalidArgument(f"at most {self.max_documents} document ids are allowed")
        for document_id in unique:
            check_document_id(document_id, self.max_document_id_chars)
        return unique


def check_document_id(document_id: object, max_chars: int) -> None:
    """InvalidArgument unless ``document_id`` is a non-empty string of at most ``max_chars`` valid Unicode text."""
    if not isinstance(document_id, str) or not document_id.strip() or len(document_id) > max_chars:
        raise InvalidArgument(f"document ids must be non-empty strings of at most {max_chars} characters")
    if not is_valid_unicode(document_id):
        raise InvalidArgument("document ids must be valid Unicode text (one holds a lone surrogate)")


def storable_text(text: str, name: str) -> None:
    """InvalidArgument unless every database can store ``text`` (a question): no control characters but tab,
    line feed and carriage return (PostgreSQL's text refuses NUL, after the work is done), no lone surrogate
    (JSON's "\\ud800" is no character; UTF-8 cannot hold it)."""
    if any(ch in _CONTROL for ch in text):
        raise InvalidArgument(f"{name} must not contain control characters (tabs and line breaks are fine)")
    if not is_valid_unicode(text):
        raise InvalidArgument(f"{name} must be valid Unicode text (it holds a lone surrogate)")


def is_valid_unicode(text: str) -> bool:
    """Whether ``text`` is valid Unicode: no lone surrogate, so UTF-8 (every database's text) can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

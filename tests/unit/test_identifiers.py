"""The exact identifiers a question names (``service.domain.answerability.identifiers``) and how they move the
ranked candidates (``service.query.identifiers.pinned``): a rare one's best chunk into the first three, nothing
dropped; a common one leaves the order alone."""

from __future__ import annotations

import pytest

from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from service.domain.answerability import distinctive_terms, identifiers
from service.query.identifiers import PINNED_WITHIN, pinned, unnamed

pytestmark = pytest.mark.unit

EVERYONE = Acl(allow=frozenset({"group:everyone"}))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What does PPR-9087 say about refunds?", ["PPR-9087"]),
        ("What does max_wal_senders limit?", ["max_wal_senders"]),
        ("When is ERRCODE_UNIQUE_VIOLATION raised?", ["ERRCODE_UNIQUE_VIOLATION"]),
        ("What does git reset --soft keep?", ["--soft", "git reset"]),
        ("How does `git cherry-pick` pick commits?", ["git cherry-pick"]),
        ("What does SQLSTATE 42P01 mean?", ["SQLSTATE", "42P01"]),
        ("Which modes conflict with AccessExclusiveLock?", ["AccessExclusiveLock"]),
        ("What does git commit -m do?", ["git commit", "-m"]),
        ("What do pg_stat.activity and pg_catalog.pg_class show?", ["pg_stat.activity", "pg_catalog.pg_class"]),
        (
            'What does "duplicate key value violates unique constraint" mean?',
            ["duplicate key value violates unique constraint"],
        ),
        ("What does pg_terminate_backend() do?", ["pg_terminate_backend"]),
        # No identifier: a shouted question, quantities and ordinals, "git" before a function word.
        ("HOW DO I RESET GIT", []),
        ("Why did a 100ms query come 2nd with 64GB of memory?", []),
        ("Is git to blame for slow disks?", []),
        ("How do I create a new branch?", []),
    ],
)
def test_identifiers_read_from_the_question(question: str, expected: list[str]) -> None:
    assert [t.text for t in identifiers(question)] == expected


def test_an_identifier_is_spelled_exactly_a_quoted_message_in_any_case() -> None:
    [code] = identifiers("What is PPR-9087?")
    assert code.mentioned_in("see PPR-9087.") and code.mentioned_in("(PPR-9087)")
    assert (
        not code.mentioned_in("ppr-9087") and not code.mentioned_in("PPR-90871") and not code.mentioned_in("X-PPR-9087")
    )
    [short] = identifiers("What does git tag -m do?")[1:]
    assert short.mentioned_in("use -m <msg>") and not short.mentioned_in("use -M") and not short.mentioned_in("--m")
    [message] = identifiers('Why "Permission denied (publickey)"?')
    assert message.mentioned_in("ssh says permission denied\n(publickey) and stops")


def test_the_answerability_terms_are_unchanged_by_identifier_shapes() -> None:
    """Codes, CapWords and capitals are identifiers for ranking only: the terms an answer must speak of stay."""
    assert [t.text for t in distinctive_terms("What does SIGHUP do to PPR-9087?")] == []
    assert [(t.text, t.identifier) for t in distinctive_terms("Does InnoDB use --force-with-lease?")] == [
        ("--force-with-lease", True),
        ("InnoDB", False),
    ]


def _hit(document: str, ordinal: int, text: str) -> SearchHit:
    chunk = ChunkRecord(
        chunk_id=f"{document}#{ordinal}",
        document_id=document,
        ordinal=ordinal,
        text=text,
        title=document,
        source_uri=f"file:///{document}",
        heading_path=(),
        start=0,
        end=len(text),
        acl=EVERYONE,
    )
    return SearchHit(chunk, 0.5)


def _ids(hits: list[SearchHit]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


RANKED = [_hit(f"d{i}", 0, f"refund rules, part {i}") for i in range(9)]


def test_a_rare_identifiers_best_chunk_moves_into_the_first_three_and_nothing_is_dropped() -> None:
    ranked = [*RANKED[:6], _hit("ledger", 0, "Change PPR-9087 moved the export."), *RANKED[6:]]
    moved = pinned("Does PPR-9087 change refunds?", ranked)
    assert _ids(moved) == ["d0#0", "d1#0", "ledger#0", "d2#0", "d3#0", "d4#0", "d5#0", "d6#0", "d7#0", "d8#0"]


def test_the_best_ranked_chunk_that_names_it_is_the_one_moved() -> None:
    ranked = [*RANKED[:5], _hit("a", 3, "PPR-9087 first"), _hit("a", 4, "PPR-9087 again"), *RANKED[5:]]
    assert _ids(pinned("What is PPR-9087?", ranked))[:PINNED_WITHIN] == ["d0#0", "d1#0", "a#3"]


def test_several_identifiers_fill_the_first_three_in_their_order() -> None:
    ranked = [*RANKED[:5], _hit("b", 0, "use --soft"), *RANKED[5:7], _hit("c", 0, "PPR-9087 here"), *RANKED[7:]]
    moved = pinned("Does PPR-9087 need git reset --soft?", ranked)
    assert _ids(moved)[:3] == ["d0#0", "b#0", "c#0"]
    assert sorted(_ids(moved)) == sorted(_ids(ranked))


def test_an_identifier_already_in_the_first_three_stays_where_it_is() -> None:
    ranked = [RANKED[0], RANKED[1], _hit("c", 0, "PPR-9087 here"), *RANKED[2:]]
    assert pinned("What is PPR-9087?", ranked) == ranked


def test_an_identifier_many_documents_name_leaves_the_order_alone() -> None:
    """Four of ten documents spell it: it tells them apart no better than a word does."""
    ranked = [*RANKED[:6], *(_hit(f"e{i}", 0, f"PPR-9087 note {i}") for i in range(4))]
    assert pinned("What is PPR-9087?", ranked) == ranked
    three = [*RANKED[:7], *(_hit(f"e{i}", 0, f"PPR-9087 note {i}") for i in range(3))]
    assert _ids(pinned("What is PPR-9087?", three))[:3] == ["d0#0", "d1#0", "e0#0"]


def test_a_misspelt_identifier_or_none_leaves_the_order_alone() -> None:
    ranked = [*RANKED[:6], _hit("ledger", 0, "Change PPR-9087 moved the export.")]
    assert pinned("What is ppr-9087?", ranked) == ranked
    assert pinned("What changed in the export?", ranked) == ranked


def test_unnamed_identifiers_are_those_no_candidate_spells() -> None:
    hits = [_hit("a", 0, "git reset --soft keeps the index")]
    assert [t.text for t in unnamed("Does git reset --hard or --soft drop PPR-9087?", hits)] == ["--hard", "PPR-9087"]

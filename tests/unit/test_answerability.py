"""A question about something the readable documents do not speak of is refused, whatever the vector score.

The texts are from Debian's git-doc pages, the Debian Policy Manual and "A Brief History of Debian" (as
their loaders write them); the questions are the near misses a new user asked."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from acl.model import Acl
from service.domain.answerability import distinctive_terms
from service.domain.queries import NO_RELEVANT_DOCUMENT, Caller, VectorQuery
from tests.unit.engine_world import World, make_world

EVERYONE = Acl(allow=frozenset({"group:everyone"}))
FINANCE = Acl(allow=frozenset({"group:finance"}))

GIT_BRANCH = [
    "Creating a new branch\n\nSometimes you may wish to create a new branch without actually checking it out "
    "and switching to it. If so, just use the command git branch <branchname> [startingpoint].",
    "git switch -c mybranch will create a new branch based at the current HEAD position, and switch to it.",
]
POLICY_VCS = [
    "5.6.26 Version Control System (VCS) fields\n\nThe following values for <type> are supported, with the "
    "corresponding VCS indicated in parentheses if it isn’t obvious:\n\n• Arch\n• Bzr (Bazaar)\n• Git\n"
    "• Hg (Mercurial)\n• Svn (Subversion)\n\nIn the case of Mercurial, the value must have the following "
    'syntax:\n\n<url> [ " -b " <branch> ]',
]
HISTORY = [
    "Debian 2.0 Hamm (July 24th, 1998): Named for the piggy-bank in the Toy Story movies. This release made "
    "the transition to libc6. Debian 2.1 Slink (March 9th, 1999): Named for the slinky-dog in the movie.",
    "Two more architectures were added, Alpha and SPARC. With Wichert Akkerman as Project Leader, this release "
    "consisted of about 2250 packages. The key technical innovation was the introduction of apt, a new package "
    "management interface.",
    "Debian 3.1 Sarge (June 6th, 2005): This release updates about 73% of the software and includes over 9,000 "
    "new packages.",
]


def world() -> World:
    w = make_world(level=0.0, max_chunks=4)
    w.add("git-branch.html", GIT_BRANCH, EVERYONE)
    w.add("policy.pdf", POLICY_VCS, EVERYONE)
    w.add("project-history.pdf", HISTORY, EVERYONE)
    return w


def test_a_product_the_store_mentions_only_in_passing_is_refused() -> None:
    # Was: git-switch text as a confident answer ("Hg (Mercurial)" sits in a list of policy's VCS fields).
    answer = world().ask("u", VectorQuery("s", "How do I create a new branch in Mercurial?"))
    assert answer.answer == NO_RELEVANT_DOCUMENT and answer.no_relevant_document
    assert answer.chunks == ()
    assert any("“Mercurial”" in w for w in answer.warnings)
    assert not answer.retry_without_threshold_allowed


def test_a_version_nothing_readable_mentions_is_refused() -> None:
    # Was: Debian 3.1's "9,000 new packages" for Ubuntu 22.04.
    w = world()
    answer = w.ask("u", VectorQuery("s", "How many new packages are in Ubuntu 22.04?"))
    assert answer.no_relevant_document and any("“Ubuntu 22.04”" in x for x in answer.warnings)
    assert w.generator.prompts == []  # the language model is not called


def test_a_name_stated_across_a_chunk_boundary_is_answered() -> None:
    # "Debian 2.1 Slink" ends one chunk; what is said of it ("The key technical innovation …") starts the next.
    answer = world().ask("u", VectorQuery("s", "What was the key technical innovation of Debian 2.1 Slink?"))
    assert not answer.no_relevant_document
    assert any("key technical innovation" in c.text for c in answer.chunks)


def test_the_same_question_about_the_store_s_own_subject_is_answered() -> None:
    answer = world().ask("u", VectorQuery("s", "How do I create a new branch with git switch?"))
    assert not answer.no_relevant_document and answer.warnings == ()


def test_a_search_keeps_its_chunks_and_says_which_name_is_missing() -> None:
    answer = world().ask("u", VectorQuery("s", "How do I create a new branch in Mercurial?", perform_llm_query=False))
    assert answer.chunks and answer.answer is None
    assert any("“Mercurial”" in w for w in answer.warnings)


def test_a_name_only_an_unreadable_document_mentions_is_still_refused() -> None:
    # The verdict reads only what the caller may read: a finance page about Mercurial changes nothing for "u"
    # (and the refusal is the same words whether or not such a page exists).
    w = world()
    w.add("finance-vcs.md", ["To create a new branch in Mercurial, run hg branch NAME and commit."], FINANCE)
    asked = VectorQuery("s", "How do I create a new branch in Mercurial?")
    outsider, insider = w.ask("u", asked), w.engine.ask(Caller("fiona", asserted_groups=("group:finance",)), asked)
    assert outsider.no_relevant_document and outsider.answer == world().ask("u", asked).answer
    assert outsider.warnings == world().ask("u", asked).warnings
    assert not insider.no_relevant_document
    assert {c.document_id for c in insider.chunks} >= {"finance-vcs.md"}


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("How do I create a new branch in Mercurial?", ["Mercurial"]),
        ("How many packages are in Ubuntu 22.04?", ["Ubuntu 22.04"]),
        ("How do I register a RHEL 9 server with subscription-manager?", ["RHEL 9"]),
        ("What does --force-with-lease protect against?", ["--force-with-lease"]),
        ("What belongs in the %files section of an RPM spec file?", ["%files"]),
        ("How do I configure the built-in git sync command?", ["git sync"]),
        (
            "Who was elected Debian Project Leader in 2024?",
            ["2024", "Debian Project Leader", "Debian", "Project", "Leader"],
        ),
        # acronyms name kinds of things, examples and quoted values are the asker's own
        ("How can I carry commits over to it on a USB stick?", []),
        ("I have values like 'john.smith@example.com'; which function cuts a string?", []),
        ("How can every session get its own value of a setting, such as work_mem?", []),
        ("Can git remember how I resolved them?", []),
        ("What was the key technical innovation of Debian 2.1 Slink?", ["Debian 2.1", "Slink"]),
        ("How do I set up failover for an Oracle RAC cluster?", ["Oracle RAC", "Oracle"]),
        ("Which menu in pgAdmin 4 schedules a job with pgAgent?", ["pgAdmin", "pgAgent", "pgAdmin 4"]),
    ],
)
def test_distinctive_terms(question: str, terms: list[str]) -> None:
    assert [t.text for t in distinctive_terms(question)] == terms


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_terms_are_read_from_any_text_and_each_mentions_itself(question: str) -> None:
    for term in distinctive_terms(question):
        assert term.mentioned_in(f" {term.text} "), term.text


@pytest.mark.parametrize("question", ["hmm", "and?", "why?", "ok thanks", "Tell me more"])
def test_a_question_with_no_word_to_search_for_is_refused_before_any_work(question: str) -> None:
    w = world()
    with pytest.raises(InvalidArgument, match="please ask a full question"):
        w.ask("u", VectorQuery("s", question))
    assert w.generator.prompts == []

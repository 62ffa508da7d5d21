"""Answers that answer, on text from real documents nobody here prepared (Debian's git-doc and
postgresql-doc-15 pages, the FHS 3.0 PDF as PDFium reads it): the sentence that answers, whole, with what
it defines and what completes it."""

from __future__ import annotations

from collections.abc import Sequence

from service.generation.extractive import ExtractiveGenerator
from service.generation.prompt import ContextChunk, Prompt
from service.generation.text_units import split_units
from service.generation.turns import EarlierTurn

# git-clean(1), OPTIONS, as the HTML loader writes it.
GIT_CLEAN = """OPTIONS

-d

Normally, when no <pathspec> is specified, git clean will not
recurse into untracked directories to avoid removing too much.
Specify -d to have it recurse into such directories as well.

-f

--force

If the Git configuration variable clean.requireForce is not set
to false, git clean will refuse to delete files or directories
unless given -f or -i. Git will refuse to modify untracked
nested git repositories (directories with a .git subdirectory)
unless a second -f is given."""

# The Git User Manual, "Rewriting a single commit".
USER_MANUAL_AMEND = """Rewriting a single commit

We saw in the section called “Fixing a mistake by rewriting history” that you can replace the most recent
commit using

$ git commit --amend

which will replace the old commit by a new commit incorporating your changes, giving you a chance to edit the
old commit message first. This is useful for fixing typos in your last commit, or for adjusting the patch
contents of a poorly staged commit.

If you need to amend commits from deeper in your history, you can use interactive rebase’s edit instruction."""

# git-shortlog(1), OPTIONS.
GIT_SHORTLOG = """OPTIONS

-n

--numbered

Sort output according to the number of commits per author instead
of author alphabetic order.

-s

--summary

Suppress commit description and provide a commit count summary only."""

# PostgreSQL 15, 20.5.2. Checkpoints (runtime-config-wal.html).
PG_CHECKPOINTS = """checkpoint_timeout (integer)

Maximum time between automatic WAL checkpoints.
If this value is specified without units, it is taken as seconds.
The valid range is between 30 seconds and one day.
The default is five minutes (5min).
Increasing this parameter can increase the amount of time needed for crash recovery.

checkpoint_completion_target (floating point)

Specifies the target of checkpoint completion, as a fraction of total time between checkpoints.
The default is 0.9, which spreads the checkpoint across almost all of the available interval."""

# FHS 3.0, 3.7 /etc, as PDFium lays the page out (sub-headings on lines of their own).
FHS_ETC = """3.7.1. Purpose
The /etc hierarchy contains configuration files. A "configuration file" is a local file used to control the
operation of a program; it must be static and cannot be an executable binary. 2
It is recommended that files be stored in subdirectories of /etc rather than directly in /etc.
3.7.2. Requirements
No binaries may be located under /etc.
The following directories, or symbolic links to directories are required in /etc:"""


def answer(question: str, *texts: str, earlier: Sequence[EarlierTurn] = ()) -> str:
    chunks = tuple(ContextChunk(i + 1, f"d{i}", f"T{i}", t, 0.5) for i, t in enumerate(texts))
    prompt = Prompt(question, chunks, "{context}{question}", "extractive", earlier=tuple(earlier))
    return ExtractiveGenerator().generate(prompt).text


def test_a_wrapped_line_that_holds_options_is_not_taken_for_code() -> None:
    # Was: "… git clean will refuse to delete files or directories [1]", the rest ("unless given -f or -i")
    # read as a command line and left out.
    text = answer("How do I delete untracked files with git clean?", GIT_CLEAN)
    assert "git clean will refuse to delete files or directories unless given -f or -i." in text


def test_a_quote_never_starts_at_the_relative_clause_after_a_command() -> None:
    # Was: "which will replace the old commit …", without the command it describes.
    text = answer("How can I fix a typo in the last commit message?", USER_MANUAL_AMEND)
    assert not text.startswith("which")
    assert "$ git commit --amend" in text
    assert text.index("you can replace the most recent commit using") < text.index("which will replace")


def test_an_option_description_is_quoted_with_the_option_it_describes() -> None:
    # Was: "Sort output according to …" without "-n" or "--numbered".
    text = answer("How do I sort contributors by how many commits they made?", GIT_SHORTLOG)
    assert text.startswith("-n, --numbered: Sort output according to the number of commits per author")


def test_a_definitions_later_sentence_is_quoted_with_what_it_defines() -> None:
    text = answer("What is the default maximum time between two automatic checkpoints?", PG_CHECKPOINTS)
    assert text.startswith("checkpoint_timeout (integer): Maximum time between automatic WAL checkpoints.")
    assert "… The default is five minutes (5min)." in text


def test_a_pdf_sub_heading_is_not_glued_to_the_sentence_after_it() -> None:
    sentences = [u.text for u in split_units(FHS_ETC)]
    assert "No binaries may be located under /etc." in sentences
    assert "3.7.2. Requirements" in sentences
    assert "No binaries may be located under /etc." in answer("Am I allowed to put binaries in /etc?", FHS_ETC)


def test_a_sentence_that_points_at_nothing_quotable_yields_to_one_that_says_it() -> None:
    orphan = "Interactive mode\n\nThis shows the files and directories to be deleted and issues a prompt."
    text = answer("How do I delete untracked files?", orphan, GIT_CLEAN)
    assert text.splitlines()[0].startswith("-f, --force: If the Git configuration variable")


def test_a_sentence_every_chunk_repeats_is_not_the_answer() -> None:
    boiler = "Only superusers and users with the appropriate SET privilege can change this setting."
    texts = [
        f"log_min_duration_statement (integer)\n\nCauses the duration of each completed statement to be logged "
        f"if the statement ran for at least the specified amount of time. {boiler}",
        f"log_min_error_statement (enum)\n\nControls which SQL statements that cause an error condition are "
        f"recorded in the server log. {boiler}",
        f"log_statement (enum)\n\nControls which SQL statements are logged. {boiler}",
    ]
    text = answer("Which setting logs every statement that takes longer than some time, and who can change it?", *texts)
    assert text.splitlines()[0].startswith("log_min_duration_statement (integer): Causes the duration")


def test_a_follow_up_is_not_answered_with_the_previous_answer_word_for_word() -> None:
    first = answer("How do I sort contributors by how many commits they made?", GIT_SHORTLOG)
    again = answer(
        "And how do I only count them?", GIT_SHORTLOG, earlier=[EarlierTurn("How do I sort contributors?", first)]
    )
    assert again != first
    assert "--summary" in again


GIT_SWITCH = """-c <new-branch>

--create <new-branch>

Create a new branch named <new-branch> starting at <start-point> before switching to the branch."""
MAINT_GUIDE = (
    "The rewrite of this tutorial document with updated contents and more practical examples is available as "
    "Guide for Debian Maintainers (https://www.debian.org/doc/devel-manuals#debmake-doc). Please use this new "
    "tutorial as the primary tutorial document."
)


def test_quoted_text_is_never_html_escaped_and_keeps_its_addresses() -> None:
    # Was: "Create a new branch named &lt;new-branch> starting at [1]" and "(link removed)" for every URL:
    # the link policy guards a model's generated markup; an extractive answer is document text shown as text.
    from service.domain.queries import VectorQuery
    from tests.unit.engine_world import make_world

    w = make_world(level=0.0)
    w.engine = type(w.engine)(
        repository=w.repo, index=w.index, embedder_for=lambda _: w.embedder, generator=ExtractiveGenerator()
    )
    from acl.model import Acl

    everyone = Acl(allow=frozenset({"group:everyone"}))
    w.add("git-switch.html", [GIT_SWITCH], everyone)
    w.add("maint-guide.pdf", [MAINT_GUIDE], everyone)
    switch = w.ask("u", VectorQuery("s", "How do I create a new branch and switch to it?")).answer or ""
    assert "Create a new branch named <new-branch> starting at <start-point>" in switch and "&lt;" not in switch
    guide = w.ask("u", VectorQuery("s", "Where is the newer tutorial for Debian maintainers?")).answer or ""
    assert "(https://www.debian.org/doc/devel-manuals#debmake-doc)" in guide and "link removed" not in guide


def test_a_numbered_section_title_is_never_the_answer() -> None:
    # Debian's Developer's Reference (PDF): a question-shaped section title was quoted as the answer.
    text = (
        "5.15.5 How long must a package be maintained when uploaded to stable-backports?\n\n"
        "Packages in stable-backports should be maintained for the whole lifetime of the stable release."
    )
    assert answer("How long must a backported package be maintained?", text).startswith("Packages in stable-backports")


def test_a_question_in_the_text_yields_to_the_sentence_that_answers_it() -> None:
    text = (
        "How long must a package be maintained when uploaded to stable-backports?\n\n"
        "Packages in stable-backports should be maintained for the whole lifetime of the stable release."
    )
    assert answer("How long must a backported package be maintained?", text).startswith("Packages in stable-backports")

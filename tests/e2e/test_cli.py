"""The CLI as a user runs it: real processes, the packaged model, the sample corpus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCQA = [sys.executable, "-m", "service.api.cli"]
QUESTION = "What was the revenue in the third quarter?"


def run(
    data_dir: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCQA_DATA_DIR": str(data_dir), **(env or {})}
    env.pop("DOCQA_CONFIG", None)
    result = subprocess.run(
        [*DOCQA, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    if check:
        assert result.returncode == 0, result.stderr
    return result


def ask(data_dir: Path, user: str, *extra: str) -> dict[str, Any]:
    out = run(data_dir, "ask", QUESTION, "--store", "acme", "--as", user, "--json", *extra).stdout
    return json.loads(out)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", target)
    return target


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Path:
    data = tmp_path_factory.mktemp("data")
    result = run(data, "index", str(corpus), "--store", "acme", "--quiet")
    assert "7 indexed" in result.stdout
    return data


def test_two_users_two_answers(data_dir: Path) -> None:
    alice = ask(data_dir, "alice")
    assert alice["chunks"][0]["document_id"] == "finance/q3-results.md"
    assert "48.2 million" in alice["answer"]
    for chunk in alice["chunks"]:
        assert set(chunk) >= {"document_id", "chunk_id", "title", "source_uri", "text", "score", "relevance"}
    bob = ask(data_dir, "bob")
    assert all(not c["document_id"].startswith("finance/") for c in bob["chunks"])
    assert "48.2" not in json.dumps(bob)


def test_human_output_lists_sources_per_document_numbered_as_cited(data_dir: Path) -> None:
    out = run(data_dir, "ask", QUESTION, "--store", "acme", "--as", "alice").stdout
    assert "Answer for alice:" in out and "[1]" in out.split("Sources:")[0]
    lines = out.split("Sources:\n", 1)[1].splitlines()
    # The document (id, title), where to open it (the CLI runs on the server: its file path), its best relevance,
    assert lines[0].startswith("  finance/q3-results.md — ") and lines[1].lstrip().startswith("file:///")
    assert "best relevance " in lines[1]
    # then its chunks, numbered as the answer cites them.
    assert lines[2].lstrip().startswith("[1] ") and "score " in lines[2] and "relevance " in lines[2]
    cited = [line.split("]")[0].strip() + "]" for line in lines if line.lstrip().startswith("[")]
    grouped = ask(data_dir, "alice")
    assert sorted(cited) == sorted(f"[{n}]" for n in range(1, len(grouped["chunks"]) + 1))


def test_json_groups_sources_per_document(data_dir: Path) -> None:
    answer = ask(data_dir, "alice")
    chunks, documents = answer["chunks"], answer["documents"]
    assert [d["document_id"] for d in documents] == list(dict.fromkeys(c["document_id"] for c in chunks))
    assert [c["chunk_id"] for d in documents for c in d["chunks"]] == [
        c["chunk_id"] for d in documents for c in chunks if c["document_id"] == d["document_id"]
    ]
    for document in documents:
        assert document["best_relevance"] == max(c["relevance"] for c in document["chunks"])
        assert document["source_uri"].startswith("file:///") and document["link"] is None  # no base URL
        assert set(document) >= {"title", "best_score", "pages"}
    for chunk in chunks:
        assert {"pages", "anchor", "link"} <= set(chunk)
    bob = ask(data_dir, "bob")
    assert all(not d["document_id"].startswith("finance/") for d in bob["documents"])


def test_rerun_is_a_no_op(data_dir: Path, corpus: Path) -> None:
    result = run(data_dir, "index", str(corpus), "--store", "acme", "--quiet")
    assert "0 indexed" in result.stdout and "7 unchanged" in result.stdout


def test_search_returns_chunks_only(data_dir: Path) -> None:
    out = json.loads(
        run(
            data_dir, "search", "carry over vacation days", "--store", "acme", "--as", "bob", "--k", "3", "--json"
        ).stdout
    )
    assert out["answer"] is None and 1 <= len(out["chunks"]) <= 3
    assert out["chunks"][0]["document_id"] == "handbook/vacation-policy.md"


def test_document_query_and_unreadable_document(data_dir: Path) -> None:
    whole = ask(data_dir, "alice", "--document", "finance/q3-results.md")
    assert len(whole["chunks"]) == 1 and whole["threshold"] is None
    hidden = run(
        data_dir, "ask", QUESTION, "--store", "acme", "--as", "bob", "--document", "finance/q3-results.md", check=False
    )
    missing = run(
        data_dir, "ask", QUESTION, "--store", "acme", "--as", "bob", "--document", "finance/q4-results.md", check=False
    )
    assert hidden.returncode == missing.returncode == 3
    assert hidden.stderr.replace("q3", "qN") == missing.stderr.replace("q4", "qN")


def test_bad_input_is_one_line_and_non_zero(data_dir: Path) -> None:
    for args in (
        ["ask", QUESTION, "--store", "acme", "--as", "alice", "--level", "1.5"],
        ["ask", QUESTION, "--store", "acme", "--as", "alice", "--level", "nan"],
        ["ask", QUESTION, "--store", "acme", "--as", "alice", "--level", "high"],
        ["ask", "   ", "--store", "acme", "--as", "alice"],
        ["settings", "set", "acme", "--level", "-1"],
        ["ask", QUESTION, "--store", "acme", "--as", "alice\n"],
        ["search", QUESTION, "--store", "acme", "--as", "alice\n"],
        ["index", str(ROOT / "examples" / "acme"), "--store", "acme\n", "--quiet"],
        ["acl", "set", "finance/q3-results.md", "--store", "acme", "--allow", "user:alice\n"],
        ["groups", "add-member", "auditors", "user:alice\n"],
    ):
        result = run(data_dir, *args, check=False)
        assert result.returncode == 2 and result.stderr.startswith("error:"), (args, result.stderr)
        assert len(result.stderr.rstrip("\n").splitlines()) == 1, (args, result.stderr)
    result = run(data_dir, "ask", QUESTION, "--store", "nope", "--as", "alice", check=False)
    assert result.returncode == 3 and "store 'nope' not found" in result.stderr


def test_settings_level_changes_threshold(data_dir: Path) -> None:
    run(data_dir, "settings", "set", "acme", "--level", "0.2")
    assert ask(data_dir, "alice")["threshold"] == pytest.approx(0.0 + 0.2 * 0.7)  # the default scale 0.00-0.70
    shown = json.loads(run(data_dir, "settings", "show", "acme", "--json").stdout)
    assert shown["level"] == 0.2
    run(data_dir, "settings", "set", "acme", "--level", "0.5")


def test_revocation_and_group_change_apply_on_the_next_query(data_dir: Path) -> None:
    assert any(c["document_id"].startswith("finance/") for c in ask(data_dir, "carol")["chunks"])
    run(data_dir, "groups", "remove-member", "auditors", "user:carol")
    assert not any(c["document_id"].startswith("finance/") for c in ask(data_dir, "carol")["chunks"])
    run(data_dir, "groups", "reset", "auditors", "user:carol")  # back to the manifest's membership
    run(data_dir, "acl", "set", "finance/q3-results.md", "--allow", "user:carol")
    assert not any(c["document_id"] == "finance/q3-results.md" for c in ask(data_dir, "alice")["chunks"])
    assert any(c["document_id"] == "finance/q3-results.md" for c in ask(data_dir, "carol")["chunks"])
    run(data_dir, "acl", "reset", "finance/q3-results.md")  # back to the manifest's ACL


def test_stores_lists_counts_without_loading_the_model(data_dir: Path) -> None:
    out = run(data_dir, "stores").stdout
    assert "acme" in out and " 7 " in out
    probe = (
        "import sys; from service.api.cli.main import main; code = main(['stores']);"
        "print(code, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = {**os.environ, "DOCQA_DATA_DIR": str(data_dir)}
    result = subprocess.run(
        [sys.executable, "-c", probe], check=False, capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert result.stdout.strip().splitlines()[-1] == "0 False False"


def test_corrupt_files_are_skipped_by_name(tmp_path: Path, corpus: Path) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(corpus, folder)
    (folder / "handbook" / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (folder / "handbook" / "broken.docx").write_bytes(b"garbage")
    result = run(tmp_path / "data", "index", str(folder), "--store", "mixed", "--quiet")
    assert "skipped handbook/broken.pdf" in result.stderr and "skipped handbook/broken.docx" in result.stderr
    assert "7 indexed" in result.stdout

    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "acl.yaml").write_text("documents:\n  - match: '**'\n    allow: [group:everyone]\n")
    (only_bad / "x.pdf").write_bytes(b"nope")
    result = run(tmp_path / "data", "index", str(only_bad), "--store", "bad", "--quiet", check=False)
    assert result.returncode != 0 and "skipped x.pdf" in result.stderr


def test_index_refuses_links_special_files_and_odd_names(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "planted"
    shutil.copytree(corpus, folder)
    data = tmp_path / "data"
    run(data, "token", "--user", "alice")  # creates <data dir>/jwt-secret
    secret = (data / "jwt-secret").read_text().strip()
    handbook = folder / "handbook"
    (handbook / "bands.md").symlink_to("../hr/salary-bands.md")
    (handbook / "secret-link.txt").symlink_to(data / "jwt-secret")
    (handbook / "environ.txt").symlink_to("/proc/self/environ")
    (handbook / "hr-copy").symlink_to(folder / "hr", target_is_directory=True)
    os.mkfifo(handbook / "pipe.md")
    (handbook / "odd\nname.md").write_text("Salary bands are public now, says this odd file.\n")
    (folder / "stray.md").write_text("# Stray\n\nNo rule of the manifest covers this file.\n")
    monkeypatch.setenv("DOCQA_PLANTED_MARKER", "environment-leak-marker")
    result = run(data, "index", str(folder), "--store", "acme", "--quiet")
    assert "8 indexed" in result.stdout and "6 refused" in result.stdout
    assert "note: stray.md: no rule of the ACL manifest matches it, so nobody may read it" in result.stderr
    for line in (
        "skipped handbook/bands.md: symbolic link (not followed)",
        "skipped handbook/secret-link.txt: symbolic link (not followed)",
        "skipped handbook/environ.txt: symbolic link (not followed)",
        "skipped handbook/hr-copy: symbolic link to a folder (not followed)",
        "skipped handbook/pipe.md: not a regular file (FIFO)",
        "skipped handbook/odd\\nname.md: file name holds a control character (no ACL rule can match it)",
    ):
        assert line in result.stderr.splitlines(), result.stderr
    for question in ("salary bands engineering", "environment marker", "signing secret"):
        out = run(data, "search", question, "--store", "acme", "--as", "bob", "--k", "50", "--json").stdout
        found = json.loads(out)
        assert {c["document_id"].split("/")[0] for c in found["chunks"]} <= {"handbook", "engineering"}
        assert "environment-leak-marker" not in out and secret not in out and "odd file" not in out
    assert run(data, "acl", "show", "handbook/bands.md", "--store", "acme", check=False).returncode == 3


def test_data_dir_is_private_whatever_the_umask_and_doctor_warns_when_not(tmp_path: Path, corpus: Path) -> None:
    data = tmp_path / "fresh" / "data"
    old = os.umask(0o022)
    try:
        # The whole corpus, so that the manifest's "handbook/**" rule matches and bob may read something (a store
        # its caller may read nothing of is not found).
        run(data, "index", str(corpus), "--store", "hb", "--acl-manifest", str(corpus / "acl.yaml"))
        run(data, "token", "--user", "alice")
        run(data, "search", "vacation", "--store", "hb", "--as", "bob")
    finally:
        os.umask(old)
    entries = [data, *data.rglob("*")]
    names = {p.relative_to(data).as_posix() for p in entries}
    assert {"settings.sqlite", "jwt-secret", "index", "index/hb.sqlite"} <= names
    for path in entries:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    clean = run(data, "doctor")
    assert "WARN" not in clean.stdout
    (data / "settings.sqlite").chmod(0o644)
    (data / "index").chmod(0o755)
    warned = run(data, "doctor", check=False).stdout
    assert "WARN" in warned
    assert f"{data / 'settings.sqlite'} is 0644" in warned and f"{data / 'index'} is 0755" in warned

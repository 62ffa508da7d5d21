"""``docqa ask|search --server URL``: a real ``docqa serve`` asked by the CLI prints what the local path prints."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOCQA = [sys.executable, "-m", "service.api.cli"]
#: Differ on every run: query and conversation ids.
_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
    return {**env, "DOCQA_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT), **extra}


def run(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*DOCQA, *args], capture_output=True, text=True, env=_env(data_dir, **env), cwd=ROOT, timeout=300, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data = tmp_path_factory.mktemp("data")
    assert run(data, "index", str(corpus), "--store", "acme", "--quiet").returncode == 0
    # Links a remote reader can open: a server never shows the indexing host's file: paths.
    assert run(data, "settings", "set", "acme", "--source-base-url", "https://intranet.example/acme/").returncode == 0
    return data


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[str]:
    port = _free_port()
    log = data_dir / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*DOCQA, "serve", "--http-port", str(port), "--grpc-port", str(_free_port())],
            env=_env(data_dir),
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _without_ids(text: str) -> str:
    return _IDS.sub("<id>", text)


def _comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without what differs on every run (ids, timings) or by design (file: source URIs are local)."""
    drop = {"query_id", "conversation_id", "timings_ms"}
    kept = {k: v for k, v in answer.items() if k not in drop}
    for item in [*kept["chunks"], *kept["documents"], *(c for d in kept["documents"] for c in d["chunks"])]:
        item.pop("source_uri")
    return kept


QUESTIONS = [
    ("ask", "What was the revenue in the third quarter?", "--as", "alice"),
    ("ask", "How many vacation days do I get?", "--as", "bob", "--no-llm", "--path-prefix", "handbook/"),
    ("ask", "How many vacation days do I get?", "--as", "bob", "--document", "handbook/vacation-policy.md"),
    ("search", "on-call rotation", "--as", "bob", "--k", "3"),
]


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: " ".join(q[:1] + q[2:]))
def test_the_server_answers_as_the_local_path_does(data_dir: Path, server: str, question: tuple[str, ...]) -> None:
    command, text, *options = question
    args = [command, text, "--store", "acme", *options]
    local = run(data_dir, *args)
    remote = run(data_dir, *args, "--server", server)
    assert (local.returncode, remote.returncode) == (0, 0), remote.stderr
    assert _without_ids(remote.stdout) == _without_ids(local.stdout)
    assert "Sources:" in remote.stdout

    local_json = json.loads(run(data_dir, *args, "--json").stdout)
    remote_json = json.loads(run(data_dir, *args, "--json", DOCQA_SERVER_URL=server).stdout)  # the variable
    assert remote_json["timings_ms"] == {}  # a non-admin is shown no timings (service.query.disclosure)
    assert _comparable(remote_json) == _comparable(local_json)


def test_errors_of_the_server_exit_as_local_errors_do(data_dir: Path, server: str) -> None:
    for args, code, words in (
        (["--store", "nope"], 3, "store 'nope' not found"),
        (["--store", "acme", "--level", "3"], 2, "relevancy level must be between 0 and 1"),
        (["--store", "acme", "--document", "finance/q3-results.md"], 3, "not found"),  # bob may not read it
    ):
        local = run(data_dir, "ask", "revenue?", "--as", "bob", *args)
        remote = run(data_dir, "ask", "revenue?", "--as", "bob", *args, "--server", server)
        assert (remote.returncode, local.returncode) == (code, code)
        assert words in remote.stderr and remote.stderr == local.stderr


def test_a_bad_token_is_unauthenticated_and_another_users_token_is_refused(data_dir: Path, server: str) -> None:
    bad = run(data_dir, "ask", "revenue?", "--store", "acme", "--as", "bob", "--server", server, "--token", "a.b.c")
    assert bad.returncode == 5 and bad.stderr.startswith("error: ")
    alice = run(data_dir, "token", "--user", "alice").stdout.strip()
    mixed = run(data_dir, "ask", "revenue?", "--store", "acme", "--as", "bob", "--server", server, DOCQA_TOKEN=alice)
    assert mixed.returncode == 2 and "--as bob but the token is alice's" in mixed.stderr
    as_alice = run(data_dir, "search", "revenue", "--store", "acme", "--as", "alice", "--server", server, "--json",
                   DOCQA_TOKEN=alice)  # fmt: skip
    assert as_alice.returncode == 0 and json.loads(as_alice.stdout)["chunks"]


def test_a_token_names_the_user_so_as_may_be_left_out(data_dir: Path, server: str) -> None:
    alice = run(data_dir, "token", "--user", "alice").stdout.strip()
    question = ["What was the revenue in the third quarter?", "--store", "acme"]
    remote = run(data_dir, "ask", *question, "--server", server, "--token", alice)
    local = run(data_dir, "ask", *question, "--as", "alice")
    assert (remote.returncode, local.returncode) == (0, 0), remote.stderr
    assert remote.stdout.startswith("Answer for alice:")
    assert _without_ids(remote.stdout) == _without_ids(local.stdout)
    by_variables = run(data_dir, "search", "revenue", "--store", "acme", "--json",
                       DOCQA_SERVER_URL=server, DOCQA_TOKEN=alice)  # fmt: skip
    assert by_variables.returncode == 0 and json.loads(by_variables.stdout)["chunks"]


def test_without_a_token_as_is_still_needed(tmp_path: Path) -> None:
    local = run(tmp_path, "ask", "q", "--store", "acme")
    assert local.returncode == 2 and "error: give --as USER, the user to act for" in local.stderr
    token_here = run(tmp_path, "search", "q", "--store", "acme", "--token", "x.y.z")  # a token only goes to a server
    assert token_here.returncode == 2 and "--server URL --token TOKEN" in token_here.stderr
    minted = run(tmp_path, "ask", "q", "--store", "acme", "--server", f"http://127.0.0.1:{_free_port()}")
    assert minted.returncode == 2 and "give --as USER (a token is minted for that user here)" in minted.stderr


def test_an_unreachable_server_is_unavailable_and_a_remote_one_needs_a_token(data_dir: Path) -> None:
    down = run(data_dir, "ask", "q", "--store", "acme", "--as", "bob", "--server", f"http://127.0.0.1:{_free_port()}")
    assert down.returncode == 6
    assert "error: cannot reach the server at http://127.0.0.1:" in down.stderr
    far = run(data_dir, "ask", "q", "--store", "acme", "--as", "bob", "--server", "http://192.0.2.1:8080")
    assert far.returncode == 5 and "--token or DOCQA_TOKEN" in far.stderr
    odd = run(data_dir, "ask", "q", "--store", "acme", "--as", "bob", "--server", "ftp://host")
    assert odd.returncode == 2 and "--server must be an http(s) URL" in odd.stderr


def test_asking_a_server_imports_no_model_index_or_server_library(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "service.api.cli", "search", "q", "--store", "acme", "--as", "bob"],
        capture_output=True,
        text=True,
        env=_env(tmp_path, DOCQA_SERVER_URL=f"http://127.0.0.1:{_free_port()}"),
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 6, result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    heavy = {"torch", "sentence_transformers", "sklearn", "sqlalchemy", "faiss", "grpc", "strawberry", "uvicorn"}
    assert imported and not heavy & imported

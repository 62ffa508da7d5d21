"""``docqa serve`` and ``docqa index`` check the OpenSearch server once at start-up, as an operator sees it.

An unsupported server stops either command with exit code 8 and the reason on one line, no traceback;
a server that does not answer is logged and ``docqa serve`` starts all the same (readiness reports it).
The server is a stand-in on 127.0.0.1 answering ``GET /`` and ``GET /_cat/plugins``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.opensearch_standin import OpenSearchStandIn

ROOT = Path(__file__).resolve().parents[2]
DOCQA = [sys.executable, "-m", "service.api.cli"]
SERVE = ["serve", "--grpc-port", "0", "--http-port", "0"]
INDEX = ["index", str(ROOT / "examples" / "acme"), "--store", "acme", "--quiet"]


def _env(data_dir: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
    env.update(
        {
            "DOCQA_DATA_DIR": str(data_dir),
            "DOCQA_INDEX__BACKEND": "opensearch",
            "DOCQA_INDEX__OPENSEARCH__URL": url,
            "DOCQA_INDEX__OPENSEARCH__USERNAME": "docqa",
            "DOCQA_INDEX__OPENSEARCH__PASSWORD": "pw-never-shown-4711",
        }
    )
    return env


def docqa(data_dir: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*DOCQA, *args], capture_output=True, text=True, env=_env(data_dir, url), cwd=ROOT, timeout=120, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert "pw-never-shown-4711" not in result.stdout + result.stderr
    return result


@pytest.fixture
def old_server() -> Iterator[OpenSearchStandIn]:
    with OpenSearchStandIn(version="2.18.0") as standin:
        yield standin


@pytest.mark.parametrize("command", [SERVE, INDEX], ids=["serve", "index"])
def test_an_unsupported_server_stops_start_up_with_the_reason(
    command: list[str], old_server: OpenSearchStandIn, tmp_path: Path
) -> None:
    result = docqa(tmp_path, old_server.url, *command)
    assert result.returncode == 8, result.stderr  # a configuration error
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith("error: index.opensearch: the server at index.opensearch.url cannot be used: ")
    assert "OpenSearch 2.18.0 is older than 2.19" in error and "k-NN#2339" in error
    assert "gRPC on" not in result.stdout  # nothing was served
    assert [seen.path for seen in old_server.seen] == ["/", "/", "/_cat/plugins"]  # ping, then the facts


def test_elasticsearch_and_a_missing_knn_plugin_are_named(tmp_path: Path) -> None:
    with OpenSearchStandIn(version="7.10.2", distribution=None) as elastic:
        result = docqa(tmp_path, elastic.url, *SERVE)
    assert result.returncode == 8 and "it is elasticsearch 7.10.2, not OpenSearch" in result.stderr
    with OpenSearchStandIn(version="3.1.0", knn_plugin=False) as bare:
        result = docqa(tmp_path, bare.url, *INDEX)
    assert result.returncode == 8 and "the k-NN plugin (opensearch-knn) is not installed" in result.stderr


def test_serve_starts_while_the_server_does_not_answer(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    process = subprocess.Popen(
        [*DOCQA, *SERVE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path, url),
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("gRPC on 127.0.0.1:"), first
        graphql = re.search(r"GraphQL on (http://[^/]+)/graphql", first)
        assert graphql is not None, first
        with pytest.raises(urllib.error.HTTPError) as not_ready:  # the servers run; readiness tells the truth
            urllib.request.urlopen(f"{graphql.group(1)}/readyz", timeout=30)
        assert not_ready.value.code == 503
        with not_ready.value:
            assert json.loads(not_ready.value.read()) == {"status": "unavailable", "failing": "index"}
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "OpenSearch could not be checked at start-up" in stderr and "carrying on" in stderr

"""The OpenSearch client's settings and the start-up check of the server, without a server.

The version gate runs over a fake of what ``check_server`` asks (``ping`` and ``server``); the
configuration through ``load_settings``; ``connect`` builds real opensearch-py clients (no request is
made); per-request timeouts are read where opensearch-py hands them to the connection. Over real HTTP
(SigV4 signatures, the connection pool, a 401 to an API key): tests/integration/test_opensearch_client.py.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from acl.errors import ConfigurationError
from indexer.errors import IndexUnavailable
from indexer.index.opensearch.client import AwsSigV4, ServerInfo, check_server, connect, server_problems
from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.responses import ServerFacts
from indexer.index.opensearch.versions import MINIMUM_VERSION
from indexer.index.port import StoreSpec
from service.bootstrap import build_app, opensearch_options
from service.config import Settings, load_settings
from tests.contract.index_contract import chunk
from tests.env import isolate_aws_env
from tests.unit import opensearch_spec as spec

pytestmark = pytest.mark.usefixtures("clean_env")

MiB = 1024 * 1024


class FakeServer(ServerInfo):
    """What ``check_server`` asks of the adapter: a quick ping, then the server's facts."""

    def __init__(self, facts: ServerFacts | None = None, *, down: bool = False, refuses: bool = False) -> None:
        self.facts = facts or ServerFacts("opensearch", "3.1.0", True)
        self.down = down
        self.refuses = refuses
        self.asked = 0

    def ping(self) -> None:
        self.asked += 1
        if self.down:
            raise IndexUnavailable("index unavailable: OpenSearch GET / failed after 1 attempt(s): cannot connect")
        if self.refuses:
            raise ConfigurationError("index.opensearch: the server refused our credentials for GET / (HTTP 401)")

    def server(self) -> ServerFacts:
        self.asked += 1
        return self.facts


def check(
    version: str, *, engine: str = "lucene", distribution: str = "opensearch", knn: bool = True, api_key: bool = False
) -> ServerFacts:
    server = FakeServer(ServerFacts(distribution, version, knn))
    return check_server(server, engine=engine, api_key_configured=api_key)


# -- the version gate --------------------------------------------------------------------------------------


def test_both_engines_need_2_19() -> None:
    assert MINIMUM_VERSION == {"faiss": (2, 19), "lucene": (2, 19)}


@pytest.mark.parametrize("engine", ["lucene", "faiss"])
def test_2_18_is_refused_for_both_engines_with_the_reason(engine: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        check("2.18.0", engine=engine)
    message = refused.value.message
    assert message.startswith("index.opensearch: the server at index.opensearch.url cannot be used: ")
    assert "OpenSearch 2.18.0 is older than 2.19" in message and "k-NN#2339" in message


@pytest.mark.parametrize("engine", ["lucene", "faiss"])
@pytest.mark.parametrize("version", ["2.19.0", "2.19.3", "3.0.0", "3.1.0", "3.7.0-SNAPSHOT"])
def test_2_19_and_3_x_are_accepted(engine: str, version: str) -> None:
    assert check(version, engine=engine).version == version


@pytest.mark.parametrize("version", ["2.17.1", "2.16.0", "1.3.20"])
def test_older_releases_are_refused(version: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"OpenSearch {version} is older than 2\.19"):
        check(version)


@pytest.mark.parametrize(("distribution", "version"), [("elasticsearch", "7.10.2"), ("elasticsearch", "8.15.0")])
def test_elasticsearch_is_refused(distribution: str, version: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"it is elasticsearch {version}, not OpenSearch"):
        check(version, distribution=distribution)


def test_a_server_without_the_knn_plugin_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"the k-NN plugin \(opensearch-knn\) is not installed"):
        check("3.1.0", knn=False)


def test_every_reason_is_named_at_once() -> None:
    with pytest.raises(ConfigurationError) as refused:
        check("2.18.0", knn=False, api_key=True)
    assert "older than 2.19" in refused.value.message
    assert "k-NN plugin" in refused.value.message
    assert "accepts API keys only from 3.7 on" in refused.value.message


def test_an_api_key_is_refused_before_3_7_and_accepted_from_it() -> None:
    with pytest.raises(ConfigurationError, match=r"api_key is set but OpenSearch 3\.6\.0 accepts API keys only"):
        check("3.6.0", api_key=True)
    assert check("3.6.0", api_key=False).version == "3.6.0"  # no key, no problem
    assert check("3.7.0", api_key=True).version == "3.7.0"
    assert check("3.8.1", api_key=True).version == "3.8.1"


def test_credentials_refused_while_an_api_key_is_set_say_which_servers_accept_keys() -> None:
    with pytest.raises(ConfigurationError) as refused:
        check_server(FakeServer(refuses=True), engine="lucene", api_key_configured=True)
    assert "(HTTP 401)" in refused.value.message
    assert "OpenSearch accepts API keys from 3.7 on" in refused.value.message
    with pytest.raises(ConfigurationError) as plain:
        check_server(FakeServer(refuses=True), engine="lucene", api_key_configured=False)
    assert "API keys" not in plain.value.message


def test_an_unreachable_server_is_unavailable_after_one_quick_ping() -> None:
    server = FakeServer(down=True)
    with pytest.raises(IndexUnavailable):
        check_server(server, engine="lucene", api_key_configured=False)
    assert server.asked == 1  # the ping only: no retried GET / behind it


def test_no_version_number_is_a_problem_not_a_crash() -> None:
    problems = server_problems(ServerFacts("opensearch", "?", True), engine="lucene", api_key_configured=True)
    assert problems == {"version": "GET / gives no version number ('?')"}


# -- start-up wiring ---------------------------------------------------------------------------------------


def opensearch_settings(**opensearch: Any) -> Settings:
    return Settings(index={"backend": "opensearch", "opensearch": {"url": "https://os.example:9200", **opensearch}})


def test_start_up_refuses_an_unsupported_server() -> None:
    app = build_app(opensearch_settings(), index=cast(Any, FakeServer(ServerFacts("opensearch", "2.18.0", True))))
    with pytest.raises(ConfigurationError, match=r"older than 2\.19"):
        app.check_index_server()


def test_start_up_logs_an_unreachable_server_and_carries_on(caplog: pytest.LogCaptureFixture) -> None:
    app = build_app(opensearch_settings(), index=cast(Any, FakeServer(down=True)))
    with caplog.at_level(logging.WARNING, logger="docqa.bootstrap"):
        app.check_index_server()
    (record,) = caplog.records
    assert "could not be checked at start-up" in record.getMessage() and "carrying on" in record.getMessage()


def test_start_up_asks_nothing_of_serverless_or_the_embedded_index(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(ServerFacts("opensearch", "1.0.0", False))
    serverless = opensearch_settings(aws={"region": "eu-west-1", "service": "aoss"})
    build_app(serverless, index=cast(Any, server)).check_index_server()
    build_app(Settings(), index=cast(Any, server)).check_index_server()
    assert server.asked == 0


def test_start_up_passes_with_a_supported_server(caplog: pytest.LogCaptureFixture) -> None:
    app = build_app(opensearch_settings(), index=cast(Any, FakeServer(ServerFacts("opensearch", "2.19.1", True))))
    with caplog.at_level(logging.INFO, logger="docqa.bootstrap"):
        app.check_index_server()
    assert "OpenSearch 2.19.1 at https://os.example:9200 with the k-NN plugin: supported" in caplog.text


# -- configuration -----------------------------------------------------------------------------------------


def test_defaults() -> None:
    config = Settings().index.opensearch
    assert (config.refresh, config.bulk_max_bytes, config.aws, config.pool_maxsize) == ("false", 10 * MiB, None, None)
    assert (config.timeout_s, config.search_timeout_s, config.write_timeout_s) == (10.0, 10.0, 60.0)


def test_the_pool_holds_a_connection_per_thread_that_may_call_the_index() -> None:
    assert Settings().opensearch_pool_maxsize == 16 + 16  # server.grpc_workers + server.graphql_workers
    assert Settings(server={"grpc_workers": 40}).opensearch_pool_maxsize == 40 + 16
    assert Settings(server={"graphql_workers": 3}).opensearch_pool_maxsize == 16 + 3
    assert opensearch_settings(pool_maxsize=7).opensearch_pool_maxsize == 7


def test_aws_signing_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCQA_INDEX__BACKEND", "opensearch")
    monkeypatch.setenv("DOCQA_INDEX__OPENSEARCH__URL", "https://search-docs.eu-west-1.es.amazonaws.com")
    monkeypatch.setenv("DOCQA_INDEX__OPENSEARCH__AWS__REGION", "eu-west-1")
    aws = load_settings().index.opensearch.aws
    assert aws is not None and (aws.region, aws.service) == ("eu-west-1", "es")
    monkeypatch.setenv("DOCQA_INDEX__OPENSEARCH__AWS__SERVICE", "aoss")
    aws = load_settings().index.opensearch.aws
    assert aws is not None and aws.service == "aoss"


def _load(tmp_path: Path, yaml_text: str) -> Settings:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    return load_settings(config)


AWS = "index:\n  opensearch:\n    url: https://os.example\n    aws: {region: eu-west-1}\n"


@pytest.mark.parametrize(
    ("yaml_text", "env", "expected"),
    [
        (AWS, {"USERNAME": "u", "PASSWORD": "p"}, r"aws \(SigV4 signing\) excludes index\.opensearch\.username, "
         r"index\.opensearch\.password"),
        (AWS, {"API_KEY": "k"}, r"aws \(SigV4 signing\) excludes index\.opensearch\.api_key"),
        (AWS.replace("https:", "http:"), {}, r"aws \(SigV4 signing\) needs an https:// url"),
        (AWS.replace("eu-west-1", "Ireland"), {}, r"index\.opensearch\.aws\.region: String should match"),
        (AWS.replace("region: eu-west-1}", "region: eu-west-1, service: s3}"), {}, r"opensearch\.aws\.service"),
        (AWS.replace("{region: eu-west-1}", "{service: es}"), {}, r"index\.opensearch\.aws\.region: Field required"),
        (AWS.replace("{region: eu-west-1}", "{region: eu-west-1, service: aoss}") + "    refresh: 'true'\n", {},
         r"OpenSearch Serverless refuses refresh=true"),
        ("index:\n  opensearch:\n    bulk_max_bytes: 104857601\n", {}, r"index\.opensearch\.bulk_max_bytes"),
        ("index:\n  opensearch:\n    bulk_max_bytes: 1000\n", {}, r"index\.opensearch\.bulk_max_bytes"),
        ("index:\n  opensearch:\n    search_timeout_s: 0\n", {}, r"index\.opensearch\.search_timeout_s"),
        ("index:\n  opensearch:\n    write_timeout_s: .nan\n", {}, r"index\.opensearch\.write_timeout_s"),
        ("index:\n  opensearch:\n    pool_maxsize: 0\n", {}, r"index\.opensearch\.pool_maxsize"),
        ("index:\n  opensearch:\n    refresh: sometimes\n", {}, r"index\.opensearch\.refresh"),
    ],
)  # fmt: skip
def test_bad_client_settings_name_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, yaml_text: str, env: dict[str, str], expected: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(f"DOCQA_INDEX__OPENSEARCH__{key}", value)
    with pytest.raises(ConfigurationError, match=expected):
        _load(tmp_path, yaml_text)


def test_the_largest_bulk_is_opensearchs_http_max_content_length(tmp_path: Path) -> None:
    settings = _load(tmp_path, "index:\n  opensearch:\n    bulk_max_bytes: 104857600\n")
    assert settings.index.opensearch.bulk_max_bytes == 100 * MiB


# -- connect ------------------------------------------------------------------------------------------------


def test_one_auth_mode_at_a_time() -> None:
    with pytest.raises(ConfigurationError, match="excludes username, password and api_key"):
        connect("https://os.example", api_key="k", aws=AwsSigV4("eu-west-1"))
    with pytest.raises(ConfigurationError, match="either username/password or api_key"):
        connect("https://os.example", username="u", password="p", api_key="k")
    with pytest.raises(ConfigurationError, match="pool_maxsize must be a positive integer"):
        connect("https://os.example", pool_maxsize=0)


def test_sigv4_without_botocore_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)  # an import of it now fails, as when not installed
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(ConfigurationError, match=r"SigV4 signing needs botocore.*pip install 'docqa\[aws\]'"):
        connect("https://os.example", aws=AwsSigV4("eu-west-1"))


def test_sigv4_without_credentials_names_the_chain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_aws_env(monkeypatch, tmp_path, credentials=False)
    with pytest.raises(ConfigurationError, match=r"no AWS credentials found \(botocore's default chain: AWS_ACCESS"):
        connect("https://os.example", aws=AwsSigV4("eu-west-1"))
    monkeypatch.setenv("AWS_PROFILE", "absent")
    with pytest.raises(ConfigurationError, match=r"cannot read AWS credentials: .*absent"):
        connect("https://os.example", aws=AwsSigV4("eu-west-1"))
    with pytest.raises(ConfigurationError, match="region is required"):
        connect("https://os.example", aws=AwsSigV4(""))


def test_sigv4_with_credentials_connects_lazily(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_aws_env(monkeypatch, tmp_path)
    index = connect("https://search-docs.eu-west-1.es.amazonaws.com", aws=AwsSigV4("eu-west-1", "aoss"))
    index.close()  # built, not a request made (a unit test may not connect)


def test_the_service_wires_the_client_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_aws_env(monkeypatch, tmp_path)
    settings = opensearch_settings(aws={"region": "eu-west-1"}, pool_maxsize=5, refresh="wait_for", bulk_batch=7)
    app = build_app(settings)
    index = app.index
    assert isinstance(index, OpenSearchIndex)
    assert (index.options.refresh, index.options.bulk_batch) == ("wait_for", 7)
    app.close()


# -- per-request timeouts ---------------------------------------------------------------------------------

NEW_OPTIONS = {"search_timeout_s", "write_timeout_s", "bulk_max_bytes"}
needs_adapter_timeouts = pytest.mark.skipif(
    not {f.name for f in dataclasses.fields(OpenSearchOptions)} >= NEW_OPTIONS,
    reason="OpenSearchOptions gains search_timeout_s, write_timeout_s and bulk_max_bytes in the adapter's "
    "own change (issue 16)",
)


@needs_adapter_timeouts
def test_the_timeouts_and_bulk_bound_reach_the_adapters_options() -> None:
    config = opensearch_settings(search_timeout_s=3.0, write_timeout_s=90.0, bulk_max_bytes=2 * MiB).index.opensearch
    options = opensearch_options(config)
    assert (options.search_timeout_s, options.write_timeout_s, options.bulk_max_bytes) == (  # type: ignore[attr-defined]
        3.0,
        90.0,
        2 * MiB,
    )


class TimedWire(spec.FakeWire):
    """The spec-checked stand-in, also noting the timeout opensearch-py hands the connection for each request."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[tuple[str, str, Any]] = []

    def _connection_class(self) -> type:
        wire = self
        base: Any = super()._connection_class()

        class Timed(base):  # type: ignore[misc, valid-type]
            def perform_request(self, method: str, url: str, params: Any = None, body: Any = None,
                                timeout: Any = None, ignore: Any = (), headers: Any = None) -> Any:  # fmt: skip
                wire.timeouts.append((method, url.partition("?")[0].rsplit("/", 1)[-1], timeout))
                return super().perform_request(method, url, params, body, timeout, ignore, headers)

        return Timed


@needs_adapter_timeouts
def test_searches_and_writes_carry_their_own_timeouts() -> None:
    from indexer.index.filters import acl_filter

    wire = TimedWire()
    config = opensearch_settings(search_timeout_s=3.0, write_timeout_s=90.0, refresh="true").index.opensearch
    index = OpenSearchIndex(wire.client(), opensearch_options(config), sleep=lambda _: None)
    index.ensure(StoreSpec("acme", 8))
    vector = np.ones(8) / np.sqrt(8)
    index.upsert("acme", [chunk("a.md", 0, vector)])
    index.exact("acme", vector, 3, acl_filter(["user:alice"]))
    index.knn("acme", vector, 3, acl_filter(["user:alice"]))
    index.count("acme", acl_filter(["user:alice"]))
    index.delete_document("acme", "a.md")
    timeouts = {(endpoint, timeout) for _, endpoint, timeout in wire.timeouts}
    assert {timeout for endpoint, timeout in timeouts if endpoint in ("_search", "_count")} == {3.0}
    writes = {"_bulk", "_delete_by_query", "_update_by_query"}
    assert {timeout for endpoint, timeout in timeouts if endpoint in writes} == {90.0}

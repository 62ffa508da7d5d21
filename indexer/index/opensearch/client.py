"""How DocQA reaches OpenSearch (``connect``), and the start-up check of the server it reaches (``check_server``).

One auth mode at a time (``service.config`` refuses a mix):

- none: a cluster without the security plugin (development only);
- username and password (HTTP basic);
- an API key, sent as ``Authorization: ApiKey <key>``: the security plugin understands it from 3.7 on;
- AWS SigV4, for Amazon OpenSearch Service (``es``) or Serverless (``aoss``): opensearch-py's own
  ``Urllib3AWSV4SignerAuth`` on its default urllib3 connection (the requests-based ``AWSV4SignerAuth``
  needs ``RequestsHttpConnection``; the urllib3 pair keeps the pool, TLS options and errors of every other
  mode). Credentials come from botocore's default chain (environment, shared files, web identity as EKS
  injects it, container and instance roles); each request is signed with a frozen copy of them, and
  temporary credentials are refreshed before they expire.

``check_server`` refuses a server the adapter would answer wrongly on: not OpenSearch, older than 2.19
(k-NN#2339), without the k-NN plugin, or older than 3.7 while an API key is configured.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from opensearchpy import OpenSearch
from opensearchpy.exceptions import ImproperlyConfigured

from acl.errors import ConfigurationError
from indexer.index.opensearch.responses import ServerFacts
from indexer.index.opensearch.versions import API_KEY_MINIMUM_VERSION, dotted, minimum_version

if TYPE_CHECKING:
    # Imported when called: index.py re-exports ``connect``, and a module-level import would be circular.
    from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions

#: Connections kept open when the caller names no number: as many threads as call the index at once.
DEFAULT_POOL_MAXSIZE = 16

#: Why a server may refuse an API key it was sent.
API_KEY_HINT = (
    f"index.opensearch.api_key is set: OpenSearch accepts API keys from {dotted(API_KEY_MINIMUM_VERSION)} on, "
    "with API keys enabled in its security plugin; an older server refuses every key with HTTP 401 "
    "(use username and password there), a newer one refuses a revoked or expired key"
)


@dataclass(frozen=True, slots=True)
class AwsSigV4:
    """Sign every request with AWS SigV4 for ``service`` (``es``: OpenSearch Service, ``aoss``: Serverless)."""

    region: str
    service: Literal["es", "aoss"] = "es"


def connect(
    url: str,
    *,
    username: str | None = None,
    password: str | None = None,
    api_key: str | None = None,
    aws: AwsSigV4 | None = None,
    ca_certs: str | None = None,
    verify: bool = True,
    timeout_s: float = 10.0,
    pool_maxsize: int = DEFAULT_POOL_MAXSIZE,
    options: OpenSearchOptions | None = None,
) -> OpenSearchIndex:
    """An adapter talking to the server at ``url``; no request is made yet.

    ``timeout_s`` bounds any request the adapter gives no timeout of its own (searches and writes get
    theirs from ``options``). Up to ``pool_maxsize`` connections are kept open for reuse: as many as
    threads that call the index at once, so that none is opened and dropped per request. The client
    never retries: the adapter does, with backoff. ConfigurationError for a mix of auth modes, missing
    botocore or AWS credentials, or TLS settings the client refuses.
    """
    from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions

    if aws is not None and (username is not None or password is not None or api_key is not None):
        raise ConfigurationError("index.opensearch: aws (SigV4 signing) excludes username, password and api_key")
    if api_key is not None and username is not None:
        raise ConfigurationError("index.opensearch: use either username/password or api_key, not both")
    if isinstance(pool_maxsize, bool) or not isinstance(pool_maxsize, int) or pool_maxsize < 1:
        raise ConfigurationError(f"index.opensearch.pool_maxsize must be a positive integer, got {pool_maxsize!r}")
    kwargs: dict[str, Any] = {
        "hosts": [url],
        "timeout": timeout_s,
        "max_retries": 0,
        "retry_on_timeout": False,
        "verify_certs": verify,
        "ssl_show_warn": verify,
        "pool_maxsize": pool_maxsize,
    }
    if aws is not None:
        kwargs["http_auth"] = _aws_signer(aws)
    elif username is not None:
        kwargs["http_auth"] = (username, password or "")
    elif api_key is not None:
        kwargs["headers"] = {"authorization": f"ApiKey {api_key}"}
    if ca_certs is not None:
        kwargs["ca_certs"] = ca_certs
    transport_log = logging.getLogger("opensearch")
    if transport_log.level == logging.NOTSET:
        # opensearch-py logs each failed request at WARNING with a traceback, and request bodies (chunk
        # text) at DEBUG; the adapter reports failures itself. A level set by the operator is kept.
        transport_log.setLevel(logging.ERROR)
    try:
        client = OpenSearch(**kwargs)
    except ImproperlyConfigured as exc:
        raise ConfigurationError(f"index.opensearch: {exc}") from None
    return OpenSearchIndex(client, options or OpenSearchOptions())


def _aws_signer(aws: AwsSigV4) -> Any:
    """opensearch-py's SigV4 signer for the urllib3 connection, over botocore's default credential chain."""
    if not aws.region:
        raise ConfigurationError("index.opensearch.aws.region is required for SigV4 signing")
    try:
        import botocore.session
        from botocore.exceptions import BotoCoreError
    except ImportError:
        raise ConfigurationError(
            "index.opensearch.aws: SigV4 signing needs botocore, which is not installed: pip install 'docqa[aws]'"
        ) from None
    from opensearchpy import Urllib3AWSV4SignerAuth

    try:
        credentials = botocore.session.get_session().get_credentials()
    except BotoCoreError as exc:  # a named profile that does not exist, a malformed file, a failing process
        raise ConfigurationError(f"index.opensearch.aws: cannot read AWS credentials: {exc}") from None
    if credentials is None:
        raise ConfigurationError(
            "index.opensearch.aws: no AWS credentials found (botocore's default chain: AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, a web identity token (EKS IRSA), a container "
            "or instance role)"
        )
    return Urllib3AWSV4SignerAuth(credentials, aws.region, aws.service)


@runtime_checkable
class ServerInfo(Protocol):
    """What ``check_server`` asks of the adapter (``OpenSearchIndex`` has both)."""

    def ping(self) -> None: ...

    def server(self) -> ServerFacts: ...


def check_server(index: ServerInfo, *, engine: str, api_key_configured: bool) -> ServerFacts:
    """The server's facts once it is shown fit for DocQA; else ConfigurationError naming every reason.

    A quick ``GET /`` (one attempt, the ping timeout) comes first, so an unreachable server is reported
    as IndexUnavailable in seconds rather than after the adapter's retries. A server that refuses the
    credentials is a ConfigurationError; with an API key configured its message says which servers
    accept API keys.
    """
    try:
        index.ping()
        facts = index.server()
    except ConfigurationError as exc:
        if api_key_configured:
            raise ConfigurationError(f"{exc.message}. {API_KEY_HINT}") from None
        raise
    problems = server_problems(facts, engine=engine, api_key_configured=api_key_configured)
    if problems:
        raise ConfigurationError(
            f"index.opensearch: the server at index.opensearch.url cannot be used: {'; '.join(problems.values())}"
        )
    return facts


def server_problems(facts: ServerFacts, *, engine: str, api_key_configured: bool) -> dict[str, str]:
    """Why DocQA cannot use this server, keyed by check (``distribution``, ``version``, ``k-NN plugin``,
    ``api key``); empty when it can."""
    minimum = minimum_version(engine)
    if facts.distribution != "opensearch":
        return {
            "distribution": f"it is {facts.distribution} {facts.version}, not OpenSearch "
            f"(DocQA needs OpenSearch {dotted(minimum)} or later with the k-NN plugin)"
        }
    problems: dict[str, str] = {}
    version = facts.version_tuple()
    if not version:
        problems["version"] = f"GET / gives no version number ({facts.version!r})"
    elif version < minimum:
        problems["version"] = (
            f"OpenSearch {facts.version} is older than {dotted(minimum)}, the oldest DocQA supports: "
            "its k-NN plugin returns wrong results for filtered searches on indices of more than one shard "
            "(k-NN#2339, fixed in 2.19)"
        )
    if not facts.knn_plugin:
        problems["k-NN plugin"] = "the k-NN plugin (opensearch-knn) is not installed: vector search cannot work"
    if api_key_configured and version and version < API_KEY_MINIMUM_VERSION:
        problems["api key"] = (
            f"index.opensearch.api_key is set but OpenSearch {facts.version} accepts API keys only from "
            f"{dotted(API_KEY_MINIMUM_VERSION)} on: use username and password, or upgrade"
        )
    return problems

"""One connection to watsonx.ai through ``ibm-watsonx-ai``: credentials, TLS, timeouts, and its errors.

The generator (``service.generation.watsonx``) and the reranker
(``service.ranking.watsonx``) both talk to watsonx.ai through a
``WatsonxConnection``; only what they ask for differs. Nothing is imported or
connected until ``api_client()`` is first called. The SDK's HTTP clients are
ours: an ``httpx.Client`` with the configured timeout and an explicit TLS
context (``verify`` is never left to the SDK, which would otherwise fall back
to *no* certificate checks for the whole process after one TLS failure), and a
plain transport with no hidden retries. Whatever the SDK or httpx raises inside
``errors()`` becomes the connection's ``Unavailable`` subclass or a
``ConfigurationError``; messages carry a status or a kind, never a key, a
token, or the text sent.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acl.errors import ConfigurationError, Unavailable
from service.config import WatsonxConfig
from service.generation.errors import GeneratorUnavailable

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("docqa.watsonx")

_AUTH_PATHS = ("/icp4d-api/", "/identity/token", "/v1/preauth/", "/idprovider/")

DocQAErrorType = ConfigurationError | Unavailable


@dataclass
class _Exchange:
    """The HTTP statuses seen during one operation, as (path, status)."""

    replies: list[tuple[str, int]] = field(default_factory=list)

    @property
    def failed(self) -> tuple[str, int] | None:
        bad = [r for r in self.replies if r[1] >= 400]
        return bad[-1] if bad else None

    def attempts(self, path_part: str) -> int:
        return sum(1 for path, _ in self.replies if path_part in path)


class WatsonxConnection:
    """An ``APIClient`` made on first use, and the translation of what goes wrong into our errors.

    ``unavailable`` is the error class raised when the service cannot answer,
    ``what`` names the service in its messages ("language model", "reranker"),
    ``key`` is the configuration section messages point to, and ``model_key``
    the key that names the model.
    """

    def __init__(
        self,
        config: WatsonxConfig,
        *,
        unavailable: type[Unavailable] = GeneratorUnavailable,
        what: str = "language model",
        key: str = "generator.watsonx",
        model_key: str = "generator.watsonx.model_id",
    ) -> None:
        self.config = config
        self._unavailable = unavailable
        self._what = what
        self._key = key
        self._model_key = model_key
        self.lock = threading.RLock()
        self._local = threading.local()
        self._client: Any = None  # ibm_watsonx_ai.APIClient, once connected
        self._http: list[Any] = []  # the httpx clients handed to the SDK

    @property
    def connected(self) -> bool:
        return self._client is not None

    def describe(self) -> tuple[str, str]:
        """(scope, TLS) in words, for ``docqa doctor``."""
        c = self.config
        scope = f"project {c.project_id}" if c.project_id else f"space {c.space_id}"
        tls = f"CA bundle {c.ca_bundle}" if c.ca_bundle else ("system CAs" if c.verify else "certificate checks OFF")
        return scope, tls

    def set_stage(self, stage: str) -> None:
        """What the current operation is doing: ``connect``, ``model`` (setting up a model) or ``call``."""
        self._local.stage = stage

    def close(self) -> None:
        """Close the HTTP connections; the next call connects again."""
        with self.lock:
            self._client = None
            clients, self._http = self._http, []
        for client in clients:
            close = getattr(client, "close", None)  # the unused async client has no open connection
            if close is not None:
                close()

    # connecting ----------------------------------------------------------------------
    def _verify(self) -> ssl.SSLContext | bool:
        c = self.config
        if c.ca_bundle is not None:
            path = str(c.ca_bundle)
            return (
                ssl.create_default_context(capath=path)
                if c.ca_bundle.is_dir()
                else ssl.create_default_context(cafile=path)
            )
        return c.verify

    def api_client(self) -> Any:
        """The SDK's ``APIClient``, authenticated and scoped to the project or space; made once."""
        with self.lock:
            if self._client is not None:
                return self._client
            import httpx
            from ibm_watsonx_ai import APIClient, Credentials

            c = self.config
            _require_username(c, self._key)
            if not c.verify:
                log.warning("%s.verify is false: the certificate of %s is NOT checked", self._key, c.url)
            verify = self._verify()
            timeout = httpx.Timeout(c.timeout_s)
            limits = httpx.Limits(max_connections=10, max_keepalive_connections=10, keepalive_expiry=5)
            hooks = {"response": [self._observe]}
            # Our own clients: explicit TLS, explicit timeout, a transport without the SDK's
            # hidden retries (it retries 401/5xx three more times inside every attempt).
            sync = httpx.Client(
                verify=verify,
                timeout=timeout,
                limits=limits,
                event_hooks=hooks,
                transport=httpx.HTTPTransport(verify=verify, limits=limits, retries=0),
            )
            # Never used (all our calls are synchronous) and so never connects; without it the
            # SDK would build one from its defaults (30-minute timeout, its retrying transport).
            unused_async = httpx.AsyncClient(verify=verify, timeout=timeout, limits=limits)
            self._http = [sync, unused_async]
            try:
                credentials = Credentials(
                    url=c.url,
                    api_key=_secret(c.api_key),
                    token=_secret(c.token),
                    username=c.username,
                    password=_secret(c.password),
                    verify=str(c.ca_bundle) if c.ca_bundle is not None else c.verify,
                )
                self._client = APIClient(
                    credentials,
                    project_id=c.project_id,
                    space_id=c.space_id,
                    httpx_client=sync,
                    async_httpx_client=unused_async,
                )
            except BaseException:
                self._http = []
                sync.close()
                raise
            return self._client

    def _observe(self, response: httpx.Response) -> None:
        exchange: _Exchange | None = getattr(self._local, "exchange", None)
        if exchange is not None:
            exchange.replies.append((response.request.url.path, response.status_code))

    # errors ---------------------------------------------------------------------
    @contextmanager
    def errors(self, model_id: str) -> Iterator[None]:
        """Turn whatever the SDK or httpx raises into our errors, without their messages."""
        exchange = _Exchange()
        self._local.exchange = exchange
        self._local.stage = "connect" if self._client is None else "call"
        try:
            yield
        except (ConfigurationError, Unavailable):
            raise
        except Exception as exc:
            error = self._translate(exc, exchange, model_id, getattr(self._local, "stage", "call"))
            log.warning("watsonx.ai call failed: %s (%s)", error.message, type(exc).__name__)
            raise error from None
        finally:
            self._local.exchange = None

    def _translate(self, exc: Exception, exchange: _Exchange, model_id: str, stage: str) -> DocQAErrorType:
        import httpx

        c, down, key = self.config, f"{self._what} unavailable", self._key
        cause = _find(exc, httpx.HTTPError)
        if isinstance(cause, httpx.TimeoutException):
            return self._unavailable(f"{down}: no reply within {c.timeout_s:g} s")
        if isinstance(cause, httpx.ConnectError) and _is_tls(cause):
            return ConfigurationError(
                f"the certificate of {c.url} was not accepted: set {key}.ca_bundle to the CA that signed it"
            )
        if isinstance(cause, httpx.ConnectError):
            return self._unavailable(f"{down}: cannot connect")
        if isinstance(cause, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return self._unavailable(f"{down}: connection dropped")
        failed = exchange.failed
        if failed is not None:
            path, status = failed
            if status in (401, 403) or (status < 500 and any(p in path for p in _AUTH_PATHS)):
                return ConfigurationError(
                    f"watsonx.ai rejected the credentials (HTTP {status}): check {key}.api_key, "
                    "token, username or password"
                )
            if status < 500 and ("/v2/projects/" in path or "/v2/spaces/" in path):
                scope = "project_id" if "/v2/projects/" in path else "space_id"
                return ConfigurationError(f"watsonx.ai has no such {scope} (HTTP {status}): check {key}.{scope}")
            if status == 404:
                return ConfigurationError(
                    f"watsonx.ai does not serve model {model_id!r} here (HTTP 404): check {self._model_key}"
                )
            attempts = exchange.attempts(path)
            tried = f" after {attempts} attempts" if attempts > 1 else ""
            return self._unavailable(f"{down}: HTTP {status}{tried}")
        if stage == "model":
            return ConfigurationError(
                f"model {model_id!r} is not offered by {c.url}: check {self._model_key} or the store's LLM model id"
            )
        if stage == "connect":
            return ConfigurationError(
                f"cannot set up the watsonx.ai client for {c.url} ({type(exc).__name__}): check {key}"
            )
        return self._unavailable(f"{down}: unexpected reply ({type(exc).__name__})")


# helpers -------------------------------------------------------------------------
def _secret(value: Any) -> str | None:
    return None if value is None else str(value.get_secret_value())


def _require_username(config: WatsonxConfig, key: str) -> None:
    from urllib.parse import urlsplit

    from ibm_watsonx_ai import APIClient

    parts = urlsplit(config.url or "")
    base = f"{parts.scheme}://{parts.hostname}"
    cloud = base in APIClient.PLATFORM_URLS_MAP or base in APIClient.PLATFORM_URLS_MAP.values()
    if not cloud and config.api_key is not None and config.token is None and not config.username:
        raise ConfigurationError(f"{key}.username is required with an API key outside IBM Cloud (Cloud Pak for Data)")


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of ``kind`` in ``exc``'s cause/context chain (or an exception group)."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return None


def _is_tls(error: BaseException) -> bool:
    return isinstance(_find(error, ssl.SSLError), ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(error)

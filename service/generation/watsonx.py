"""The watsonx.ai adapter of the generator port, through IBM's ``ibm-watsonx-ai`` SDK (``ModelInference``).

Nothing is imported or connected until the first answer is asked for. The
SDK's HTTP clients are ours: an ``httpx.Client`` with the configured timeout
and an explicit TLS context (``verify`` is never left to the SDK, which would
otherwise fall back to *no* certificate checks for the whole process after one
TLS failure), and a plain transport with no hidden retries. Retries are the
SDK's own rate-limited retry of 429/500/502/503/504, bounded by ``max_retries``
and ``delay_time``; a request that still fails, times out or loses its
connection becomes ``GeneratorUnavailable``, and rejected credentials or an
unknown project or model become ``ConfigurationError``. Error messages carry
a status or a kind, never a key, a token, or prompt text.
"""

from __future__ import annotations

import logging
import re
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acl.errors import ConfigurationError, GeneratorUnavailable
from service.config import Settings, WatsonxConfig
from service.generation.extractive import EXTRACTIVE_MODEL_ID
from service.generation.port import Completion, Generator, Prompt
from service.generation.prompting import TokenBudget, estimate_tokens

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("docqa.watsonx")

#: Statuses the SDK retries (its default is 429, 503, 504, 520).
RETRY_STATUS_CODES = (429, 500, 502, 503, 504)
#: The SDK's cap on one backoff sleep, and its jitter (sleep × 1.0-1.25), in 1.8.1.
_SDK_MAX_DELAY_S = 8.0
_SDK_JITTER = 1.25
_CITATION = re.compile(r"\[(\d{1,4})\]")
_AUTH_PATHS = ("/icp4d-api/", "/identity/token", "/v1/preauth/", "/idprovider/")


def retry_budget_s(config: WatsonxConfig) -> float:
    """The longest a generation may take before ``GeneratorUnavailable``, by configuration.

    ``max_retries + 1`` attempts, each bounded by the timeout of one network
    operation, plus the SDK's backoff sleeps between them. (A streaming answer
    may take longer as long as tokens keep arriving within the timeout.)
    """
    sleeps = sum(
        min(config.delay_time_s * float(2**attempt), _SDK_MAX_DELAY_S) * _SDK_JITTER
        for attempt in range(config.max_retries)
    )
    # connect + write + read may each take up to the timeout
    return (config.max_retries + 1) * 3 * config.timeout_s + sleeps


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


class WatsonxGenerator(Generator):
    """Answers with a watsonx.ai foundation model; connects on first use."""

    def __init__(self, config: WatsonxConfig) -> None:
        if not config.url or not config.model_id:
            raise ConfigurationError("generator.watsonx.url and generator.watsonx.model_id are required")
        self._config = config
        self.model_id = config.model_id
        self.context_tokens = config.context_window - config.max_new_tokens
        self._budget = TokenBudget(config.context_window, config.max_new_tokens, estimate_tokens)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._client: Any = None  # ibm_watsonx_ai.APIClient, once connected
        self._http: list[Any] = []  # the httpx clients handed to the SDK
        self._models: dict[str, Any] = {}  # model id -> ModelInference

    def __repr__(self) -> str:
        c = self._config
        scope = f"project_id={c.project_id!r}" if c.project_id else f"space_id={c.space_id!r}"
        return f"WatsonxGenerator(url={c.url!r}, model_id={c.model_id!r}, {scope})"

    # the port ----------------------------------------------------------------------
    def token_budget(self) -> TokenBudget:
        return self._budget

    def generate(self, prompt: Prompt) -> Completion:
        """The model's answer to ``prompt`` with token counts, stop reason and model id."""
        model_id = self._model_id_for(prompt)
        with self._errors(model_id):
            model = self._model(model_id)
            response = model.generate(prompt=prompt.render(), params=self._parameters())
            result = response["results"][0]
            text = str(result.get("generated_text") or "")
            return Completion(
                text=text,
                model_id=str(response.get("model_id") or model_id),
                input_tokens=int(result.get("input_token_count") or 0),
                output_tokens=int(result.get("generated_token_count") or 0),
                stop_reason=str(result.get("stop_reason") or "unknown"),
                used_citations=_cited(text, len(prompt.chunks)),
            )

    def stream(self, prompt: Prompt) -> Iterator[str]:
        """The answer in pieces as the model produces them (server-sent events).

        Closing this iterator early closes the SDK's stream and with it the HTTP
        response: the connection is dropped, so the model stops generating for us.
        """
        model_id = self._model_id_for(prompt)
        with self._errors(model_id):
            model = self._model(model_id)
            events = model.generate_text_stream(prompt=prompt.render(), params=self._parameters(), raw_response=True)
            try:
                for event in events:
                    piece = event["results"][0].get("generated_text") or ""
                    if piece:
                        yield piece
            finally:
                events.close()  # at once, not whenever the garbage collector gets to it

    def close(self) -> None:
        """Close the HTTP connections; the next call connects again."""
        with self._lock:
            self._models.clear()
            self._client = None
            clients, self._http = self._http, []
        for client in clients:
            close = getattr(client, "close", None)  # the unused async client has no open connection
            if close is not None:
                close()

    # checks for `docqa doctor` ---------------------------------------------------------
    def check(self) -> list[tuple[str, bool, str]]:
        """(name, ok, detail) for: the credentials and scope work; the model exists and fits the window."""
        c = self._config
        scope = f"project {c.project_id}" if c.project_id else f"space {c.space_id}"
        tls = f"CA bundle {c.ca_bundle}" if c.ca_bundle else ("system CAs" if c.verify else "certificate checks OFF")
        try:
            with self._errors(self.model_id):
                client = self._api_client()
        except (ConfigurationError, GeneratorUnavailable) as exc:
            return [("watsonx credentials", False, exc.message)]
        results = [("watsonx credentials", True, f"authenticated to {c.url} ({scope}; TLS: {tls})")]
        try:
            with self._errors(self.model_id):
                spec = client.foundation_models.get_model_specs(model_id=self.model_id)
                if spec is None:
                    spec = client.foundation_models.get_model_specs(model_id=self.model_id, tech_preview=True)
        except (ConfigurationError, GeneratorUnavailable) as exc:
            return [*results, ("watsonx model", False, exc.message)]
        if not spec:
            return [*results, ("watsonx model", False, f"model {self.model_id!r} is not offered by {c.url}")]
        window = int((spec.get("model_limits") or {}).get("max_sequence_length") or 0)
        if window and c.context_window > window:
            detail = (
                f"model {self.model_id!r} reads at most {window} tokens but generator.watsonx.context_window "
                f"is {c.context_window}"
            )
            return [*results, ("watsonx model", False, detail)]
        size = f", context window {window} tokens" if window else ""
        return [*results, ("watsonx model", True, f"{self.model_id} is available{size}")]

    # connecting ----------------------------------------------------------------------
    def _model_id_for(self, prompt: Prompt) -> str:
        # A store's own LLM model id wins; the extractive placeholder means "the configured one".
        if prompt.model_id and prompt.model_id != EXTRACTIVE_MODEL_ID:
            return prompt.model_id
        return self.model_id

    def _parameters(self) -> dict[str, Any]:
        return {"decoding_method": "greedy", "max_new_tokens": self._config.max_new_tokens}

    def _verify(self) -> ssl.SSLContext | bool:
        c = self._config
        if c.ca_bundle is not None:
            path = str(c.ca_bundle)
            return (
                ssl.create_default_context(capath=path)
                if c.ca_bundle.is_dir()
                else ssl.create_default_context(cafile=path)
            )
        return c.verify

    def _api_client(self) -> Any:
        with self._lock:
            if self._client is not None:
                return self._client
            import httpx
            from ibm_watsonx_ai import APIClient, Credentials

            c = self._config
            _require_username(c)
            if not c.verify:
                log.warning("generator.watsonx.verify is false: the certificate of %s is NOT checked", c.url)
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

    def _model(self, model_id: str) -> Any:
        with self._lock:
            model = self._models.get(model_id)
            if model is None:
                from ibm_watsonx_ai.foundation_models import ModelInference

                client = self._api_client()
                self._local.stage = "model"
                model = ModelInference(
                    model_id=model_id,
                    api_client=client,
                    max_retries=self._config.max_retries,
                    delay_time=self._config.delay_time_s,
                    retry_status_codes=list(RETRY_STATUS_CODES),
                )
                self._models[model_id] = model
                self._local.stage = "call"
            return model

    def _observe(self, response: httpx.Response) -> None:
        exchange: _Exchange | None = getattr(self._local, "exchange", None)
        if exchange is not None:
            exchange.replies.append((response.request.url.path, response.status_code))

    # errors ---------------------------------------------------------------------
    @contextmanager
    def _errors(self, model_id: str) -> Iterator[None]:
        """Turn whatever the SDK or httpx raises into our errors, without their messages."""
        exchange = _Exchange()
        self._local.exchange = exchange
        self._local.stage = "connect" if self._client is None else "call"
        try:
            yield
        except (ConfigurationError, GeneratorUnavailable):
            raise
        except Exception as exc:
            error = self._translate(exc, exchange, model_id, getattr(self._local, "stage", "call"))
            log.warning("watsonx.ai call failed: %s (%s)", error.message, type(exc).__name__)
            raise error from None
        finally:
            self._local.exchange = None

    def _translate(
        self, exc: Exception, exchange: _Exchange, model_id: str, stage: str
    ) -> ConfigurationError | GeneratorUnavailable:
        import httpx

        c = self._config
        cause = _find(exc, httpx.HTTPError)
        if isinstance(cause, httpx.TimeoutException):
            return GeneratorUnavailable(f"language model unavailable: no reply within {c.timeout_s:g} s")
        if isinstance(cause, httpx.ConnectError) and _is_tls(cause):
            return ConfigurationError(
                f"the certificate of {c.url} was not accepted: set generator.watsonx.ca_bundle to the CA that signed it"
            )
        if isinstance(cause, httpx.ConnectError):
            return GeneratorUnavailable("language model unavailable: cannot connect")
        if isinstance(cause, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return GeneratorUnavailable("language model unavailable: connection dropped")
        failed = exchange.failed
        if failed is not None:
            path, status = failed
            if status in (401, 403) or (status < 500 and any(p in path for p in _AUTH_PATHS)):
                return ConfigurationError(
                    f"watsonx.ai rejected the credentials (HTTP {status}): check generator.watsonx.api_key, "
                    "token, username or password"
                )
            if status < 500 and ("/v2/projects/" in path or "/v2/spaces/" in path):
                key = "project_id" if "/v2/projects/" in path else "space_id"
                return ConfigurationError(
                    f"watsonx.ai has no such {key} (HTTP {status}): check generator.watsonx.{key}"
                )
            if status == 404:
                return ConfigurationError(
                    f"watsonx.ai does not serve model {model_id!r} here (HTTP 404): check generator.watsonx.model_id"
                )
            attempts = exchange.attempts(path)
            tried = f" after {attempts} attempts" if attempts > 1 else ""
            return GeneratorUnavailable(f"language model unavailable: HTTP {status}{tried}")
        if stage == "model":
            return ConfigurationError(
                f"model {model_id!r} is not offered by {c.url}: "
                "check generator.watsonx.model_id or the store's LLM model id"
            )
        if stage == "connect":
            return ConfigurationError(
                f"cannot set up the watsonx.ai client for {c.url} ({type(exc).__name__}): check generator.watsonx"
            )
        return GeneratorUnavailable(f"language model unavailable: unexpected reply ({type(exc).__name__})")


def check(settings: Settings) -> list[tuple[str, bool, str]]:
    """What ``docqa doctor`` shows about the generator: (name, ok, detail); details never hold secrets."""
    config = settings.generator
    if config.backend != "watsonx":
        return [("generator", True, "extractive answers (offline, no language model)")]
    try:
        generator = WatsonxGenerator(config.watsonx)
    except ConfigurationError as exc:
        return [("watsonx configuration", False, exc.message)]
    try:
        return generator.check()
    finally:
        generator.close()


# helpers -------------------------------------------------------------------------
def _secret(value: Any) -> str | None:
    return None if value is None else str(value.get_secret_value())


def _require_username(config: WatsonxConfig) -> None:
    from urllib.parse import urlsplit

    from ibm_watsonx_ai import APIClient

    parts = urlsplit(config.url or "")
    base = f"{parts.scheme}://{parts.hostname}"
    cloud = base in APIClient.PLATFORM_URLS_MAP or base in APIClient.PLATFORM_URLS_MAP.values()
    if not cloud and config.api_key is not None and config.token is None and not config.username:
        raise ConfigurationError(
            "generator.watsonx.username is required with an API key outside IBM Cloud (Cloud Pak for Data)"
        )


def _cited(text: str, count: int) -> tuple[int, ...]:
    return tuple(sorted({n for n in map(int, _CITATION.findall(text)) if 1 <= n <= count}))


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

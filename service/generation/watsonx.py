"""The watsonx.ai adapter of the generator port, through IBM's ``ibm-watsonx-ai`` SDK (``ModelInference``).

Nothing is imported or connected until the first answer is asked for. The
connection (credentials, explicit TLS, timeouts, no hidden retries, error
translation) is ``service.generation.watsonx_client.WatsonxConnection``, shared
with the watsonx reranker. Retries are the SDK's own rate-limited retry of
429/500/502/503/504, bounded by ``max_retries`` and ``delay_time``; a request
that still fails, times out or loses its connection becomes
``GeneratorUnavailable``, and rejected credentials or an unknown project or
model become ``ConfigurationError``. Error messages carry a status or a kind,
never a key, a token, or prompt text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from acl.errors import ConfigurationError
from service.config import Settings, WatsonxConfig
from service.generation.errors import GeneratorUnavailable
from service.generation.extractive import EXTRACTIVE_MODEL_ID
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt
from service.generation.prompting import TokenBudget, estimate_tokens
from service.generation.watsonx_client import WatsonxConnection

#: Statuses the SDK retries (its default is 429, 503, 504, 520).
RETRY_STATUS_CODES = (429, 500, 502, 503, 504)
#: The SDK's cap on one backoff sleep, and its jitter (sleep × 1.0-1.25), in 1.8.1.
_SDK_MAX_DELAY_S = 8.0
_SDK_JITTER = 1.25
_CITATION = re.compile(r"\[(\d{1,4})\]")


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


class WatsonxGenerator(Generator):
    """Answers with a watsonx.ai foundation model; connects on first use."""

    def __init__(self, config: WatsonxConfig) -> None:
        if not config.url or not config.model_id:
            raise ConfigurationError("generator.watsonx.url and generator.watsonx.model_id are required")
        self._config = config
        self.model_id = config.model_id
        self.context_tokens = config.context_window - config.max_new_tokens
        self._budget = TokenBudget(config.context_window, config.max_new_tokens, estimate_tokens)
        self._connection = WatsonxConnection(config)
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
        with self._connection.lock:
            self._models.clear()
            self._connection.close()

    # checks for `docqa doctor` ---------------------------------------------------------
    def check(self) -> list[tuple[str, bool, str]]:
        """(name, ok, detail) for: the credentials and scope work; the model exists and fits the window."""
        c = self._config
        scope, tls = self._connection.describe()
        try:
            with self._errors(self.model_id):
                client = self._connection.api_client()
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

    def _model(self, model_id: str) -> Any:
        with self._connection.lock:
            model = self._models.get(model_id)
            if model is None:
                from ibm_watsonx_ai.foundation_models import ModelInference

                client = self._connection.api_client()
                self._connection.set_stage("model")
                model = ModelInference(
                    model_id=model_id,
                    api_client=client,
                    max_retries=self._config.max_retries,
                    delay_time=self._config.delay_time_s,
                    retry_status_codes=list(RETRY_STATUS_CODES),
                )
                self._models[model_id] = model
                self._connection.set_stage("call")
            return model

    def _errors(self, model_id: str) -> AbstractContextManager[None]:
        """Turn whatever the SDK or httpx raises into our errors, without their messages."""
        return self._connection.errors(model_id)


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
def _cited(text: str, count: int) -> tuple[int, ...]:
    return tuple(sorted({n for n in map(int, _CITATION.findall(text)) if 1 <= n <= count}))

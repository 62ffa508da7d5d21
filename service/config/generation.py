"""Answers and their order: the generator, its watsonx.ai connection, the reranker."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from acl.errors import InvalidArgument
from service.config.base import _Section, finite
from service.domain.links import AllowedPrefix
from service.domain.store_settings import validate_model_id


class WatsonxConfig(_Section):
    """IBM watsonx.ai through ``ibm-watsonx-ai`` (used when ``generator.backend`` is ``watsonx``)."""

    #: Service URL, https only (an IBM Cloud region URL, or a Cloud Pak for Data cluster).
    url: str | None = None
    #: An API key (IBM Cloud IAM, or a CPD user's key with ``username``) ...
    api_key: SecretStr | None = None
    #: ... or a bearer token (no authentication request is made) ...
    token: SecretStr | None = None
    #: ... or, on Cloud Pak for Data only, ``username`` + ``password``.
    username: str | None = None
    password: SecretStr | None = None
    #: Exactly one of a project or a deployment space.
    project_id: str | None = None
    space_id: str | None = None
    #: The foundation model used when a store names none of its own.
    model_id: str | None = None
    #: Check the server's certificate (against ``ca_bundle`` when set). Turning it off is logged loudly.
    verify: bool = True
    ca_bundle: Path | None = None
    #: Seconds any one network operation (connect, a read, a write) may take.
    timeout_s: float = Field(60.0, gt=0, le=3600)
    #: Retries of a request answered 429/500/502/503/504, with exponential backoff from ``delay_time_s``.
    max_retries: int = Field(2, ge=0, le=10)
    delay_time_s: float = Field(0.5, ge=0, le=60)
    #: Tokens the answer may have; prompt + context + this must fit ``context_window``.
    max_new_tokens: int = Field(512, ge=1, le=32_768)
    #: The model's maximum sequence length (input + output tokens).
    context_window: int = Field(8192, ge=256, le=2_000_000)

    @field_validator("timeout_s", "delay_time_s")
    @classmethod
    def _finite_seconds(cls, value: float) -> float:
        return finite(value)

    @field_validator("model_id")
    @classmethod
    def _clean_model_id(cls, value: str | None) -> str | None:
        try:
            return validate_model_id(value, "model_id") if value else value
        except InvalidArgument as exc:
            raise ValueError(exc.message) from None

    def connection_problems(self) -> list[str]:
        """What stops a connection (URL, credentials, project or space, CA bundle), each naming its key."""
        problems: list[str] = []
        if not self.url:
            problems.append("watsonx.url is required")
        elif not self.url.startswith("https://"):
            problems.append("watsonx.url must start with https://")
        if not (self.api_key or self.token or self.password):
            problems.append("one of watsonx.api_key, watsonx.token or watsonx.password is required")
        if self.password and not self.username:
            problems.append("watsonx.username is required with watsonx.password")
        if bool(self.project_id) == bool(self.space_id):
            problems.append("exactly one of watsonx.project_id or watsonx.space_id is required")
        if self.ca_bundle is not None and not self.verify:
            problems.append("watsonx.ca_bundle is set but watsonx.verify is false")
        if self.ca_bundle is not None and not self.ca_bundle.exists():
            problems.append(f"watsonx.ca_bundle {self.ca_bundle} does not exist")
        return problems


class GeneratorConfig(_Section):
    #: ``extractive`` (offline, the default) or ``watsonx``.
    backend: Literal["extractive", "watsonx"] = "extractive"
    #: Tokens of context the generator accepts; a DocumentQuery sends the whole
    #: document only when it fits.
    context_tokens: int = Field(8192, ge=256)
    #: Sentences the extractive answerer quotes.
    max_sentences: int = Field(3, ge=1, le=20)
    #: Units (the best by their words) the extractive answerer compares in meaning with the question, with the
    #: store's embedding model, to choose what it quotes; 0 = words alone. Each costs ~3-6 ms of CPU per answer.
    semantic_units: int = Field(6, ge=0, le=50)
    #: URL prefixes (http/https) an answer may link to besides its own sources; every other
    #: link or image in an answer is removed (service.generation.sanitize).
    link_allowlist: tuple[str, ...] = Field((), max_length=100)
    watsonx: WatsonxConfig = WatsonxConfig()

    @field_validator("link_allowlist")
    @classmethod
    def _allowlist_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            AllowedPrefix.parse(entry)  # ValueError names the entry
        return value

    @model_validator(mode="after")
    def _watsonx_complete(self) -> GeneratorConfig:
        if self.backend != "watsonx":
            return self
        w = self.watsonx
        problems = w.connection_problems()
        if not w.model_id:
            problems.append("watsonx.model_id is required")
        if w.max_new_tokens >= w.context_window:
            problems.append("watsonx.max_new_tokens must be smaller than watsonx.context_window")
        if problems:
            raise ValueError("with backend watsonx: " + "; ".join(problems))
        return self


class RerankConfig(_Section):
    """How a query's readable candidates are ordered before the best are kept (``service.ranking``)."""

    #: ``offline``: the store's embedding model and text evidence, no extra model (the default);
    #: ``watsonx``: watsonx.ai's rerank API with ``model_id``, through ``generator.watsonx``'s connection;
    #: ``cross_encoder``: a local sentence-transformers CrossEncoder from ``model_path``; ``adapted``: each
    #: store's own model (``docqa adapt``) over the offline order, the offline reranker where a store has none;
    #: ``none``: retrieval order.
    kind: Literal["offline", "watsonx", "cross_encoder", "adapted", "none"] = "offline"
    #: Candidates the reranker orders (the best of them are kept: a query's k or the store's max_chunks).
    candidates: int = Field(30, ge=1, le=1000)
    #: The watsonx.ai rerank model (kind ``watsonx``).
    model_id: str = "cross-encoder/ms-marco-minilm-l-12-v2"
    #: Folder of a sentence-transformers CrossEncoder model (kind ``cross_encoder``); nothing is downloaded.
    model_path: Path | None = None
    #: Seconds one rerank request to watsonx.ai may take (connect, write and read each); it is not retried.
    timeout_s: float = Field(5.0, gt=0, le=600)
    #: Tokens of each question + chunk pair the model reads; longer input is cut at the end (the model's limit).
    truncate_input_tokens: int = Field(512, ge=16, le=32_768)

    @field_validator("timeout_s")
    @classmethod
    def _finite_seconds(cls, value: float) -> float:
        return finite(value)

    @field_validator("model_id")
    @classmethod
    def _clean_model_id(cls, value: str) -> str:
        try:
            return validate_model_id(value, "model_id")
        except InvalidArgument as exc:
            raise ValueError(exc.message) from None

    @model_validator(mode="after")
    def _model_path_for_cross_encoder(self) -> RerankConfig:
        if self.kind != "cross_encoder":
            return self
        if self.model_path is None:
            raise ValueError("kind cross_encoder needs rerank.model_path, the folder of a CrossEncoder model")
        if not self.model_path.is_dir():
            raise ValueError(f"rerank.model_path {self.model_path} is not a folder")
        return self

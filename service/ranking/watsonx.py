"""The watsonx.ai adapter of the reranker port: the rerank API (``ibm_watsonx_ai.foundation_models.Rerank``).

It connects through ``generator.watsonx``'s URL, credentials and project with
the generator's ``WatsonxConnection`` (explicit TLS, no hidden retries), with
its own timeout (``rerank.timeout_s``) and no retry: a reranker that is slow or
down costs the query its reranking, not its answer. Everything that goes wrong
(HTTP errors, timeouts, a malformed reply, a reply that does not rank every
candidate once, and rejected credentials) is ``RerankerUnavailable`` with a
short message; the operator's details go to the log and to ``docqa doctor``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

from acl.errors import ConfigurationError
from indexer.index import SearchHit
from indexer.index.port import Vector
from service.config import RerankConfig, WatsonxConfig
from service.generation.watsonx_client import WatsonxConnection
from service.ranking.errors import RerankerUnavailable
from service.ranking.features import CHARS_PER_TOKEN, passage
from service.ranking.port import Reranked, Reranker, ranked

log = logging.getLogger("docqa.rerank")


class WatsonxReranker(Reranker):
    """Reranks with a cross-encoder served by watsonx.ai; connects on first use."""

    def __init__(self, config: RerankConfig, watsonx: WatsonxConfig) -> None:
        problems = watsonx.connection_problems()
        if problems:
            raise ConfigurationError("rerank.kind watsonx connects with generator.watsonx: " + "; ".join(problems))
        self.model_id = config.model_id
        self.name = f"watsonx:{config.model_id}"
        self._truncate = config.truncate_input_tokens
        self._connection = WatsonxConnection(
            watsonx.model_copy(update={"timeout_s": config.timeout_s, "max_retries": 0}),
            unavailable=RerankerUnavailable,
            what="reranker",
            model_key="rerank.model_id",
        )
        self._model: Any = None  # ibm_watsonx_ai.foundation_models.Rerank, once connected

    def __repr__(self) -> str:
        return f"WatsonxReranker(url={self._connection.config.url!r}, model_id={self.model_id!r})"

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        if not hits:
            return []
        texts = [passage(h.chunk, self._truncate * CHARS_PER_TOKEN) for h in hits]
        try:
            reply = self._call(question, texts)
        except ConfigurationError as exc:
            log.error("the watsonx reranker is misconfigured: %s", exc.message)
            raise RerankerUnavailable("reranker unavailable: misconfigured (docqa doctor says why)") from None
        return ranked(hits, _scores(reply, len(hits)))

    def check(self) -> list[tuple[str, bool, str]]:
        """(name, ok, detail) for ``docqa doctor``: whether the model answers a two-text rerank."""
        scope, tls = self._connection.describe()
        started = time.perf_counter()
        try:
            _scores(self._call("docqa doctor", ["docqa doctor checks the reranker", "an unrelated text"]), 2)
        except (ConfigurationError, RerankerUnavailable) as exc:
            return [("watsonx reranker", False, exc.message)]
        took = (time.perf_counter() - started) * 1000
        detail = f"{self.model_id} answers ({scope}; TLS: {tls}; {took:.0f} ms)"
        return [("watsonx reranker", True, detail)]

    def close(self) -> None:
        with self._connection.lock:
            self._model = None
            self._connection.close()

    def _call(self, question: str, texts: list[str]) -> Any:
        with self._connection.errors(self.model_id):
            model = self._rerank_model()
            return model.generate(
                query=question,
                inputs=texts,
                params={
                    "truncate_input_tokens": self._truncate,
                    "return_options": {"top_n": len(texts), "inputs": False, "query": False},
                },
            )

    def _rerank_model(self) -> Any:
        with self._connection.lock:
            if self._model is None:
                from ibm_watsonx_ai.foundation_models import Rerank

                self._model = Rerank(model_id=self.model_id, api_client=self._connection.api_client())
                self._connection.set_stage("call")  # connected: what fails from here on is the rerank call
            return self._model


def _scores(reply: Any, count: int) -> list[float]:
    """The score of each input, by index, from a rerank reply that must rank every input exactly once."""
    results = reply.get("results") if isinstance(reply, dict) else None
    if not isinstance(results, list):
        raise RerankerUnavailable("reranker unavailable: malformed reply")
    if len(results) != count:
        raise RerankerUnavailable(f"reranker unavailable: the reply ranks {len(results)} of {count} candidates")
    scores = [math.nan] * count
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("score") if isinstance(result, dict) else None
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < count
            or not math.isnan(scores[index])
            or not isinstance(score, int | float)
            or isinstance(score, bool)
            or not math.isfinite(score)
        ):
            raise RerankerUnavailable("reranker unavailable: malformed reply")
        scores[index] = float(score)
    return scores

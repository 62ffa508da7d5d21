"""The configured reranker (``rerank.kind``), and what ``docqa doctor`` says about it.

Adapters are imported only for the kind configured: the watsonx SDK and
sentence-transformers cost seconds to import.
"""

from __future__ import annotations

from collections.abc import Callable

from acl.errors import ConfigurationError
from indexer.embedder import Embedder
from service.config import Settings
from service.ranking.port import Reranker


def build_reranker(settings: Settings, embedder_for: Callable[[str], Embedder]) -> Reranker | None:
    """The reranker ``settings.rerank`` names (None for ``none``); connects or loads nothing slow but the
    cross-encoder, which is loaded here."""
    config = settings.rerank
    if config.kind == "none":
        return None
    if config.kind == "watsonx":
        from service.ranking.watsonx import WatsonxReranker

        return WatsonxReranker(config, settings.generator.watsonx)
    if config.kind == "cross_encoder":
        from service.ranking.cross_encoder import CrossEncoderReranker

        if config.model_path is None:  # pragma: no cover - RerankConfig refuses this
            raise ConfigurationError("rerank.model_path is required with kind cross_encoder")
        return CrossEncoderReranker(
            config.model_path, max_tokens=config.truncate_input_tokens, device=settings.embedding.device
        )
    from service.ranking.offline import OfflineReranker

    offline = OfflineReranker(embedder_for, model=settings.embedding.model)
    if config.kind == "adapted":
        from service.ranking.adapted import AdaptedReranker

        return AdaptedReranker(offline, settings.data_dir)
    return offline


def check(settings: Settings) -> list[tuple[str, bool, str]]:
    """(name, ok, detail) lines for ``docqa doctor``; for watsonx, whether the rerank model answers."""
    config = settings.rerank
    if config.kind == "none":
        return [("reranker", True, "none: sources stay in retrieval order")]
    if config.kind == "offline":
        return [("reranker", True, "offline: the store's embedding model and text evidence (no extra model)")]
    if config.kind == "adapted":
        return [("reranker", True, "adapted: each store's model from docqa adapt (the offline reranker where none)")]
    if config.kind == "cross_encoder":
        path = config.model_path
        ok = path is not None and (path / "config.json").is_file()
        detail = f"cross_encoder from {path}" + ("" if ok else ": no model there (no config.json)")
        return [("reranker", ok, detail)]
    from service.ranking.watsonx import WatsonxReranker

    try:
        reranker = WatsonxReranker(config, settings.generator.watsonx)
    except ConfigurationError as exc:
        return [("reranker", False, exc.message)]
    try:
        return [("reranker", True, f"watsonx: {config.model_id}"), *reranker.check()]
    finally:
        reranker.close()

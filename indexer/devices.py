"""Where the embedding model runs: the configured device, else a GPU when there is one."""

from __future__ import annotations


def pick_device(configured: str | None) -> str:
    """``configured`` (``embedding.device``) when set; otherwise ``cuda`` if torch sees a GPU, else ``cpu``.

    So an indexing worker scheduled on a GPU node (the chart's ``indexing.gpu.enabled``) embeds on it
    with no configuration, and every other machine keeps the CPU. Call it where torch is loaded anyway.
    """
    if configured:
        return configured
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"

"""Fine-tuning the cross-encoder: a BERT sequence-classification head on the packaged MiniLM, listwise loss.

Each step reads ``groups`` training groups (the query with its positive and its negatives, the positive
first) and minimises the cross-entropy of the positive under a softmax over the group's logits. The
encoder may be cut to its first ``layers`` layers (a 3-layer model ranks at half the cost of the 6).
Pairs are tokenised by the same ``tokenizer.json`` the ONNX scorer uses at query time.

A checkpoint (weights, optimiser, schedule, step) is written every ``checkpoint_every`` steps by renaming a
finished file into place; a job started again with the same dataset resumes from it. Torch runs on a CUDA
GPU when there is one, else on the CPU's cores.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

from service.adaptation.dataset import Example

log = logging.getLogger("docqa.adapt")

CHECKPOINT = "checkpoint.pt"


@dataclass(frozen=True, slots=True)
class TrainingPlan:
    base_model: Path
    layers: int
    max_tokens: int
    groups: int  # training groups per step
    epochs: int
    learning_rate: float
    seed: int
    checkpoint_every: int
    device: str | None = None


def _quiet() -> None:
    for key, value in {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TRANSFORMERS_VERBOSITY": "error",
    }.items():
        os.environ.setdefault(key, value)
    for name in ("transformers", "transformers.modeling_utils"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module="transformers")


def device_for(requested: str | None) -> str:
    import torch

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(base_model: Path, layers: int) -> Any:
    """The base encoder with a fresh one-logit head, cut to its first ``layers`` layers."""
    _quiet()
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    model = AutoModelForSequenceClassification.from_pretrained(str(base_model), num_labels=1, local_files_only=True)
    encoder = getattr(getattr(model, model.base_model_prefix), "encoder", None)
    if encoder is not None and hasattr(encoder, "layer") and layers < len(encoder.layer):
        encoder.layer = encoder.layer[:layers]
        model.config.num_hidden_layers = layers
    return model


def encoder_layers(base_model: Path) -> int:
    import json

    return int(json.loads((base_model / "config.json").read_text())["num_hidden_layers"])


class PairEncoder:
    """(question, passage) pairs to model inputs with the model folder's ``tokenizer.json``."""

    def __init__(self, tokenizer_file: Path, max_tokens: int) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first")  # a long question is cut too
        self._tokenizer.enable_padding()

    def __call__(self, pairs: Sequence[tuple[str, str]], device: str) -> dict[str, Any]:
        import torch

        encodings = self._tokenizer.encode_batch(list(pairs))
        return {
            "input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long, device=device),
            "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long, device=device),
            "token_type_ids": torch.tensor([e.type_ids for e in encodings], dtype=torch.long, device=device),
        }


def train(
    examples: Sequence[Example],
    plan: TrainingPlan,
    work: Path,
    *,
    fingerprint: str,
    on_step: Callable[[int, int, float], None],
) -> Any:
    """The fine-tuned model (on the CPU, in eval mode), resuming from ``work/checkpoint.pt`` when it is this
    dataset's."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    device = device_for(plan.device)
    torch.manual_seed(plan.seed)
    if device == "cpu":
        torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = load_model(plan.base_model, plan.layers).to(device)
    encode = PairEncoder(plan.base_model / "tokenizer.json", plan.max_tokens)
    order: list[int] = []
    for epoch in range(plan.epochs):
        shuffled = list(range(len(examples)))
        Random(plan.seed + epoch).shuffle(shuffled)
        order += shuffled
    steps = max(1, -(-len(order) // plan.groups))
    head = [p for n, p in model.named_parameters() if n.startswith("classifier")]
    body = [p for n, p in model.named_parameters() if not n.startswith("classifier")]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": plan.learning_rate}, {"params": head, "lr": plan.learning_rate * 20}],
        weight_decay=0.01,
    )
    schedule = get_linear_schedule_with_warmup(optimizer, max(1, steps // 10), steps)  # type: ignore[no-untyped-call]
    start = 0
    checkpoint = work / CHECKPOINT
    if checkpoint.is_file():
        try:
            state = torch.load(checkpoint, map_location=device, weights_only=False)
        except Exception:  # a torn or foreign file: train from the start
            state = None
        if state is not None and state.get("fingerprint") == fingerprint and state.get("steps") == steps:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            schedule.load_state_dict(state["schedule"])
            start = int(state["step"])
            log.info("resuming training at step %d of %d", start, steps)
    model.train()
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(start, steps):
        batch = [examples[i] for i in order[step * plan.groups : (step + 1) * plan.groups]]
        width = min(len(e.negatives) for e in batch) + 1
        pairs = [(e.query, text) for e in batch for text in [e.positive, *e.negatives][:width]]
        logits = model(**encode(pairs, device)).logits.view(len(batch), width)
        loss = loss_fn(logits, torch.zeros(len(batch), dtype=torch.long, device=device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        done = step + 1
        if done % plan.checkpoint_every == 0 and done < steps:
            _save(checkpoint, model, optimizer, schedule, done, steps, fingerprint)
        on_step(done, steps, float(loss.detach()))
    model.eval()
    return model.to("cpu")


def _save(path: Path, model: Any, optimizer: Any, schedule: Any, step: int, steps: int, fingerprint: str) -> None:
    import torch

    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "step": step,
            "steps": steps,
            "fingerprint": fingerprint,
        },
        tmp,
    )
    tmp.replace(path)

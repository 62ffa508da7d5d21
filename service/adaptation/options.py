"""What a ``docqa adapt`` run learns from and how: its options and their defaults (light to import: the CLI's
parser reads the defaults for its help)."""

from __future__ import annotations

from dataclasses import dataclass

from acl.errors import InvalidArgument
from acl.model import EVERYONE, validate_principal

#: Fewest training queries, and documents in scope, a model is trained on.
MIN_QUERIES = 24
MIN_DOCUMENTS = 3
#: The packaged sentence-transformers model (a 6-layer MiniLM): the cross-encoder starts from its weights.
BASE_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class AdaptOptions:
    """What a run learns from and how (the CLI's options; defaults measured in the README)."""

    principals: frozenset[str] = frozenset({EVERYONE})
    everything: bool = False
    max_queries: int = 1200
    negatives: int = 7
    epochs: int = 1
    layers: int = 3
    max_tokens: int = 128
    depth: int = 10
    groups: int = 4
    learning_rate: float = 3e-5
    seed: int = 36
    candidates: int = 30
    base_model: str = BASE_MODEL
    device: str | None = None
    restart: bool = False
    #: Write the model even when it loses (to measure it; a bench's choice, never the CLI's default).
    force: bool = False
    #: Training steps between checkpoints.
    checkpoint_every: int = 25

    def check(self) -> None:
        for name, low, high in (
            ("max_queries", MIN_QUERIES, 100_000),
            ("negatives", 1, 63),
            ("epochs", 1, 20),
            ("layers", 1, 48),
            ("max_tokens", 32, 512),
            ("depth", 2, 200),
            ("groups", 1, 256),
            ("candidates", 2, 1000),
        ):
            value = getattr(self, name)
            if not low <= value <= high:
                raise InvalidArgument(f"adapt: {name.replace('_', '-')} must be between {low} and {high}, got {value}")
        if not 0 < self.learning_rate < 1:
            raise InvalidArgument(f"adapt: learning-rate must be between 0 and 1, got {self.learning_rate}")
        for principal in self.principals:
            validate_principal(principal)
        if not self.principals and not self.everything:
            raise InvalidArgument("adapt: name at least one principal whose readable documents it learns from")

    def shaping(self) -> dict[str, object]:
        """The options that shape the dataset and the training (a change starts the work again)."""
        keep = (
            "everything",
            "max_queries",
            "negatives",
            "epochs",
            "layers",
            "max_tokens",
            "groups",
            "learning_rate",
            "seed",
            "base_model",
        )
        return {k: getattr(self, k) for k in keep} | {"principals": sorted(self.principals)}

"""Validation once per query text: a document that passed every rule passes them again.

GraphQL validation (the spec's rules plus the depth and alias limits) takes
about 1–2 ms for one of our queries, more than parsing it, and clients send the
same few texts with different variables. Validation depends only on the schema,
the rules and the text, so a text that passed once is let through; a text that
failed is validated again every time (its errors are answers, and nothing is
kept for it). The set is bounded and shared by the requests of one schema.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator

from strawberry.extensions import SchemaExtension

#: Distinct query texts remembered as valid (least recently used forgotten first).
MAX_TEXTS = 256


class ValidQueries:
    """The texts that passed validation under one schema's rules (thread-safe, bounded)."""

    def __init__(self, max_texts: int = MAX_TEXTS) -> None:
        self._texts: OrderedDict[str, None] = OrderedDict()
        self._max = max_texts
        self._lock = threading.Lock()

    def __contains__(self, text: object) -> bool:
        with self._lock:
            if text not in self._texts:
                return False
            self._texts.move_to_end(text)  # type: ignore[arg-type]
            return True

    def add(self, text: str) -> None:
        with self._lock:
            self._texts[text] = None
            self._texts.move_to_end(text)
            while len(self._texts) > self._max:
                self._texts.popitem(last=False)

    def extension(self) -> Callable[[], SchemaExtension]:
        """The schema extension factory that skips validating a text already in the set."""
        valid = self

        class SkipKnownValid(SchemaExtension):
            def on_validate(self) -> Iterator[None]:
                context = self.execution_context
                text = context.query
                known = text is not None and text in valid
                if known:
                    context.pre_execution_errors = []  # strawberry then runs no validation rule
                yield
                if not known and text is not None and context.pre_execution_errors == []:
                    valid.add(text)

        return SkipKnownValid

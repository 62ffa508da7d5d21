"""The rules for a store's retrieval settings: how dense and lexical results are fused, and its link base.

- ``fusion``: ``rrf`` (reciprocal rank fusion of the dense and lexical
  rankings), ``weighted`` (min-max normalised scores, mixed), ``dense`` (vector
  search only; no lexical search runs) or ``lexical`` (BM25 order only, for
  benchmarks).
- ``lexical_weight``: the lexical ranking's share in ``rrf`` and ``weighted``,
  a finite number in [0, 1] (the dense ranking has the rest).
- ``source_base_url``: None, or the ``http(s)`` URL that indexed paths are
  joined to so a remote user gets a link: a host, at most 2,000 characters, no
  user name or password, no query, no fragment, no space, control or invisible
  character, no quote, angle bracket, backtick, backslash, brace, ``|`` or ``^``.

Each is checked here, whichever way it comes (CLI, gRPC, GraphQL, configuration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from acl.errors import InvalidArgument
from service.domain.source_links import base_url_problem

FUSION_METHODS = ("rrf", "weighted", "dense", "lexical")
#: Placeholders until ``bench/quality.py`` measures the defaults.
DEFAULT_FUSION: Final = "rrf"
DEFAULT_LEXICAL_WEIGHT: Final = 0.3
MAX_SOURCE_BASE_URL_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class RetrievalDefaults:
    """What a store whose row holds no retrieval setting (made before they existed) reads as."""

    fusion: str = DEFAULT_FUSION
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT


def validate_fusion(value: object) -> str:
    """``value`` if it names a fusion method."""
    if not isinstance(value, str) or value not in FUSION_METHODS:
        raise InvalidArgument(f"fusion must be one of {', '.join(FUSION_METHODS)}, got {value!r}")
    return value


def validate_lexical_weight(value: object) -> float:
    """``value`` as a float if it is a finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidArgument(f"lexical_weight must be a number between 0 and 1, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise InvalidArgument(f"lexical_weight must be a number between 0 and 1, got {value!r}") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidArgument(f"lexical_weight must be a finite number between 0 and 1, got {value!r}")
    return number


def validate_source_base_url(value: object) -> str | None:
    """``value`` if it is a clean ``http(s)`` base URL; None for None or the empty string (no base URL)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"source_base_url must be a string, got {type(value).__name__}")
    if len(value) > MAX_SOURCE_BASE_URL_CHARS:
        raise InvalidArgument(f"source_base_url is longer than {MAX_SOURCE_BASE_URL_CHARS} characters")
    problem = base_url_problem(value)
    if problem is not None:  # spaces, control and invisible characters, quotes, angle brackets, ...
        raise InvalidArgument(problem)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise InvalidArgument("source_base_url is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not value.lower().startswith(f"{parts.scheme.lower()}://"):
        raise InvalidArgument("source_base_url must be an https:// or http:// URL")
    if not parts.hostname:
        raise InvalidArgument("source_base_url must name a host")
    if parts.username is not None or parts.password is not None:
        raise InvalidArgument("source_base_url must not carry a user name or password")
    if parts.query or "?" in value:
        raise InvalidArgument("source_base_url must not have a query (?...)")
    if parts.fragment or "#" in value:
        raise InvalidArgument("source_base_url must not have a fragment (#...)")
    return value

"""The one rule for store ids, shared by the indexer and the service.

A store id names index files and OpenSearch indices, so it is kept to a safe
alphabet, checked whole: ``fullmatch``, never ``match`` with ``$`` (which
lets a trailing newline through).
"""

from __future__ import annotations

import re

from acl.errors import InvalidArgument

_STORE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


def validate_store_id(store_id: str) -> str:
    """Return ``store_id`` if it is 1-63 lower-case letters, digits, '-' or '_', not starting with '-' or '_'."""
    if not isinstance(store_id, str) or _STORE_ID.fullmatch(store_id) is None:
        raise InvalidArgument(
            f"invalid store id {store_id!r}: use 1-63 lower-case letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return store_id

"""Splitting one folder's files among N indexing workers (``docqa index --shard i/N``).

A file belongs to shard ``sha256(document id) mod N``: a stable hash of its
path relative to the folder (its document id, already in Unicode NFC), the same
in every process, on every machine and in every release, unlike Python's
``hash``. Every document id belongs to exactly one shard of any N, so the
shards of one split together see every file exactly once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from acl.errors import InvalidArgument

#: More workers than this is a typo, not a cluster.
MAX_SHARDS = 10_000

_FORM = re.compile(r"(\d+)/(\d+)")


def shard_of(document_id: str, count: int) -> int:
    """The shard of ``count`` that ``document_id`` belongs to."""
    digest = hashlib.sha256(document_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based): the files this worker indexes, and the only documents it removes."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise InvalidArgument(f"the number of shards must be between 1 and {MAX_SHARDS}")
        if not 0 <= self.index < self.count:
            raise InvalidArgument(f"there is no shard {self.index}: shards of {self.count} are 0 to {self.count - 1}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/N"`` → ``Shard(i, N)``; InvalidArgument for anything else (``x``, ``3/2``, ``1/0``, ``-1/2``)."""
        match = _FORM.fullmatch(text.strip())
        if match is None:
            raise InvalidArgument("expected I/N, shard I of N counted from 0 (e.g. 0/4)")
        index, count = (int(group) for group in match.groups())
        return cls(index, count)

    def owns(self, document_id: str) -> bool:
        """Whether ``document_id`` is this shard's."""
        return self.count == 1 or shard_of(document_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


#: One worker doing everything.
WHOLE = Shard(0, 1)

"""The indexer's errors: an index that cannot be reached, a source document that cannot be read.

They derive from ``acl.errors``'s hierarchy, and ``service.api.errors``'s one table maps them.
"""

from acl.errors import DocQAError, Unavailable


class IndexUnavailable(Unavailable):
    """The vector index cannot be reached."""


class LoadError(DocQAError):
    """A source document could not be read (corrupt, encrypted, unreadable)."""


class UnsafePath(LoadError):
    """A path the folder scan refuses to read: a link, a special file, or outside its folder."""

"""The generator port's error (``acl.errors``'s hierarchy; mapped by ``service.api.errors``'s one table)."""

from acl.errors import Unavailable


class GeneratorUnavailable(Unavailable):
    """The LLM cannot be reached or keeps failing."""

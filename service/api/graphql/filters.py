"""The GraphQL input of metadata filters, ``QueryFilter``, and its conversion to the domain's ``MetadataFilter``.

The input type names every condition there is, so an unknown key is a GraphQL validation error; malformed
values (an empty prefix, a bad date, from after to, a bad metadata key) are ``INVALID_ARGUMENT`` from the domain.
"""

from __future__ import annotations

import strawberry

from service.domain.filters import MetadataFilter

_DATE = "ISO-8601: 2024-05-01 (midnight UTC) or a date and time with an offset, 2024-05-01T12:00:00Z; inclusive."


@strawberry.input(description="A custom metadata key (set by the indexing API) and the values it may have.")
class MetadataCondition:
    key: str = strawberry.field(description="[a-z][a-z0-9_]{0,62}")
    values: list[str] = strawberry.field(description="1 to 64 values; the document's value is one of them.")


@strawberry.input(
    description="Metadata conditions, all of which must hold; ANDed with the caller's access inside the search "
    "(never widening it). An omitted field matches every document."
)
class QueryFilter:
    path_prefix: str | None = strawberry.field(default=None, description="The document id starts with this.")
    path_glob: str | None = strawberry.field(
        default=None, description="The whole document id matches: '*' any run of characters ('/' too), '?' one."
    )
    content_types: list[str] | None = strawberry.field(
        default=None, description="The media type is one of these (text/html, application/pdf, ...)."
    )
    title_contains: str | None = strawberry.field(default=None, description="The title holds this, ignoring case.")
    modified_from: str | None = strawberry.field(default=None, description=f"Modified at or after. {_DATE}")
    modified_to: str | None = strawberry.field(default=None, description=f"Modified at or before. {_DATE}")
    indexed_from: str | None = strawberry.field(default=None, description=f"Indexed at or after. {_DATE}")
    indexed_to: str | None = strawberry.field(default=None, description=f"Indexed at or before. {_DATE}")
    metadata: list[MetadataCondition] | None = strawberry.field(
        default=None, description="Custom metadata keys, each with the values it may have."
    )


def metadata_filter(value: QueryFilter | None) -> MetadataFilter | None:
    """The domain filter of a ``filter`` argument (None when absent or empty); InvalidArgument when malformed."""
    if value is None:
        return None
    filters = MetadataFilter.parse(
        path_prefix=value.path_prefix,
        path_glob=value.path_glob,
        content_types=tuple(value.content_types or ()),
        title_contains=value.title_contains,
        modified_from=value.modified_from,
        modified_to=value.modified_to,
        indexed_from=value.indexed_from,
        indexed_to=value.indexed_to,
        metadata=[(c.key, tuple(c.values)) for c in value.metadata or ()],
    )
    return None if filters.is_empty else filters

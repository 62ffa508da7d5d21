"""The metadata filter options of ``docqa ask`` and ``docqa search``, and the filter they make."""

from __future__ import annotations

import argparse

from acl.errors import InvalidArgument
from service.domain.filters import MetadataFilter


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--path-prefix``, ``--path-glob``, ``--content-type``, ``--title-contains``, the date bounds and
    ``--meta`` to a query command."""
    group = parser.add_argument_group(
        "metadata filters", "all given must hold; ANDed with the user's access inside the search (never widening it)"
    )
    group.add_argument("--path-prefix", metavar="TEXT", help="the document id (its path) starts with TEXT")
    group.add_argument(
        "--path-glob", metavar="GLOB", help="the whole document id matches GLOB: * any run of characters (/ too), ? one"
    )
    group.add_argument(
        "--content-type",
        action="append",
        default=[],
        metavar="TYPE",
        help="the media type is TYPE (text/html, application/pdf, ...); repeat for any of several",
    )
    group.add_argument("--title-contains", metavar="TEXT", help="the title holds TEXT, ignoring case")
    for name, what in (("modified", "modified"), ("indexed", "indexed (its chunks written)")):
        group.add_argument(
            f"--{name}-from",
            metavar="DATE",
            help=f"{what} at or after DATE (ISO-8601: 2024-05-01 or 2024-05-01T12:00Z)",
        )
        group.add_argument(f"--{name}-to", metavar="DATE", help=f"{what} at or before DATE (inclusive)")
    group.add_argument(
        "--meta",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="custom metadata KEY (set by the indexing API) is VALUE; repeat a key for any of several values",
    )


def cli_filter(args: argparse.Namespace) -> MetadataFilter | None:
    """The filter the options ask for (None when none is given); InvalidArgument naming the option otherwise."""
    metadata: dict[str, list[str]] = {}
    for item in args.meta:
        key, sep, value = item.partition("=")
        if not sep:
            raise InvalidArgument(f"--meta {item!r}: give KEY=VALUE")
        metadata.setdefault(key, []).append(value)
    filters = MetadataFilter.parse(
        path_prefix=args.path_prefix,
        path_glob=args.path_glob,
        content_types=tuple(args.content_type),
        title_contains=args.title_contains,
        modified_from=args.modified_from,
        modified_to=args.modified_to,
        indexed_from=args.indexed_from,
        indexed_to=args.indexed_to,
        metadata=metadata,
    )
    return None if filters.is_empty else filters

"""Reference pages of the documentation site, generated from their one source.

``docs/configuration.md`` from the settings model (``service.config``), ``docs/graphql.md`` from
``graphql/schema.graphql``, ``docs/grpc.md`` from ``proto/docqa/v1`` and ``docs/cli.md`` from the CLI's
parser (``service.api.cli.parser``). Each page keeps its hand-written text
and holds the generated part between two markers; ``python -m service.reference`` rewrites those parts, and
``tests/unit/test_reference_pages.py`` fails when a page differs from what its source generates.
"""

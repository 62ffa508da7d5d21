"""Entry points: the error table, gRPC, GraphQL over HTTP, and the CLI."""

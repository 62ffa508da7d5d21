"""The GraphQL schema (strawberry)."""

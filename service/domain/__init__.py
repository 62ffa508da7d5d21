"""Stores, documents, queries, limits and the relevancy threshold: every rule once, no adapter."""

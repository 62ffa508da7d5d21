"""Loaders, chunker, embedder, the index port and its adapters, the ingest pipeline."""

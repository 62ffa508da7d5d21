"""The embedded index adapter: SQLite rows, an in-memory matrix and a filtered HNSW graph."""

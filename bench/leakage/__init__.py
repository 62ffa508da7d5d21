"""The leakage benchmark: does a RAG service show anybody what they may not read? (see README.md here)."""

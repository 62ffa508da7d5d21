"""The reranker port and its adapters (offline, watsonx.ai, a local cross-encoder): a query's candidates, best first."""

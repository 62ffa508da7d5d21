"""The OpenSearch index adapter: mapping, requests, responses and the client."""

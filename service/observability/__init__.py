"""Prometheus metrics of the servers and the metered wrappers of the index and the access check."""

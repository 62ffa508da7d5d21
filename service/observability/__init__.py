"""Prometheus metrics of the servers (request outcomes and latencies; nothing about what access hid)."""

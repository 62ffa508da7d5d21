"""The soak test: DocQA under mixed load while its dependencies fail (``python -m bench.soak``)."""

"""Documents into the index: the safe folder scan, the ACL manifest, the ingest pipeline."""

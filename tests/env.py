"""A test's own DocQA environment: none of the developer's ``DOCQA_*`` variables leak into it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def clear_docqa_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path | None = None) -> None:
    """Remove every ``DOCQA_*`` variable for this test; then point ``DOCQA_DATA_DIR`` at ``data_dir`` if given."""
    for key in [k for k in os.environ if k.startswith("DOCQA_")]:
        monkeypatch.delenv(key)
    if data_dir is not None:
        monkeypatch.setenv("DOCQA_DATA_DIR", str(data_dir))


#: A made-up AWS key pair (the shape of AWS's documentation examples); nothing here is a real credential.
AWS_ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def isolate_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, credentials: bool = True) -> None:
    """botocore's default chain sees only what the test sets: no ``AWS_*`` variable, file or instance role of the
    machine's; with ``credentials``, the example key pair above in the environment."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask an instance-metadata endpoint
    if credentials:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)

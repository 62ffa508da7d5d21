"""The base of every configuration section, the default data directory, and the finite-number check."""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "docqa"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def finite(value: float) -> float:
    """``value`` if it is a finite number (no NaN, no infinity), for a section's field validators."""
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value

"""Runs `Ingestor.index_folder` on the real embedded index and SQLite catalog, slowly,
so a test can SIGKILL it at any point. Usage: kill_driver.py DATA_DIR FOLDER [SHARD (I/N)]"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from indexer.ingest import pipeline
from indexer.ingest.shards import WHOLE, Shard
from service.bootstrap import build_app
from service.config import load_settings
from tests.fakes_service import FakeEmbedder


class SlowEmbedder(FakeEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        time.sleep(float(os.environ.get("KILL_DRIVER_DELAY_S", "0.02")))
        return super().embed_documents(texts)


def main() -> None:
    data_dir, folder = Path(sys.argv[1]), Path(sys.argv[2])
    shard = Shard.parse(sys.argv[3]) if len(sys.argv) > 3 else WHOLE
    pipeline.EMBED_BATCH_CHUNKS = 1
    embedder = SlowEmbedder(model_name="fake")
    app = build_app(load_settings(None, data_dir=data_dir), embedder_factory=lambda _: embedder)
    report = app.ingestor("kill").index_folder(folder, shard=shard)
    print(f"indexed={len(report.indexed)} unchanged={len(report.unchanged)}")
    app.close()


if __name__ == "__main__":
    main()

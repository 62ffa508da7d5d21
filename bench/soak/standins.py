"""The outside services the soak can stand in for, run in the soak's own process, and the replicas' settings
that point at them.

- ``--llm watsonx-standin``: a watsonx.ai (Cloud Pak for Data flavour) over TLS on 127.0.0.1
  (``tests/integration/watsonx_standin.py``) that the replicas' real ``ibm-watsonx-ai`` SDK talks to; the
  replicas answer with it (``generator.backend: watsonx``) instead of extractively.
- ``--index opensearch-fake``: OpenSearch with the k-NN plugin over HTTP (``tests/fakes_opensearch``); the
  replicas and every ``docqa index`` run keep the stores' chunks there (``index.backend: opensearch``).

Timeouts are shorter than the defaults so that a hung dependency costs seconds, not minutes, of the run; the
retries are the defaults. The faults that fail these stand-ins are in ``bench/soak/dependency_faults.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.fakes_opensearch import FakeOpenSearch
    from tests.integration.watsonx_standin import StandIn

LLMS = ("extractive", "watsonx-standin")
INDEXES = ("embedded", "opensearch-fake")

USER, API_KEY = "svc-docqa-soak", "wx-soak-key-5d1e9b"
PROJECT = "3f4c0a9e-5b7d-4e21-8a66-0c9d2e7f1b35"
MODEL = "ibm/granite-3-8b-instruct"
#: The first words of every answer the stand-in model writes: how the soak tells a model's answer from the
#: sources-only reply a replica gives when the model fails ("No answer was generated; ...").
MODEL_MARK = "Stand-in model answer:"
#: Long enough (40 tokens) that a stream cut after its first tokens is cut mid-answer.
REPLY = (
    f"{MODEL_MARK} the sources below were read for this question, and the passage that answers it is the first"
    " one [1]; the others add context on the same subject and say nothing that contradicts it."
)
#: Seconds one watsonx.ai network operation may take (the default is 60).
WATSONX_TIMEOUT_S = 3.0
#: Seconds one OpenSearch search or count may take (default 10) and any other request but a write (default 10).
OPENSEARCH_SEARCH_TIMEOUT_S = 2.0
OPENSEARCH_TIMEOUT_S = 5.0


@dataclass
class StandIns:
    """The stand-ins one soak runs: ``llm`` one of LLMS, ``index`` one of INDEXES."""

    work: Path
    llm: str = "extractive"
    index: str = "embedded"
    watsonx: StandIn | None = None
    opensearch: FakeOpenSearch | None = None

    def __post_init__(self) -> None:
        if self.llm not in LLMS or self.index not in INDEXES:
            raise ValueError(f"llm must be one of {LLMS} and index one of {INDEXES}")

    def start(self) -> None:
        if self.llm == "watsonx-standin":
            from tests.integration.watsonx_standin import StandIn, make_certificate

            self._certificate = make_certificate(self.work / "watsonx-tls")
            standin = StandIn(*self._certificate, models={MODEL: 8192})
            standin.users = {USER: API_KEY}
            standin.projects = {PROJECT}
            standin.reply = REPLY
            standin.record = False
            self.watsonx = standin.start()
        if self.index == "opensearch-fake":
            from tests.fakes_opensearch import FakeOpenSearch

            self.opensearch = FakeOpenSearch.start(record=False)

    def env(self) -> dict[str, str]:
        """The replicas' (and ``docqa index``'s) settings for the stand-ins that run."""
        env: dict[str, str] = {}
        if self.watsonx is not None:
            prefix = "DOCQA_GENERATOR__"
            env |= {
                f"{prefix}BACKEND": "watsonx",
                f"{prefix}WATSONX__URL": self.watsonx.url,
                f"{prefix}WATSONX__USERNAME": USER,
                f"{prefix}WATSONX__API_KEY": API_KEY,
                f"{prefix}WATSONX__PROJECT_ID": PROJECT,
                f"{prefix}WATSONX__MODEL_ID": MODEL,
                f"{prefix}WATSONX__CA_BUNDLE": str(self._certificate[0]),
                f"{prefix}WATSONX__TIMEOUT_S": str(WATSONX_TIMEOUT_S),
            }
        if self.opensearch is not None:
            prefix = "DOCQA_INDEX__"
            env |= {
                f"{prefix}BACKEND": "opensearch",
                f"{prefix}OPENSEARCH__URL": self.opensearch.url,
                f"{prefix}OPENSEARCH__SEARCH_TIMEOUT_S": str(OPENSEARCH_SEARCH_TIMEOUT_S),
                f"{prefix}OPENSEARCH__TIMEOUT_S": str(OPENSEARCH_TIMEOUT_S),
            }
        return env

    def describe(self) -> str:
        """The language model and the index in words, for the report."""
        llm = f"watsonx.ai stand-in at {self.watsonx.url}" if self.watsonx is not None else "extractive answers"
        index = f"OpenSearch k-NN fake at {self.opensearch.url}" if self.opensearch is not None else "embedded index"
        return f"{llm}; {index}"

    def close(self) -> None:
        if self.watsonx is not None:
            self.watsonx.stop()
        if self.opensearch is not None:
            self.opensearch.close()

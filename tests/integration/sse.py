"""Reading a GraphQL operation's server-sent events (``POST /graphql`` with ``Accept: text/event-stream``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Stream:
    """What one SSE response carried: every event's name in order, and the decoded ``next`` payloads."""

    kinds: list[str]
    payloads: list[dict[str, Any]]


def read_events(url: str, headers: dict[str, str], query: str, variables: dict[str, Any]) -> Stream:
    """POST ``query`` to ``url`` (the /graphql endpoint) as SSE; the response must be a 200 event stream."""
    kinds: list[str] = []
    payloads: list[dict[str, Any]] = []
    with httpx.stream(
        "POST",
        url,
        json={"query": query, "variables": variables},
        headers={**headers, "accept": "text/event-stream"},
        timeout=30,
    ) as reply:
        assert reply.status_code == 200, reply.read()
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("event: "):
                kinds.append(line.removeprefix("event: "))
            elif line.startswith("data: ") and kinds and kinds[-1] == "next":
                payloads.append(json.loads(line.removeprefix("data: ")))
    return Stream(kinds, payloads)

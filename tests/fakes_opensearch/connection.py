"""An ``opensearch-py`` connection that calls a ``FakeOpenSearch`` in-process, for tests that may not open sockets."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from opensearchpy import Connection

if TYPE_CHECKING:
    from tests.fakes_opensearch.opensearch_knn import FakeOpenSearch


def in_process_connection(fake: FakeOpenSearch) -> type[Connection]:
    """A connection class for ``OpenSearch(connection_class=...)``: the client's transport, serializer and
    error mapping are real; only the socket is replaced by a call to ``fake.handle``.
    """

    class InProcessConnection(Connection):
        def __init__(self, *args: Any, http_auth: Any = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if isinstance(http_auth, tuple | list):
                token = base64.b64encode(":".join(http_auth).encode()).decode()
                self.headers["authorization"] = f"Basic {token}"

        def perform_request(
            self,
            method: str,
            url: str,
            params: Any = None,
            body: Any = None,
            timeout: Any = None,
            ignore: Any = (),
            headers: Any = None,
        ) -> Any:
            target = url + ("?" + urlencode(params) if params else "")
            raw = body if isinstance(body, bytes) else (body or "").encode()
            sent = {key.lower(): value for key, value in {**self.headers, **(headers or {})}.items()}
            status, answer = fake.handle(method, target, sent, raw)
            if answer is None:
                text, kind = "", "text/plain"
            elif isinstance(answer, str):
                text, kind = answer, "text/plain"
            else:
                text, kind = json.dumps(answer), "application/json"
            if not 200 <= status < 300 and status not in (ignore or ()):
                self._raise_error(status, text, kind)
            return status, {"content-type": kind}, text

        def close(self) -> None:
            """Nothing to close: there is no socket."""

    return InProcessConnection

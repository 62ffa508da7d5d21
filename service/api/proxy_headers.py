"""Who the client is, when a reverse proxy stands in front of the HTTP port (``server.forwarded_allow_ips``).

uvicorn reads ``X-Forwarded-For`` and ``X-Forwarded-Proto`` by default, trusting them from 127.0.0.1. Then
anything on the host, or a local proxy passing the header on, names any client address it likes, and a
caller who names a fresh one per request leaves the per-address rate limit. So the headers are read only
from the proxies configured, and from nobody by default: each caller is then its connection's address.
"""

from __future__ import annotations

from typing import Any


def proxy_options(trusted: tuple[str, ...]) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.Config``: proxy headers read from the ``trusted`` peers only (IPs,
    networks or ``*``), and not at all when there are none."""
    if not trusted:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": list(trusted)}

"""Proxy headers are trusted only from configured proxies (``server.forwarded_allow_ips``, empty by default).

uvicorn on its own trusts X-Forwarded-For from 127.0.0.1, so a caller on the host (or behind a local proxy
that passes the header on) could name a new client address on each request and never meet the per-address
rate limit of GraphQL. By default the header is ignored; with the loopback configured as a proxy, the
address it names is the caller's, and the limit holds per that address.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from acl.errors import ConfigurationError
from service.api.proxy_headers import proxy_options
from service.config import ServerConfig, load_settings
from tests.env import clear_docqa_env
from tests.integration.server_world import build_world, on_servers

pytestmark = pytest.mark.integration

#: Three anonymous calls per address, then (nearly) nothing: 1 call per 1,000 s.
LIMITS = {"rate": {"graphql": {"requests_per_second": 0.001, "burst": 3}}}
QUERY = {"query": "{ __typename }"}


@pytest.fixture
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    server: Mapping[str, object] = getattr(request, "param", {})
    app = build_world(tmp_path, limits=LIMITS, server=server)
    with on_servers(app, with_grpc=False) as running:
        yield running.graphql_url
    app.close()


def statuses(url: str, forwarded_for: list[str | None]) -> list[int]:
    out = []
    for address in forwarded_for:
        headers = {} if address is None else {"x-forwarded-for": address}
        out.append(httpx.post(url, json=QUERY, headers=headers, timeout=10).status_code)
    return out


def test_by_default_a_rotating_forwarded_for_does_not_escape_the_limit(served: str) -> None:
    codes = statuses(served, [f"203.0.113.{i}" for i in range(1, 7)])
    assert codes[:3] != [429] * 3 and codes[3:] == [429, 429, 429], codes


@pytest.mark.parametrize("served", [{"forwarded_allow_ips": ["127.0.0.1"]}], indirect=True)
def test_from_a_configured_proxy_the_forwarded_address_is_the_callers(served: str) -> None:
    rotating = statuses(served, [f"203.0.113.{i}" for i in range(1, 9)])
    assert 429 not in rotating, rotating  # a different client each time, as the proxy says
    repeated = statuses(served, ["198.51.100.7"] * 4)
    assert repeated[-1] == 429 and 429 not in repeated[:3], repeated  # one client: its own bucket
    assert 429 not in statuses(served, [None] * 3)  # the proxy's own calls: 127.0.0.1's bucket, still full


@pytest.mark.parametrize("served", [{"forwarded_allow_ips": ["10.0.0.0/8"]}], indirect=True)
def test_a_peer_outside_the_configured_proxies_is_not_believed(served: str) -> None:
    codes = statuses(served, [f"203.0.113.{i}" for i in range(1, 6)])
    assert codes[3:] == [429, 429], codes


def test_the_setting_is_empty_by_default_and_validated() -> None:
    assert ServerConfig().forwarded_allow_ips == ()
    assert proxy_options(()) == {"proxy_headers": False}
    assert proxy_options(("10.0.0.1",)) == {"proxy_headers": True, "forwarded_allow_ips": ["10.0.0.1"]}
    parsed = ServerConfig(forwarded_allow_ips="10.0.0.1, fd00::/8 ,*")
    assert parsed.forwarded_allow_ips == ("10.0.0.1", "fd00::/8", "*")


@pytest.mark.parametrize("bad", ["proxy.example", "10.0.0.0/33", "127.0.0.1:8080"])
def test_a_bad_proxy_address_stops_start_up_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    clear_docqa_env(monkeypatch)
    config = tmp_path / "docqa.yaml"
    config.write_text(f"data_dir: {tmp_path}\nserver:\n  forwarded_allow_ips: [{bad!r}]\n")
    with pytest.raises(ConfigurationError) as info:
        load_settings(config)
    assert "forwarded_allow_ips" in str(info.value) and bad in str(info.value)


def test_the_environment_sets_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clear_docqa_env(monkeypatch)
    monkeypatch.setenv("DOCQA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DOCQA_SERVER__FORWARDED_ALLOW_IPS", '["10.1.2.3", "192.168.0.0/16"]')
    assert load_settings(None).server.forwarded_allow_ips == ("10.1.2.3", "192.168.0.0/16")


def test_the_chart_passes_the_setting_to_the_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``config.server.forwarded_allow_ips`` in the chart's values reaches the servers' configuration file."""
    from tests.integration.helm_render import MINIMAL, assert_valid, merged, objects, render

    values = merged(MINIMAL, {"config": {"server": {"forwarded_allow_ips": ["10.0.0.0/8"]}}})
    rendered = objects(render(values))
    assert_valid(rendered)
    config = tmp_path / "docqa.yaml"
    config.write_text(rendered["ConfigMap/docqa"]["data"]["docqa.yaml"])
    clear_docqa_env(monkeypatch)
    monkeypatch.setenv("DOCQA_DATA_DIR", str(tmp_path))
    settings = load_settings(config, data_dir=tmp_path)
    assert settings.server.forwarded_allow_ips == ("10.0.0.0/8",)
    assert settings.server.host == "0.0.0.0"  # the chart's own server settings kept beside it

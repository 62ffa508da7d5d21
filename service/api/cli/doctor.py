"""``docqa doctor``: checks what the configuration promises, one line per check, never a secret."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acl.errors import ConfigurationError, DocQAError
from service.api.errors import public_message


def cmd_doctor(args: argparse.Namespace, app: Any) -> int:
    """Check configuration and connectivity; print one line per check; never print a secret."""
    from sqlalchemy.engine import make_url

    settings = app.settings
    failed = 0

    def line(check: str, ok: bool, detail: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(f"{check:<24} {'ok' if ok else 'FAIL':<5} {detail}")

    # Before anything opens (and so creates) a file under the data directory.
    for check, detail in _doctor_private_files(settings.data_dir):
        print(f"{check:<24} {'WARN':<5} {detail}")

    stores: list[Any] = []
    database = make_url(settings.database_url).render_as_string(hide_password=True)
    try:
        stores = app.repository.list_stores()
        line("settings database", True, f"{database} ({len(stores)} store(s))")
    except DocQAError as exc:
        line("settings database", False, f"{database}: {public_message(exc)}")
    except Exception as exc:  # any driver error: the database is what is wrong
        line("settings database", False, f"{database}: cannot open ({type(exc).__name__})")

    from service.security.tokens import check as check_auth

    for name, ok, detail in check_auth(settings):
        line(name, ok, detail)
    _doctor_index(app, stores, line)
    _doctor_embedding(settings, line)
    from service.generation.watsonx import check as check_generator

    for name, ok, detail in check_generator(settings):
        line(name, ok, detail)
    from service.ranking.build import check as check_reranker

    for name, ok, detail in check_reranker(settings):
        line(name, ok, detail)
    _doctor_directory(app, line)
    from service.security.shared_rate_limit import check as check_rate_limits

    for name, ok, detail in check_rate_limits(settings.limits.rate):
        line(name, ok, detail)
    return 0 if not failed else 1


def _doctor_directory(app: Any, line: Callable[[str, bool, str], None]) -> None:
    """The outside group directory's line (``directory.ldap``): bound and both base DNs found, or what is wrong."""
    ldap = app.settings.directory.ldap
    if ldap is None:
        line("group directory", True, "DocQA's own tables (no directory.ldap)")
        return
    try:
        problems = app.directory_problems()
    except ConfigurationError as exc:  # an unreadable bind_password_file
        problems = [public_message(exc)]
    if problems:
        for problem in problems:
            line("group directory", False, problem)
    else:
        line("group directory", True, f"LDAP {ldap.url} (users {ldap.user_base_dn}, groups {ldap.group_base_dn})")


def _doctor_embedding(settings: Any, line: Callable[[str, bool, str], None]) -> None:
    """Where ``embedding.quantize`` asks for bf16: whether the encoder will run in it, or in fp32 and why."""
    if settings.embedding.quantize != "bf16":
        return
    from indexer.embedder_openvino import bf16_unavailable

    cause = bf16_unavailable()
    detail = "bf16 through OpenVINO" if cause is None else f"fp32 ONNX Runtime: bf16 unavailable, {cause}"
    line("embedding precision", True, detail)


def _doctor_private_files(data_dir: Path) -> list[tuple[str, str]]:
    """Warnings for entries under the data directory that others than its owner may read or write."""
    from indexer.private_files import wider_than_private

    if not data_dir.is_dir():
        return []
    wide = wider_than_private(data_dir)
    if not wide:
        print(f"{'data directory':<24} {'ok':<5} {data_dir}: private (files 0600, folders 0700)")
        return []
    shown = [(str(path), mode) for path, mode in wide[:20]]
    more = f" (and {len(wide) - 20} more)" if len(wide) > 20 else ""
    return [
        (
            "data directory",
            f"{len(wide)} entr{'y' if len(wide) == 1 else 'ies'} under {data_dir} readable by others "
            f"than the owner; run: chmod -R go-rwx {data_dir}{more}",
        ),
        *(("  private files", f"{path} is {mode:04o}") for path, mode in shown),
    ]


def _doctor_index(app: Any, stores: list[Any], line: Callable[[str, bool, str], None]) -> None:
    """The index checks of ``docqa doctor``."""
    from acl.errors import NotFound

    settings = app.settings
    backend = settings.index.backend
    if backend != "opensearch":
        line("index backend", True, f"{backend} (under {settings.index_dir})")
        return
    config = settings.index.opensearch
    if config.aws is not None:
        auth = f"aws sigv4 ({config.aws.service}, {config.aws.region})"
    else:
        auth = "api key" if config.api_key else "username/password" if config.username else "none"
    url = config.url or ""
    tls = f", TLS verify {'on' if config.verify else 'OFF'}" if url.startswith("https:") else ""
    pool = settings.opensearch_pool_maxsize
    line("index backend", True, f"opensearch at {url} (auth: {auth}{tls}, engine {config.engine}, pool {pool})")
    if config.aws is not None and config.aws.service == "aoss":
        line("opensearch serverless", True, "answers no GET / nor _cat/plugins: version and k-NN plugin not checked")
    elif not _doctor_server(app, line):
        return
    for store in stores:
        check = f"store {store.id}"
        try:
            facts, problems = app.index.check_store(store.id)
        except NotFound:
            line(check, False, f"no index {app.index.index_name(store.id)} (re-index the store)")
            continue
        except DocQAError as exc:
            line(check, False, public_message(exc))
            continue
        shape = f"index {facts.name}: dimension {facts.dimension}, {facts.engine}, {facts.space_type}"
        line(check, not problems, shape if not problems else f"{shape}; " + "; ".join(problems))


def _doctor_server(app: Any, line: Callable[[str, bool, str], None]) -> bool:
    """The OpenSearch server's lines of ``docqa doctor``, as ``docqa serve`` checks it at start-up; False when
    it cannot be reached."""
    from indexer.index.opensearch.client import API_KEY_HINT, server_problems
    from indexer.index.opensearch.versions import API_KEY_MINIMUM_VERSION, dotted, minimum_version

    config = app.settings.index.opensearch
    api_key = config.api_key is not None
    try:
        server = app.index.server()
    except ConfigurationError as exc:  # credentials refused
        line("opensearch reachable", False, public_message(exc) + (f". {API_KEY_HINT}" if api_key else ""))
        return False
    except DocQAError as exc:
        line("opensearch reachable", False, public_message(exc))
        return False
    problems = server_problems(server, engine=config.engine, api_key_configured=api_key)
    minimum = dotted(minimum_version(config.engine))
    line("opensearch reachable", True, f"{server.distribution} {server.version}")
    version = problems.get("distribution") or problems.get("version")
    line("opensearch version", version is None, version or f"{minimum} or later: supported (engine {config.engine})")
    line("k-NN plugin", server.knn_plugin, "installed" if server.knn_plugin else "missing: vector search cannot work")
    if api_key:
        refused = problems.get("api key")
        line("api key", refused is None, refused or f"accepted from {dotted(API_KEY_MINIMUM_VERSION)} on: supported")
    return True

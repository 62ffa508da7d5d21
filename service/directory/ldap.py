"""Users' groups from an LDAP server or Active Directory (``directory.ldap``), read with ldap3.

A user ``user:alice`` is the one entry under ``user_base_dn`` that ``user_filter`` finds with ``{user}``
replaced by ``alice``; its groups are the entries under ``group_base_dn`` matching ``group_filter`` whose
``member_attribute`` holds its DN, named ``group:<group_prefix><cn>``. A group's own groups are found the same
way from the group's entry, so nested groups come out of the expansion of a caller's principals one level at a
time (``acl.directory.expand_principals``, which stops at cycles); on Active Directory (``active_directory``)
one search with the in-chain matching rule returns every level at once. Every value put into a filter is
escaped (RFC 4515: ``*``, ``(``, ``)``, ``\\``, NUL), so a user id cannot widen a search.

A server that cannot be reached, refuses the bind or fails a search raises ``Unavailable``: the caller is
refused, never given the groups of an empty answer. Searches are paged (``page_size``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import ssl
import threading
import warnings
from typing import Any

with warnings.catch_warnings():
    # ldap3 2.9.1 imports pyasn1's old names (tagMap, typeMap), which pyasn1 >= 0.6.1 warns about on import.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="ldap3")
    warnings.filterwarnings(
        "ignore", message=r".* is deprecated\. Please use .* instead\.", category=DeprecationWarning
    )
    import ldap3
    from ldap3.core.exceptions import LDAPBindError, LDAPException, LDAPNoSuchObjectResult
    from ldap3.utils.conv import escape_filter_chars

from acl.errors import ConfigurationError, InvalidArgument, Unavailable
from acl.model import validate_principal
from service.config import LdapConfig

log = logging.getLogger("docqa.directory")

#: Active Directory's LDAP_MATCHING_RULE_IN_CHAIN: membership through any number of nested groups.
IN_CHAIN = "1.2.840.113556.1.4.1941"
UNREACHABLE = "the group directory (LDAP) cannot be reached; try again later"


def bind_password(config: LdapConfig) -> str | None:
    """The bind password: ``bind_password`` (environment) or the first line of ``bind_password_file``."""
    if config.bind_password is not None:
        return config.bind_password.get_secret_value()
    if config.bind_password_file is not None:
        try:
            return config.bind_password_file.read_text(encoding="utf-8").splitlines()[0]
        except (OSError, IndexError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"directory.ldap.bind_password_file: cannot read a password from {config.bind_password_file}"
            ) from exc
    return None


def _escaped(template: str, key: str, value: str) -> str:
    return template.replace("{" + key + "}", escape_filter_chars(value))


class LdapGroupSource:
    """``acl.directory.GroupSource`` over one LDAP server (one connection, reopened after a failure)."""

    name = "ldap"

    def __init__(self, config: LdapConfig) -> None:
        self._config = config
        self._password = bind_password(config)
        self._lock = threading.Lock()
        self._connection: ldap3.Connection | None = None

    # the port ------------------------------------------------------------------------------------
    def parents(self, principal: str) -> frozenset[str]:
        kind, _, ident = principal.partition(":")
        config = self._config
        if kind == "user":
            dn = self._one_dn(config.user_base_dn, _escaped(config.user_filter, "user", ident))
        elif kind == "group" and ident.startswith(config.group_prefix):
            name = ident[len(config.group_prefix) :]
            wanted = _escaped(config.group_name_filter, "group", name)
            dn = self._one_dn(config.group_base_dn, f"(&{config.group_filter}{wanted})")
        else:
            return frozenset()
        if dn is None:
            return frozenset()
        rule = f":{IN_CHAIN}:" if config.active_directory and kind == "user" else ""
        holds = f"({config.member_attribute}{rule}={escape_filter_chars(dn)})"
        entries = self._search(config.group_base_dn, f"(&{config.group_filter}{holds})", [config.name_attribute])
        return frozenset(g for g in (self._group_name(e) for e in entries) if g is not None)

    def check(self) -> list[str]:
        """What stops this directory from answering (``docqa doctor``, ``/readyz``): each problem names its
        setting; empty when a bind and a search of both base DNs succeed."""
        try:
            with self._lock:
                self._connect()
        except (LDAPException, OSError) as exc:
            with self._lock:
                self._drop()
            setting = "bind_dn" if isinstance(exc, LDAPBindError) else "url"
            return [f"directory.ldap.{setting} ({getattr(self._config, setting)}): {exc}"]
        problems: list[str] = []
        for key, base in (("user_base_dn", self._config.user_base_dn), ("group_base_dn", self._config.group_base_dn)):
            try:
                found = self._search(base, "(objectClass=*)", [], scope=ldap3.BASE)
            except Unavailable as exc:
                found, problems = [], [*problems, f"directory.ldap.{key} ({base}): {exc.message}"]
            if not found and not problems:
                problems.append(f"directory.ldap.{key} ({base}): no such entry on the server")
        return problems

    # LDAP ----------------------------------------------------------------------------------------
    def _group_name(self, entry: dict[str, Any]) -> str | None:
        values = entry.get("attributes", {}).get(self._config.name_attribute)
        name = values[0] if isinstance(values, list) and values else values
        if not isinstance(name, str) or not name:
            return None
        try:
            return validate_principal(f"group:{self._config.group_prefix}{name}")
        except InvalidArgument:
            log.warning("LDAP group %r has a name DocQA cannot use as a principal; it is skipped", name)
            return None

    def _one_dn(self, base: str, search_filter: str) -> str | None:
        entries = self._search(base, search_filter, [])
        if len(entries) > 1:
            # Two entries for one id: which one is meant cannot be told, so neither's groups are given.
            log.warning("LDAP search %s under %s found %d entries; none is used", search_filter, base, len(entries))
            return None
        return str(entries[0]["dn"]) if entries else None

    def _search(
        self, base: str, search_filter: str, attributes: list[str], scope: str = ldap3.SUBTREE
    ) -> list[dict[str, Any]]:
        with self._lock:
            try:
                connection = self._connect()
                found = connection.extend.standard.paged_search(
                    base,
                    search_filter,
                    search_scope=scope,
                    attributes=attributes,
                    paged_size=self._config.page_size,
                    generator=False,
                )
            except LDAPNoSuchObjectResult:
                return []  # a base that does not exist holds nobody (check() names the setting)
            except (LDAPException, OSError) as exc:
                self._drop()
                log.warning("LDAP search under %s failed: %s", base, exc)
                raise Unavailable(UNREACHABLE) from exc
            return [e for e in found if e.get("type") == "searchResEntry"]

    def _connect(self) -> ldap3.Connection:
        if self._connection is not None and self._connection.bound:
            return self._connection
        self._drop()
        config = self._config
        seconds = max(1, math.ceil(config.timeout_s))  # ldap3 packs its socket timeouts as whole seconds
        tls = None
        if config.url.startswith("ldaps://") or config.start_tls:
            tls = ldap3.Tls(
                validate=ssl.CERT_REQUIRED,
                ca_certs_file=str(config.ca_file) if config.ca_file else None,
                version=ssl.PROTOCOL_TLS_CLIENT,
            )
        server = ldap3.Server(
            config.url, use_ssl=config.url.startswith("ldaps://"), tls=tls, connect_timeout=seconds,
            get_info=ldap3.NONE,
        )  # fmt: skip
        connection = ldap3.Connection(
            server,
            user=config.bind_dn,
            password=self._password,
            read_only=True,
            receive_timeout=seconds,
            raise_exceptions=True,
            auto_bind=ldap3.AUTO_BIND_NONE,
        )
        self._connection = connection  # so that a failure below closes its socket (``_drop``)
        connection.open()
        if config.start_tls and not config.url.startswith("ldaps://"):
            connection.start_tls()
        connection.bind()
        return connection

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        with contextlib.suppress(LDAPException, OSError):
            connection.unbind()
        if connection.socket is not None:  # an unbind that failed on a dead server leaves its socket open
            with contextlib.suppress(OSError):
                connection.socket.close()

    def close(self) -> None:
        with self._lock:
            self._drop()

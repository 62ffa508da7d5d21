"""Where users' groups come from besides DocQA's own tables (LDAP / Active Directory)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from service.config.base import _Section


class LdapConfig(_Section):
    """Users' groups read from an LDAP server or Active Directory (``service.directory.ldap``)."""

    #: ``ldap://host:389`` or ``ldaps://host:636``.
    url: str = Field(min_length=8, max_length=500)
    #: Upgrade an ``ldap://`` connection with StartTLS before binding.
    start_tls: bool = False
    #: CA certificates (PEM) that the server's certificate must chain to (LDAPS and StartTLS); None = the
    #: system's trust store.
    ca_file: Path | None = None
    #: The DN DocQA binds as; None = an anonymous bind.
    bind_dn: str | None = Field(None, max_length=1000)
    #: Its password, from the environment (``DOCQA_DIRECTORY__LDAP__BIND_PASSWORD``) ...
    bind_password: SecretStr | None = None
    #: ... or from a file (a mounted Kubernetes secret); its first line is the password.
    bind_password_file: Path | None = None
    #: Where users are looked for, and how a DocQA user id finds its entry (``{user}`` is the id, escaped).
    user_base_dn: str = Field(min_length=1, max_length=1000)
    user_filter: str = Field("(uid={user})", min_length=3, max_length=1000)
    #: Where groups are looked for, which entries are groups, and how a group's name is matched (``{group}``).
    group_base_dn: str = Field(min_length=1, max_length=1000)
    group_filter: str = Field("(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))", max_length=1000)
    group_name_filter: str = Field("(cn={group})", min_length=3, max_length=1000)
    #: The attribute of a group that lists its members' DNs, and the one that names it.
    member_attribute: str = Field("member", pattern=r"^[A-Za-z][A-Za-z0-9-]{0,63}$")
    name_attribute: str = Field("cn", pattern=r"^[A-Za-z][A-Za-z0-9-]{0,63}$")
    #: Active Directory: a user's groups, nested ones included, in one search (the in-chain matching rule
    #: 1.2.840.113556.1.4.1941) instead of one search per level.
    active_directory: bool = False
    #: DocQA's name for the directory's group ``cn=finance``: ``group:<prefix>finance``.
    group_prefix: str = Field("", max_length=60, pattern=r"^[A-Za-z0-9_.-]*$")
    #: Entries per page of a search (large groups).
    page_size: int = Field(500, ge=1, le=10_000)
    #: Seconds to connect and to wait for one answer.
    timeout_s: float = Field(5.0, gt=0, le=120)


class DirectoryConfig(_Section):
    """Where users' groups come from besides DocQA's own tables (manifests, admin changes)."""

    #: Groups from LDAP / Active Directory; None (the default): DocQA's own tables only.
    ldap: LdapConfig | None = None
    #: Seconds a principal's groups read from an outside directory are used before they are read again.
    cache_ttl_s: float = Field(30.0, ge=0, le=3600)
    #: Principals whose groups are kept at most (least recently used forgotten).
    cache_max_entries: int = Field(10_000, ge=1, le=10_000_000)
    #: Seconds past the TTL that groups read before may still be used while the directory cannot be reached.
    #: 0 (the default): fail closed — a caller whose groups cannot be read gets UNAVAILABLE.
    stale_grace_s: float = Field(0.0, ge=0, le=86_400)

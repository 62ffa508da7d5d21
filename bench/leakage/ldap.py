"""A real OpenLDAP server (Debian's ``slapd``): started in a temporary folder on a free port with a generated
configuration, seeded with people and groups, changed and stopped on demand. The leakage benchmark's directory
mode revokes memberships in it; ``tests/ldap_world.py`` seeds it for the directory tests.

Without ``slapd`` on the machine (``apt-get install slapd``; ``.ci/run`` installs it) :data:`SLAPD` is None.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from service.directory.ldap import ldap3  # type: ignore[attr-defined]  # imported there without pyasn1's warnings

SLAPD = shutil.which("slapd") or ("/usr/sbin/slapd" if Path("/usr/sbin/slapd").exists() else None)
SUFFIX = "dc=example,dc=com"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "not-a-real-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"


def user_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


def group_dn(cn: str) -> str:
    return f"cn={ldap3.utils.dn.escape_rdn(cn)},{GROUPS}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_CONF = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {root}/slapd.pid
database mdb
suffix "{suffix}"
rootdn "{admin}"
rootpw {password}
directory {root}/db
maxsize 10485760
index objectClass eq
index member eq
"""


@dataclass
class Slapd:
    """One slapd: ``url``, ``admin()`` connections to change the tree, ``stop()`` / ``start()``."""

    root: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    def start(self) -> None:
        if SLAPD is None:
            raise RuntimeError("slapd is not installed (apt-get install slapd)")
        (self.root / "db").mkdir(parents=True, exist_ok=True)
        conf = self.root / "slapd.conf"
        conf.write_text(_CONF.format(root=self.root, suffix=SUFFIX, admin=ADMIN_DN, password=ADMIN_PASSWORD))
        with (self.root / "slapd.log").open("ab") as log:
            command = [SLAPD, "-f", str(conf), "-h", f"{self.url}/", "-d", "0"]
            self.process = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.process.poll() is not None:
                    told = (self.root / "slapd.log").read_text(errors="replace")
                    raise RuntimeError(f"slapd exited: {told}") from None
                time.sleep(0.05)
        raise RuntimeError("slapd did not listen within 20 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None

    def admin(self) -> ldap3.Connection:
        return ldap3.Connection(ldap3.Server(self.url), ADMIN_DN, ADMIN_PASSWORD, raise_exceptions=True)

    def seed_tree(self, users: Iterable[str], groups: Mapping[str, list[str]], holder: str) -> None:
        """People (``inetOrgPerson`` by uid) and groups (``groupOfNames``; members are uids, or group cns with a
        ``group:`` prefix). A group needs a member at every moment: ``holder``, one of ``users``, holds each
        place until the members are set."""
        with self.admin() as c:
            c.add(SUFFIX, ["dcObject", "organization"], {"o": "Example", "dc": "example"})
            c.add(PEOPLE, ["organizationalUnit"], {"ou": "people"})
            c.add(GROUPS, ["organizationalUnit"], {"ou": "groups"})
            for uid in users:
                c.add(user_dn(uid), ["inetOrgPerson"], {"uid": uid, "cn": uid, "sn": uid})
            for cn in groups:
                c.add(group_dn(cn), ["groupOfNames"], {"cn": cn, "member": [user_dn(holder)]})
            for cn, members in groups.items():
                dns = [group_dn(m[6:]) if m.startswith("group:") else user_dn(m) for m in members]
                c.modify(group_dn(cn), {"member": [(ldap3.MODIFY_REPLACE, dns)]})

    def add_member(self, group: str, member_dn: str) -> None:
        with self.admin() as c:
            c.modify(group_dn(group), {"member": [(ldap3.MODIFY_ADD, [member_dn])]})

    def remove_member(self, group: str, member_dn: str) -> None:
        with self.admin() as c:
            c.modify(group_dn(group), {"member": [(ldap3.MODIFY_DELETE, [member_dn])]})

    def add_group(self, cn: str, member_dns: list[str]) -> None:
        with self.admin() as c:
            c.add(group_dn(cn), ["groupOfNames"], {"cn": cn, "member": member_dns})

    def settings(self, **overrides: object) -> dict[str, object]:
        """``directory.ldap`` for this server (a dict for ``Settings(directory={"ldap": ...})``)."""
        return {
            "url": self.url,
            "bind_dn": ADMIN_DN,
            "bind_password": ADMIN_PASSWORD,
            "user_base_dn": PEOPLE,
            "group_base_dn": GROUPS,
            "timeout_s": 2.0,
            **overrides,
        }

    def env(self, cache_ttl_s: float) -> dict[str, str]:
        """The same settings as ``DOCQA_DIRECTORY__…`` environment variables (for ``docqa serve`` and the CLI)."""
        out = {f"DOCQA_DIRECTORY__LDAP__{key.upper()}": str(value) for key, value in self.settings().items()}
        return {**out, "DOCQA_DIRECTORY__CACHE_TTL_S": str(cache_ttl_s)}

"""The DocQA target's outside directories (its directory mode): a real slapd holding the world's LDAP groups,
and SCIM groups provisioned at the live server's ``/scim/v2`` with a token from ``docqa scim token``, as an
identity provider would. Revocations are made there, never in DocQA's own tables.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.leakage.ldap import Slapd, user_dn
from bench.leakage.world import World

#: Seconds DocQA keeps a principal's LDAP groups (``directory.cache_ttl_s``): part of the LDAP revocation's
#: time to effect.
CACHE_TTL_S = 1.0
_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:"
_HOLDER = "ldap-holder"  # not a world user: a groupOfNames needs a member once the world's is removed


class Directories:
    """The groups of ``world.directory``, each in its source: ``ldap`` in a slapd, ``scim`` over SCIM."""

    def __init__(self, work: Path, world: World) -> None:
        self.slapd = Slapd(work / "slapd")
        self.groups = {g: (s, sorted(world.groups[g])) for g, s in world.directory.items()}
        self._scim: tuple[str, str] | None = None  # base URL, bearer token
        self._ids: dict[str, str] = {}  # SCIM name (user:x, group:y) -> resource id

    def start_ldap(self) -> dict[str, str]:
        """Start slapd with the LDAP groups; the ``DOCQA_DIRECTORY__…`` settings that read it."""
        ldap = {g: [m.removeprefix("user:") for m in members] for g, (s, members) in self.groups.items() if s == "ldap"}
        self.slapd.start()
        users = sorted({uid for members in ldap.values() for uid in members} | {_HOLDER})
        self.slapd.seed_tree(users, {g: [*members, _HOLDER] for g, members in ldap.items()}, holder=_HOLDER)
        return self.slapd.env(CACHE_TTL_S)

    def provision_scim(self, url: str, token: str) -> None:
        """Create the SCIM groups' users, then the groups with them as members."""
        self._scim = (f"{url}/scim/v2", token)
        for group, (source, members) in self.groups.items():
            if source != "scim":
                continue
            for member in members:
                user = self._request("POST", "/Users", {"schemas": [_SCHEMA + "User"], "userName": member[5:]})
                self._ids[member] = user["id"]
            body = {"schemas": [_SCHEMA + "Group"], "displayName": group,
                    "members": [{"value": self._ids[m]} for m in members]}  # fmt: skip
            self._ids[f"group:{group}"] = self._request("POST", "/Groups", body)["id"]

    def remove_member(self, source: str, group: str, member: str) -> None:
        if source == "ldap":
            self.slapd.remove_member(group, user_dn(member.removeprefix("user:")))
        elif source == "scim":
            patch = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                     "Operations": [{"op": "remove", "path": f'members[value eq "{self._ids[member]}"]'}]}  # fmt: skip
            self._request("PATCH", f"/Groups/{self._ids[f'group:{group}']}", patch)
        else:
            raise ValueError(f"unknown directory source {source!r}")

    def stop(self) -> None:
        self.slapd.stop()

    def _request(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self._scim is not None
        base, token = self._scim
        headers = {"Content-Type": "application/scim+json", "Authorization": f"Bearer {token}"}
        request = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                text = reply.read().decode()
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"SCIM {method} {path}: HTTP {error.code}: {error.read().decode()}") from None
        return json.loads(text) if text else {}

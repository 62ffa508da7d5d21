"""The directory tests' OpenLDAP server: :class:`bench.leakage.ldap.Slapd` seeded with people and nested groups.

Without ``slapd`` on the machine (``apt-get install slapd``; ``.ci/run`` installs it) the tests that need it are
skipped, saying so.
"""

from __future__ import annotations

from bench.leakage.ldap import ADMIN_DN, ADMIN_PASSWORD, GROUPS, PEOPLE, SLAPD, SUFFIX, Slapd, group_dn, user_dn

__all__ = ["ADMIN_DN", "ADMIN_PASSWORD", "GROUPS", "PEOPLE", "SLAPD", "SUFFIX", "LdapWorld", "group_dn", "user_dn"]

#: group → members (users by uid, groups by cn with a "group:" prefix). auditors ⊂ finance; a cycle; a
#: group whose name needs escaping in a filter.
SEED: dict[str, list[str]] = {
    "finance": ["alice", "group:auditors"],
    "auditors": ["carol", "frank"],
    "hr": ["bob"],
    "cycle-a": ["dave", "group:cycle-b"],
    "cycle-b": ["group:cycle-a"],
    "rd(eu)": ["erin"],
    "rd-all": ["group:rd(eu)"],
}
USERS = ("alice", "bob", "carol", "dave", "erin", "frank")


class LdapWorld(Slapd):
    """One slapd with :data:`SEED`'s tree once :meth:`seed` ran."""

    def seed(self) -> None:
        self.seed_tree(USERS, SEED, holder="frank")

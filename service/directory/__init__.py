"""Users' groups from outside DocQA: LDAP / Active Directory, merged with DocQA's own tables."""

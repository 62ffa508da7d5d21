"""Principals, ACLs, the group directory and the access checker.

This package is the bottom layer: it imports nothing else of DocQA's.
"""

from acl.errors import DocQAError
from acl.model import EVERYONE, Acl, validate_principal

__all__ = ["EVERYONE", "Acl", "DocQAError", "validate_principal"]

"""The one writer of ACLs and group memberships, administrator operations, per-caller store views."""

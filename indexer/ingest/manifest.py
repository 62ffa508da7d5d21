"""The ACL manifest of a folder: groups, and per-path ACL rules (first match wins)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from acl.errors import InvalidArgument
from acl.model import NOBODY, Acl, validate_principal

MANIFEST_NAME = "acl.yaml"
#: A manifest is a page of rules; anything much larger is a mistake (or a device).
MAX_MANIFEST_BYTES = 4 << 20


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """Compile a path glob: ``**`` spans folders, ``*`` and ``?`` stay inside one."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True, slots=True)
class AclRule:
    match: str
    acl: Acl

    def matches(self, relative_path: str) -> bool:
        # One Unicode form on both sides: a decomposed (NFD) file name, as macOS writes it, must not
        # miss a rule typed composed (NFC) and fall through to a wider rule.
        return (
            _glob(unicodedata.normalize("NFC", self.match)).match(unicodedata.normalize("NFC", relative_path))
            is not None
        )


@dataclass(frozen=True, slots=True)
class Manifest:
    groups: dict[str, tuple[str, ...]]
    rules: tuple[AclRule, ...]

    def acl_for(self, relative_path: str) -> Acl:
        """The ACL of the first rule matching the path; nobody may read an unmatched one."""
        rule = self.rule_for(relative_path)
        return NOBODY if rule is None else rule.acl

    def rule_for(self, relative_path: str) -> AclRule | None:
        """The first rule matching the path, or None when no rule does."""
        for rule in self.rules:
            if rule.matches(relative_path):
                return rule
        return None


def parse_manifest(data: Any, source: str = "manifest") -> Manifest:
    """Validate a parsed YAML manifest; InvalidArgument names the bad entry."""
    if not isinstance(data, dict):
        raise InvalidArgument(f"{source}: expected a mapping with 'groups' and 'documents'")
    unknown = set(data) - {"groups", "documents"}
    if unknown:
        raise InvalidArgument(f"{source}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    groups: dict[str, tuple[str, ...]] = {}
    for name, members in (data.get("groups") or {}).items():
        group = name if str(name).startswith("group:") else f"group:{name}"
        try:
            validate_principal(group)
            if not isinstance(members, list):
                raise InvalidArgument("members must be a list")
            groups[group] = tuple(validate_principal(m) for m in members)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{source}: groups.{name}: {exc.message}") from None
    rules: list[AclRule] = []
    documents = data.get("documents") or []
    if not isinstance(documents, list):
        raise InvalidArgument(f"{source}: 'documents' must be a list of rules")
    for position, rule in enumerate(documents):
        where = f"{source}: documents[{position}]"
        if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
            raise InvalidArgument(f"{where}: each rule needs a 'match' glob")
        extra = set(rule) - {"match", "allow", "deny"}
        if extra:
            raise InvalidArgument(f"{where}: unknown key(s) {', '.join(sorted(map(str, extra)))}")
        try:
            acl = Acl.of(rule.get("allow") or [], rule.get("deny") or [])
        except (InvalidArgument, TypeError) as exc:
            raise InvalidArgument(f"{where}: {getattr(exc, 'message', exc)}") from None
        rules.append(AclRule(rule["match"], acl))
    return Manifest(groups, tuple(rules))


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest file; it is never read through a symbolic link."""
    import yaml

    from indexer.errors import LoadError
    from indexer.ingest.safe_scan import read_file_nofollow

    try:
        text = read_file_nofollow(path, MAX_MANIFEST_BYTES).decode("utf-8")
        data = yaml.safe_load(text)
    except LoadError as exc:  # a link, a special file, or one that cannot be opened
        raise InvalidArgument(f"cannot read ACL manifest {path}: {exc.message}") from None
    except UnicodeDecodeError:
        raise InvalidArgument(f"ACL manifest {path} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise InvalidArgument(f"ACL manifest {path} is not valid YAML: {exc}") from None
    return parse_manifest(data, str(path))

from __future__ import annotations

import pytest

from acl.errors import InvalidArgument
from acl.model import NOBODY, Acl
from indexer.ingest.manifest import parse_manifest

MANIFEST = {
    "groups": {"finance": ["user:alice", "group:auditors"], "auditors": ["user:carol"]},
    "documents": [
        {"match": "finance/**", "allow": ["group:finance"], "deny": ["user:mallory"]},
        {"match": "*.md", "allow": ["user:bob"]},
        {"match": "public/**", "allow": ["group:everyone"]},
    ],
}


def test_first_matching_rule_wins_and_unmatched_is_nobody() -> None:
    manifest = parse_manifest(MANIFEST)
    assert manifest.acl_for("finance/q3.md") == Acl.of(["group:finance"], ["user:mallory"])
    assert manifest.acl_for("finance/sub/deep.pdf") == Acl.of(["group:finance"], ["user:mallory"])
    assert manifest.acl_for("top.md") == Acl.of(["user:bob"])
    assert manifest.acl_for("other/top.md") == NOBODY  # '*' stays inside one folder
    assert manifest.acl_for("public/a/b.html") == Acl.of(["group:everyone"])
    assert manifest.groups["group:finance"] == ("user:alice", "group:auditors")


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"documents": [{"allow": ["group:x"]}]},
        {"documents": [{"match": "**", "allow": ["nobody"]}]},
        {"documents": [{"match": "**", "allowed": ["group:x"]}]},
        {"groups": {"g": "user:a"}},
        {"groups": {"g": ["alice"]}},
        {"rules": []},
    ],
)
def test_bad_manifests_name_the_problem(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        parse_manifest(bad, "acl.yaml")


def test_a_rule_matches_a_name_whatever_its_unicode_normal_form() -> None:
    # Files copied from macOS keep decomposed names (NFD); manifests are typed composed (NFC).
    # A restricted folder whose rule did not match fell through to the wider '**' rule.
    import unicodedata

    manifest = parse_manifest(
        {
            "documents": [
                {"match": "Gehälter/**", "allow": ["group:hr"]},
                {"match": "**", "allow": ["group:everyone"]},
            ]
        }
    )
    for form in ("NFC", "NFD"):
        assert manifest.acl_for(unicodedata.normalize(form, "Gehälter/2026.md")) == Acl.of(["group:hr"])
    nfd_rule = parse_manifest(
        {"documents": [{"match": unicodedata.normalize("NFD", "Gehälter/**"), "allow": ["group:hr"]}]}
    )
    assert nfd_rule.acl_for(unicodedata.normalize("NFC", "Gehälter/2026.md")) == Acl.of(["group:hr"])

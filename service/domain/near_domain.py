"""Near-domain probes: the store's own headings turned toward a product or version it does not cover.

People rarely ask a store about cooking; they ask it about the neighbouring
product ("create a new branch in Mercurial" of a git manual, "InnoDB buffer
pool" of a PostgreSQL manual). Such a question scores like an answerable one
in vector space, so off-topic probes alone predict far more refusals than
users see. A near-domain probe is a heading or title of the store's own with
a name swapped for one of ``FOREIGN_NAMES`` when it names one (a product, a
version: "PostgreSQL 15" in "PostgreSQL 15 release notes"), else with the
foreign name added ("Creating a new branch in Mercurial"). Names the store's sampled text mentions are never used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from random import Random

from service.domain.answerability import distinctive_terms

#: Products and versions of neighbouring fields: databases, version control, operating systems, packaging,
#: clouds, office and business software. A store about one of them simply does not draw it.
FOREIGN_NAMES: tuple[str, ...] = (
    "Mercurial",
    "Perforce",
    "Subversion 1.14",
    "Oracle Database 19c",
    "MySQL 8.0",
    "MongoDB",
    "SQL Server 2019",
    "Kubernetes",
    "OpenShift",
    "Windows Server 2022",
    "macOS Sonoma",
    "Ubuntu 22.04",
    "Fedora 39",
    "Red Hat Enterprise Linux 9",
    "Flatpak",
    "Snapcraft",
    "Salesforce",
    "SAP S/4HANA",
    "Microsoft Teams",
    "Jira",
    "Terraform",
    "AWS Lambda",
    "Azure Functions",
    "Photoshop",
)
#: Near-domain probes drawn at most.
MAX_NEAR_PROBES = 60


def near_probes(headings: Sequence[str], known_text: Iterable[str], rng: Random) -> list[str]:
    """Up to MAX_NEAR_PROBES probes from ``headings`` (titles and headings of the store), each naming a foreign
    name none of ``known_text`` (the sampled documents' text) mentions."""
    known = list(known_text)
    foreign = [
        name
        for name in FOREIGN_NAMES
        if not any(term.mentioned_in(text) for term in distinctive_terms(f"about {name}") for text in known)
    ]
    if not foreign or not headings:
        return []
    picked = rng.sample(list(headings), min(MAX_NEAR_PROBES, len(headings)))
    probes: list[str] = []
    for heading in picked:
        name = rng.choice(foreign)
        own = [t.text for t in distinctive_terms(f"about {heading}") if t.text in heading and _product(t.text)]
        probes.append(heading.replace(own[0], name, 1) if own else f"{heading} in {name}")
    return probes


def _product(name: str) -> bool:
    """Whether a heading's term surely names a product or a version (a heading capitalises every word, so a
    capital alone does not): a version number, or capitals inside a word ("PostgreSQL 15", "GitHub")."""
    return any(c.isdigit() for c in name) or any(c.isupper() for word in name.split() for c in word[1:])

"""Conversation rewriting on follow-up pairs of the PostgreSQL 15 manual: hit@1 / hit@5 of three searches.

    python bench/followups.py [--pairs bench/quality/followups/postgresql-15.yaml] [--others 100] [--data-dir DIR]

Indexes, with the packaged embedding model, the pages the pairs name plus ``--others`` other pages of the
manual (a fixed random draw of pages under 30 kB, to keep the run to minutes on 2 cores), readable by
everyone. Then, for each pair, the follow-up's answering pages are looked for among the top documents of a
search (hybrid retrieval, no threshold, no answer) for:

- the follow-up alone (the baseline: what one-shot DocQA searched),
- the offline rewrite from the first question (``service.history.rewrite.offline_rewrite``),
- the standalone gold question (what a perfect rewrite would search);

and hit@1 / hit@5 with their ratio to the baseline are printed, then each pair's rewrite. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.domain.queries import Caller, VectorQuery
from service.history.rewrite import offline_rewrite

ROOT = Path(__file__).resolve().parents[1]
STORE = "pgfollow"


def corpus(pairs: list[dict[str, object]], root: Path, others: int, target: Path) -> int:
    named = {str(d) for p in pairs for key in ("documents", "first_documents") for d in p[key]}  # type: ignore[attr-defined]
    rest = sorted(p.name for p in root.glob("*.html") if p.name not in named and p.stat().st_size < 30_000)
    chosen = named | set(random.Random(15).sample(rest, min(others, len(rest))))
    target.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        shutil.copy(root / name, target / name)
    (target / "acl.yaml").write_text('documents:\n  - match: "**"\n    allow: [group:everyone]\n')
    return len(chosen)


def ranked(engine: object, question: str) -> list[str]:
    answer = engine.ask(Caller("bench"), VectorQuery(STORE, question, 0.0, 30, perform_llm_query=False))  # type: ignore[attr-defined]
    return list(dict.fromkeys(c.document_id for c in answer.chunks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default=str(ROOT / "bench" / "quality" / "followups" / "postgresql-15.yaml"))
    parser.add_argument("--others", type=int, default=100, help="pages indexed besides the pairs' own")
    parser.add_argument("--data-dir", help="keep the index here (re-runs skip unchanged pages)")
    args = parser.parse_args()
    spec = yaml.safe_load(Path(args.pairs).read_text(encoding="utf-8"))
    pairs, root = spec["pairs"], Path(spec["root"])
    data = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="docqa-followups-"))
    os.environ["DOCQA_DATA_DIR"] = str(data)
    pages = corpus(pairs, root, args.others, data / "pages")
    from service.api.cli.main import main as docqa
    from service.bootstrap import build_app
    from service.config import load_settings

    if docqa(["index", str(data / "pages"), "--store", STORE, "--quiet"]) != 0:
        sys.exit("indexing failed")
    app = build_app(load_settings())
    engine = app.one_shot_engine
    variants = {"follow-up alone": [], "offline rewrite": [], "standalone (gold)": []}  # type: dict[str, list[str]]
    for pair in pairs:
        variants["follow-up alone"].append(pair["follow_up"])
        variants["offline rewrite"].append(offline_rewrite([pair["first"]], pair["follow_up"]))
        variants["standalone (gold)"].append(pair["standalone"])
    results: dict[str, tuple[float, float]] = {}
    for name, questions in variants.items():
        hits1 = hits5 = 0
        for pair, question in zip(pairs, questions, strict=True):
            top = ranked(engine, question)
            hits1 += any(d in pair["documents"] for d in top[:1])
            hits5 += any(d in pair["documents"] for d in top[:5])
        results[name] = (hits1 / len(pairs), hits5 / len(pairs))
    base1, base5 = results["follow-up alone"]
    print(f"{len(pairs)} follow-up pairs; {pages} pages indexed ({app.index.count(STORE)} chunks)")
    print(f"{'search':<20}{'hit@1':>7}{'hit@5':>7}   ratio to the follow-up alone (hit@1, hit@5)")
    for name, (h1, h5) in results.items():
        r1 = f"{h1 / base1:.2f}" if base1 else "inf"
        r5 = f"{h5 / base5:.2f}" if base5 else "inf"
        print(f"{name:<20}{h1:>7.2f}{h5:>7.2f}   x{r1}, x{r5}")
    print("\nrewrites:")
    for pair, question in zip(pairs, variants["offline rewrite"], strict=True):
        print(f"  {pair['id']}: {pair['follow_up']!r} -> {question!r}")
    app.close()


if __name__ == "__main__":
    main()

"""Conversation rewriting on follow-up pairs: hit@1 / hit@5 of the searches, and answers as the standalone's.

    python bench/followups.py [--pairs bench/quality/followups/postgresql-15.yaml] [--others 100] [--data-dir DIR]
    python bench/followups.py --pairs bench/quality/followups/debian-git.yaml \
        --data-dir ~/.cache/docqa-bench/debian-git/data --store quality --against origin/main

Without ``--store`` it indexes, with the packaged embedding model, the pages the pairs name plus ``--others``
other pages of the corpus (``root``; a fixed random draw of pages under 30 kB, to keep the run to minutes on
2 cores), readable by everyone. With ``--store`` it uses that store of ``--data-dir`` as it is (the quality
benchmark's, say). Then, for each pair, the follow-up's answering pages are looked for among the top
documents of a search (hybrid retrieval, no threshold, no answer) for:

- the follow-up alone (the baseline: what one-shot DocQA searched),
- the offline rewrite from the first question (``service.history.rewrite.offline_rewrite``),
- with ``--against REF``, the offline rewrite of that commit (its ``service/history/rewrite.py``),
- the standalone gold question (what a perfect rewrite would search);

and hit@1 / hit@5 with their ratio to the baseline are printed. "As standalone" is the share of pairs whose
follow-up is answered as the standalone question is, at the store's level: answered (or refused) alike, the
answering page in the top five whenever the standalone has it there, and a key term of the pair quoted
whenever the standalone's answer quotes one. Then each pair's rewrite. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.provenance import record
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


def ranked(engine: Any, store: str, question: str) -> list[str]:
    answer = engine.ask(Caller("bench"), VectorQuery(store, question, 0.0, 30, perform_llm_query=False))
    return list(dict.fromkeys(c.document_id for c in answer.chunks))


def answered(engine: Any, store: str, question: str) -> tuple[bool, str]:
    """Whether the question is answered at the store's level, and the answer's text."""
    answer = engine.ask(Caller("bench"), VectorQuery(store, question))
    return not answer.no_relevant_document, answer.answer or ""


def rewrite_of(ref: str) -> Callable[[list[str], str], str]:
    """``offline_rewrite`` as commit ``ref`` has it (its ``service/history/rewrite.py``, loaded on its own)."""
    source = subprocess.run(
        ["git", "show", f"{ref}:service/history/rewrite.py"], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="docqa-rewrite-"))
    (folder / "rewrite_at_ref.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("rewrite_at_ref", folder / "rewrite_at_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass in it looks its module up
    spec.loader.exec_module(module)
    return module.offline_rewrite  # type: ignore[no-any-return]


def as_standalone(engine: Any, store: str, pair: dict[str, Any], rewritten: str) -> bool:
    """Whether the rewritten follow-up is answered as its standalone question is (see the module)."""
    expected, terms = set(pair["documents"]), [t.casefold() for t in pair.get("terms", ())]
    gold_ok, gold_text = answered(engine, store, pair["standalone"])
    ok, text = answered(engine, store, rewritten)
    if ok != gold_ok:
        return False
    if expected & set(ranked(engine, store, pair["standalone"])[:5]) and not expected & set(
        ranked(engine, store, rewritten)[:5]
    ):
        return False
    quotes = any(t in gold_text.casefold() for t in terms)
    return not quotes or any(t in text.casefold() for t in terms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default=str(ROOT / "bench" / "quality" / "followups" / "postgresql-15.yaml"))
    parser.add_argument("--others", type=int, default=100, help="pages indexed besides the pairs' own")
    parser.add_argument("--data-dir", help="keep the index here (re-runs skip unchanged pages)")
    parser.add_argument("--store", help="use this store of --data-dir as it is (no indexing)")
    parser.add_argument("--against", metavar="REF", help="also the offline rewrite of commit REF")
    args = parser.parse_args()
    if not Path(args.pairs).is_file() or args.others < 0:
        parser.error(f"--pairs {args.pairs} must be a file and --others at least 0")
    spec = yaml.safe_load(Path(args.pairs).read_text(encoding="utf-8"))
    pairs = spec["pairs"]
    if args.store is None and not Path(spec["root"]).is_dir():
        sys.exit(
            f"{spec['root']} (the pairs' corpus, {spec.get('corpus', 'root')}) is not a folder: install it, or --store"
        )
    data = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="docqa-followups-"))
    os.environ["DOCQA_DATA_DIR"] = str(data)
    from service.api.cli.main import main as docqa
    from service.bootstrap import build_app
    from service.config import load_settings

    store = args.store or STORE
    if args.store is None:
        pages = corpus(pairs, Path(spec["root"]), args.others, data / "pages")
        if docqa(["index", str(data / "pages"), "--store", STORE, "--quiet"]) != 0:
            sys.exit("indexing failed")
    app = build_app(load_settings())
    engine = app.one_shot_engine
    rewrites: dict[str, Callable[[list[str], str], str]] = {"offline rewrite": offline_rewrite}
    if args.against:
        rewrites[f"rewrite of {args.against}"] = rewrite_of(args.against)
    variants: dict[str, list[str]] = {"follow-up alone": [p["follow_up"] for p in pairs]}
    for name, rewrite in rewrites.items():
        variants[name] = [rewrite([p["first"]], p["follow_up"]) for p in pairs]
    variants["standalone (gold)"] = [p["standalone"] for p in pairs]
    results: dict[str, tuple[float, float, float]] = {}
    for name, questions in variants.items():
        hits1 = hits5 = alike = 0
        for pair, question in zip(pairs, questions, strict=True):
            top = ranked(engine, store, question)
            hits1 += any(d in pair["documents"] for d in top[:1])
            hits5 += any(d in pair["documents"] for d in top[:5])
            alike += as_standalone(engine, store, pair, question)
        results[name] = (hits1 / len(pairs), hits5 / len(pairs), alike / len(pairs))
    base1, base5, _ = results["follow-up alone"]
    where = f"store {store}" if args.store else f"{pages} pages indexed"
    print(f"{len(pairs)} follow-up pairs; {where} ({app.index.count(store)} chunks)")
    print(f"{'search':<28}{'hit@1':>7}{'hit@5':>7}{'as standalone':>15}   ratio to the follow-up alone (hit@1, hit@5)")
    for name, (h1, h5, same) in results.items():
        r1 = f"{h1 / base1:.2f}" if base1 else "inf"
        r5 = f"{h5 / base5:.2f}" if base5 else "inf"
        print(f"{name:<28}{h1:>7.2f}{h5:>7.2f}{same:>15.2f}   x{r1}, x{r5}")
    print("\nrewrites:")
    for pair, question in zip(pairs, variants["offline rewrite"], strict=True):
        print(f"  {pair['id']}: {pair['follow_up']!r} -> {question!r}")
    figures = {
        name: {"hit_at_1": h1, "hit_at_5": h5, "as_standalone": same} for name, (h1, h5, same) in results.items()
    }
    record("followups", {"pairs": args.pairs, "store": store, "chunks": app.index.count(store), **figures})
    app.close()


if __name__ == "__main__":
    main()

"""Does the extractive answer quote what answers the question? Key-term presence on hand-made cases.

Runs the extractive answerer on the cases of ``tests/answer_cases.py`` (a
question, its context chunks best first, the term a good answer quotes) and
prints, per case, whether the answer quotes the key term, the share over all
cases, and the CPU time of one answer from 8 chunks; with ``--baseline REF``
it runs ``service/generation/extractive.py`` as it was at git revision REF
side by side (e.g. the commit before the question-aware answerer).

    .venv/bin/python -m bench.answers [--baseline REF] [--show]   (from the repository root)
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.provenance import record
from service.generation.extractive import ExtractiveGenerator
from service.generation.port import Generator
from service.generation.prompt import ContextChunk, Prompt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository root, for tests.answer_cases
from tests.answer_cases import CASES, AnswerCase  # noqa: E402  (after the root is on the path)


def prompt(case: AnswerCase) -> Prompt:
    chunks = tuple(ContextChunk(i + 1, f"d{i}", f"T{i}", text, 0.5) for i, text in enumerate(case.chunks))
    return Prompt(case.question, chunks, "{context}\n{question}", "extractive")


def baseline(ref: str) -> Generator:
    """The extractive generator as it was at git revision ``ref``."""
    source = subprocess.run(
        ["git", "show", f"{ref}:service/generation/extractive.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "baseline_extractive.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("baseline_extractive", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    generator: Generator = module.ExtractiveGenerator()
    return generator


def eight_chunks() -> Prompt:
    """A prompt of 8 chunks of about 1,000 characters, made of the cases' texts (for the timing)."""
    texts = [text for case in CASES for text in case.chunks]
    chunks = tuple(
        ContextChunk(
            n + 1, f"d{n}", f"T{n}", "\n\n".join(texts[(n * 5 + i) % len(texts)] for i in range(5))[:1000], 0.5
        )
        for n in range(8)
    )
    return Prompt(CASES[0].question, chunks, "{context}\n{question}", "extractive")


def run(generator: Generator, rounds: int) -> tuple[list[str], float]:
    """Each case's answer, and the CPU milliseconds per answer on 8 chunks.

    CPU time (``process_time``), not wall time: on a shared machine it is the figure that holds still.
    """
    answers = [generator.generate(prompt(case)).text for case in CASES]
    big = eight_chunks()
    generator.generate(big)
    start = time.process_time()
    for _ in range(rounds):
        generator.generate(big)
    return answers, (time.process_time() - start) * 1000 / rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="REF", help="also run the extractive answerer of this git revision")
    parser.add_argument("--rounds", type=int, default=200, help="timed answers on 8 chunks (default 200)")
    parser.add_argument("--show", action="store_true", help="print each answer")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs = {"now": run(ExtractiveGenerator(), args.rounds)}
    if args.baseline:
        runs = {args.baseline: run(baseline(args.baseline), args.rounds), **runs}
    names = list(runs)
    print(f"{'case':<20}" + "".join(f"{name[:12]:>14}" for name in names))
    for i, case in enumerate(CASES):
        marks = "".join(f"{'yes' if case.key in runs[n][0][i] else 'NO':>14}" for n in names)
        print(f"{case.name:<20}{marks}")
        if args.show:
            for name in names:
                shown = runs[name][0][i].replace("\n", "\n" + " " * 24)
                print(f"    {name[:12]:>12}: {shown}")
    print("-" * (20 + 14 * len(names)))
    share = {n: sum(c.key in a for c, a in zip(CASES, runs[n][0], strict=True)) / len(CASES) for n in names}
    print(f"{'key term quoted':<20}" + "".join(f"{share[n]:>14.0%}" for n in names))
    print(f"{'CPU ms, 8 chunks':<20}" + "".join(f"{runs[n][1]:>14.2f}" for n in names))
    figures = {
        n: {
            "key_term_share": share[n],
            "cpu_ms_8_chunks": runs[n][1],
            "missed": [c.name for c, a in zip(CASES, runs[n][0], strict=True) if c.key not in a],
        }
        for n in names
    }
    record("answers", {"cases": len(CASES), "rounds": args.rounds, **figures}, argv=argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())

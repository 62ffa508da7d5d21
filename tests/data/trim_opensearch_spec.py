"""Copy the parts of the official OpenSearch API specification that DocQA's tests read.

Usage: python tests/data/trim_opensearch_spec.py FULL_SPEC_HOME [DEST]

FULL_SPEC_HOME is a checkout of opensearch-project/opensearch-api-specification
(its ``spec/`` folder and the k-NN ``test-stories/``). DEST defaults to
``tests/data/opensearch-api-spec``. The namespaces below are the operations the
adapter and the stories call; every schema file they reference, directly or
through other schema files, comes along whole, so every ``$ref`` still resolves
exactly as written. Nothing is edited.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from urllib.parse import urldefrag, urljoin

#: Operations the OpenSearch adapter sends and the k-NN test stories exercise.
NAMESPACES = ("_core", "indices", "cat", "knn")
TOP_LEVEL = ("_global_parameters.yaml", "_info.yaml")
_REF = re.compile(r"""\$ref:\s*['"]?([^'"\s#]*\.yaml)""")


def closure(spec: Path) -> set[Path]:
    """The namespace files and every file reachable from them by ``$ref``."""
    todo = [spec / "namespaces" / f"{name}.yaml" for name in NAMESPACES] + [spec / n for n in TOP_LEVEL]
    seen: set[Path] = set()
    while todo:
        path = todo.pop().resolve()
        if path in seen:
            continue
        seen.add(path)
        for ref in _REF.findall(path.read_text(encoding="utf-8")):
            target, _ = urldefrag(urljoin(path.as_uri(), ref))
            todo.append(Path(target.removeprefix("file://")))
    return seen


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    home = Path(argv[0]).resolve()
    dest = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent / "opensearch-api-spec"
    spec = home / "spec"
    if dest.exists():
        shutil.rmtree(dest)
    for path in sorted(closure(spec)):
        target = dest / "spec" / path.relative_to(spec)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    shutil.copytree(home / "test-stories", dest / "test-stories")
    for name in ("LICENSE.txt", "NOTICE.txt"):
        shutil.copyfile(home / name, dest / name)
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    print(f"{len(files)} files, {sum(p.stat().st_size for p in files) // 1024} KiB in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The kinds of a chunk's lines: code, list items, table rows, prose, headings, and the terms a reference page
defines ("-n", "shared_buffers (integer)") — read block by block (the loaders separate blocks with a blank
line), for ``service.generation.text_units`` to cut into units."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(?:```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+‣◦]|\d{1,3}[.)]|[a-z][)])\s+\S")
_TABLE_ROW = re.compile(r"\S \| \S|^\|.*\|\s*$")
_INDENTED = re.compile(r"^(?: {4}|\t)\s*\S")
_COMMANDS = frozenset(
    """
    sudo apt apt-get dpkg yum dnf brew pip pip3 pipx uv python python3 git docker podman kubectl helm
    curl wget npm npx yarn systemctl journalctl psql mysql sqlite3 ssh scp rsync tar chmod chown mkdir rm
    cp mv ls cd grep sed awk docqa alembic pytest openssl ln echo export unzip gzip make cmake gcc java
    mvn gradle cargo go node ruby perl bash sh zsh ps kill tail head cat less vim nano
    """.split()  # noqa: SIM905 - a word list reads better as text
)
#: Commands that are also English words: code only with an argument that looks like code.
_AMBIGUOUS = frozenset({"make", "go", "cat", "less", "head", "tail", "kill", "export", "echo", "ps"})
# Both are matched at the start of a stripped line (``match``, not ``search``: it is much faster).
_STRONG_CODE = re.compile(
    r"""
      (?:\$|%|>>>|PS>|[A-Za-z]:\\>|\#)\s+\S                      # a shell or interpreter prompt
    | (?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE|ALTER|DROP|GRANT|REVOKE|WHERE|ORDER\s+BY
        |GROUP\s+BY|LEFT\s+JOIN|INNER\s+JOIN|VALUES)\s+\S          # SQL
    | --?[A-Za-z][\w-]*(?:[ =]\S|$)                            # an option: --port 8080, -v
    | (?:def|class|import|from|return|function|const|let|var|public|private|fn|func)\s+[\w.]+
        (?:\s+import\s|[\s(:=<{]|$)                            # program text
    | \#include\b | \#!/ | [{}\])]+[;,]?$                       # C-like punctuation, a shebang
    | <[A-Za-z/!?][^>]*>                                       # markup
    | .*\S\s*\{$                                               # a block opens
    """,
    re.VERBOSE,
)
_WEAK_CODE = re.compile(
    r"""
      .*;$                                                     # a statement
    | [A-Za-z_][\w.\-]*\s*=\s*\S                               # KEY=value, key = value
    | [a-z_][\w.\-]*:\s*\S+$                                    # key: value
    | [\w.]+\([^()]*\)\s*;?$                                    # a call on its own
    """,
    re.VERBOSE,
)
#: Plainly prose (the common case, decided at once): a capitalised word, then words, a full stop.
_PLAIN_PROSE = re.compile(r"^[A-Z][a-z]+[ ,][^;{}=$<>|`\\]*[a-z0-9)][.!?]$")
_PROGRAM = re.compile(r"[a-z][\w.+-]*(?:\s+[^\s-]\S*){0,2}\s+--?[A-Za-z][\w-]*(?:[\s=]|$)")
#: A heading on a line of its own: a capital, at most six words, no closing punctuation.
_HEADING_LINE = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+)?[A-Z][\w’'/-]*(?:\s+[\w’'/()-]+){0,5}$")
#: A prose line that leaves its sentence open: it ends in a word or a comma (not ".", ":" or code punctuation).
_OPEN_PROSE_END = re.compile(r"[A-Za-z0-9,)'’]$")
_PROMPT = re.compile(r"(?:\$|%|>>>|PS>|#)\s")
_PLAIN_WORD = re.compile(r"^[(\"'“]?[A-Za-z][a-z]*[,.;:)\"'”]*$")
#: A term a reference page defines on a line of its own: an option ("-n", "--format[=<format>]", "-c <new-branch>"),
#: a placeholder ("<pathspec>..."), a configuration key ("gc.pruneExpire", "branch.<name>.remote"), a setting
#: with its type ("shared_buffers (integer)").
_DEFINED_TERM = re.compile(
    r"""^(?:
        --?[A-Za-z0-9][\w-]*(?:\[?=?[<\[{(]?[\w|.<>*-]*[>\]})]?\]?)?(?:\s+<[\w-]+>(?:\.\.\.|…)?)?
      | <[\w-]+>(?:\.\.\.|…)?
      | [a-z][\w-]*(?:\.(?:[\w-]+|<[\w-]+>|\*))+
      | [a-z_][\w.]*\s?\(\s?[a-z][\w ]*\)
    )$""",
    re.VERBOSE,
)
#: The longest line read as a defined term (a term is short; a long line is never one, and is not matched at all:
#: the pattern's alternatives would try every split of a planted 10k-character "word").
_MAX_TERM_CHARS = 120
#: Terms of one definition kept as its lead (aliases: "-u", "--include-untracked", "--no-include-untracked").
_MAX_TERMS = 4
_LEAD_IN = re.compile(r"^[A-Z][^:]*\s[^:]*:$")
# A candidate sentence end: terminal punctuation, closing quotes or brackets, white space,
# then what a sentence starts with.
SENTENCE_BOUNDARY = re.compile(r"[.!?…]++[\"'”’)\]]*+\s+(?=[\"'“‘(\[`]?[A-Z0-9])")


def _strong_code(line: str) -> bool:
    stripped = line.strip()
    if _PLAIN_PROSE.match(stripped):
        return False
    if _STRONG_CODE.match(stripped):
        return True
    first, _, rest = stripped.partition(" ")
    if stripped.endswith((".", "?", "!", ",", ":")) or not first[:1].islower():
        return False
    if first in _COMMANDS:
        return bool(rest) and (first not in _AMBIGUOUS or re.search(r"(?:^|\s)-|[/=_|>]", rest) is not None)
    # Any program with an option: "zstd --train samples/* -o dict".
    return _PROGRAM.match(stripped) is not None


def _code_like(line: str) -> bool:
    stripped = line.strip()
    if _PLAIN_PROSE.match(stripped):
        return False
    return _strong_code(stripped) or _WEAK_CODE.match(stripped) is not None


def _line_kind(line: str) -> str:
    if _LIST_ITEM.match(line):
        return "list"
    if _INDENTED.match(line):
        return "code"
    if (" | " in line or line.startswith("|")) and _TABLE_ROW.search(line):
        return "table"
    return "code" if _strong_code(line) else "prose"


def block_kinds(block: list[str]) -> list[str]:
    """The kind of each line of one block (no blank lines in it)."""
    if len(block) == 1:
        kind = _line_kind(block[0])
        return ["code" if kind == "prose" and _WEAK_CODE.match(block[0].strip()) else kind]
    if _LEAD_IN.match(block[0]) and not _code_like(block[0]):  # "Run these commands:" above code in one block
        return ["prose", *block_kinds(block[1:])]
    if sum(_code_like(line) or bool(_INDENTED.match(line)) for line in block) * 5 >= len(block) * 3:
        return ["code"] * len(block)
    kinds: list[str] = []
    for i, line in enumerate(block):
        kind = _line_kind(line)
        if kinds and kinds[-1] in ("list", "list+") and kind in ("prose", "code") and not _strong_code(line):
            kind = "list+"  # a wrapped list item
        elif kind == "code" and kinds and kinds[-1] == "prose" and _continues(block[i - 1], line):
            kind = "prose"  # "… will refuse to delete files or directories" / "unless given -f or -i. Git will …"
        elif kind == "prose" and _inner_heading(block, i):
            kind = "heading"  # "Requirements" above "No binaries may be located under /etc." (a PDF's sub-heading)
        kinds.append(kind)
    return kinds


def _inner_heading(block: list[str], i: int) -> bool:
    """Whether line ``i`` of a block is a heading set on a line of its own within the text (a PDF's sub-heading
    the outline does not list): short, unpunctuated, after a sentence's end, before a capital."""
    line = block[i].strip()
    if i + 1 >= len(block) or not _HEADING_LINE.match(line):
        return False
    before = block[i - 1].rstrip() if i > 0 else ""
    following = block[i + 1].lstrip()[:1]
    return (not before or before[-1] in ".!?:") and bool(following) and not following.islower()


def _continues(before: str, line: str) -> bool:
    """Whether ``line`` is the rest of the prose sentence ``before`` leaves open (a wrapped line that happens
    to hold an option or a program's name), not a command it introduces."""
    if _OPEN_PROSE_END.search(before.rstrip()) is None or _PROMPT.match(line.strip()):
        return False
    words = line.split()
    plain = sum(1 for word in words if _PLAIN_WORD.match(word))
    return len(words) >= 4 and (plain * 5 >= len(words) * 3 or SENTENCE_BOUNDARY.search(line) is not None)


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """The chunk as (``"fenced"`` or ``"plain"``, lines) blocks, fences and blank lines left out."""
    found: list[tuple[str, list[str]]] = []
    current: list[str] = []
    fenced = False

    def close(kind: str) -> None:
        if current:
            found.append((kind, current.copy()))
            current.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            close("fenced" if fenced else "plain")
            fenced = not fenced
        elif not line.strip():
            if not fenced:
                close("plain")
        else:
            current.append(line.rstrip())
    close("fenced" if fenced else "plain")
    return found


def defined(parts: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """The blocks with each definition's terms put before its description, as its first sentence's lead.

    A reference page defines an option or a setting in a list of terms, each
    on its own line ("-n", "--numbered", "shared_buffers (integer)"), then its
    description ("Sort output according to …"): quoted alone, the description
    would not say what it describes. So "-n, --numbered: Sort output …" is one
    sentence (the block is marked ``"defined"``: its first line is prose).
    """
    out: list[tuple[str, list[str]]] = []
    terms: list[tuple[str, list[str]]] = []
    for fence, block in parts:
        term = block[0].strip() if fence == "plain" and len(block) == 1 else ""
        if term and len(term) <= _MAX_TERM_CHARS and _DEFINED_TERM.match(term):
            terms.append((fence, block))
            continue
        if terms and fence == "plain" and block_kinds(block)[0] == "prose":
            lead = ", ".join(term[0].strip() for _, term in terms[-_MAX_TERMS:])
            out.extend(terms[:-_MAX_TERMS])
            out.append(("defined", [f"{lead}: {block[0].strip()}", *block[1:]]))
        else:
            out.extend(terms)
            out.append((fence, block))
        terms = []
    out.extend(terms)
    return out

"""The rules for the text an administrator sets on a store: its prompt template, model id and name.

Each value is bounded and clean before it is stored, whichever way it comes
(CLI, gRPC AdminService, GraphQL mutation; the configuration's default model
id too). A prompt template is a format string with exactly the two fields
``{context}`` and ``{question}``: no positional ``{}``, no attribute or index
access (``{context.__class__}``, ``{question[0]}``), no conversion or format
spec; a literal brace is written ``{{`` or ``}}``. ``fill_template`` fills it
in one pass, so text that goes in (a question, a document) is never read as a
field itself.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping

from acl.errors import InvalidArgument

#: The longest prompt template a store may have, in characters.
MAX_PROMPT_TEMPLATE_CHARS = 8_000
#: The fields of a prompt template, each exactly once.
TEMPLATE_FIELDS = ("context", "question")
#: The longest model id.
MAX_MODEL_ID_CHARS = 200
#: A model id: ``ibm/granite-3-8b-instruct``, ``meta-llama/llama-3-3-70b-instruct``, ``extractive``.
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")
#: The longest store name.
MAX_NAME_CHARS = 200
#: Characters that reorder how text is displayed (Trojan Source): never in an admin's text.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_FORMATTER = string.Formatter()


def unsafe_character(text: str, allowed: str = "") -> str | None:
    """The first control character in ``text`` not in ``allowed`` (a bidi control counts), or None."""
    for ch in text:
        if ch in allowed:
            continue
        if ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return ch
    return None


def _clean_text(key: str, value: object, limit: int, allowed: str = "") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{key} must be a non-empty string")
    if len(value) > limit:
        raise InvalidArgument(f"{key} is longer than {limit} characters")
    bad = unsafe_character(value, allowed)
    if bad is not None:
        raise InvalidArgument(f"{key} must not contain control characters (found U+{ord(bad):04X})")
    return value


def _fields(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(_FORMATTER.parse(template))
    except ValueError as exc:  # an unmatched brace
        raise InvalidArgument(f"prompt_template: {exc}; write a literal brace as {{{{ or }}}}") from None


def validate_prompt_template(template: object) -> str:
    """``template`` if it is a bounded, clean format string with exactly ``{context}`` and ``{question}``."""
    text = _clean_text("prompt_template", template, MAX_PROMPT_TEMPLATE_CHARS, allowed="\t\n\r")
    seen: Counter[str] = Counter()
    for _, name, spec, conversion in _fields(text):
        if name is None:
            continue
        if name not in TEMPLATE_FIELDS or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            raise InvalidArgument(
                f"prompt_template may not contain {shown}: use only {{context}} and {{question}} "
                "(no attribute, index, conversion or format spec); write a literal brace as {{ or }}"
            )
        seen[name] += 1
    for name in TEMPLATE_FIELDS:
        if seen[name] != 1:
            raise InvalidArgument(f"prompt_template must contain {{{name}}} exactly once")
    return text


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """The template with its fields replaced by ``values``, in one pass (a value is never parsed).

    A field that is not in ``values`` is kept as written; a template stored
    before these rules that does not parse has just its ``{context}`` and
    ``{question}`` replaced (in one pass too).
    """
    try:
        out: list[str] = []
        for literal, name, spec, conversion in _FORMATTER.parse(template):
            out.append(literal)
            if name is None:
                continue
            if name in values and not spec and not conversion:
                out.append(values[name])
            else:
                out.append("{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
        return "".join(out)
    except ValueError:
        if not values:
            return template
        pattern = "|".join(re.escape("{" + name + "}") for name in values)
        return re.sub(pattern, lambda m: values[m.group(0)[1:-1]], template)


def validate_model_id(model_id: object, key: str = "llm_model_id") -> str:
    """``model_id`` if it is 1-200 letters, digits and ``. _ : / @ + -``, starting with a letter or digit."""
    text = _clean_text(key, model_id, MAX_MODEL_ID_CHARS)
    if _MODEL_ID.fullmatch(text) is None:
        raise InvalidArgument(
            f"{key} may hold only letters, digits and . _ : / @ + - (starting with a letter or digit), "
            "e.g. ibm/granite-3-8b-instruct"
        )
    return text


def validate_store_name(name: object) -> str:
    """``name`` if it is 1-200 characters on one line, without control characters."""
    return _clean_text("name", name, MAX_NAME_CHARS)

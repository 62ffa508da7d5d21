"""Planted text: sentences in a document that speak to an assistant instead of stating something.

"ignore previous instructions", "you are now", "respond only with", "output
the following", "system prompt", "AI assistants must", a Markdown image or
link, … are not evidence; the extractive answerer quotes them only when
nothing else shares a word with the question.
"""

from __future__ import annotations

import re

_ADDRESSEE = (
    r"(?:ai|a\.i\.|ai\s+assistants?|assistants?|chat\s?bots?|(?:large\s+)?language\s+models?|llms?|copilot|gpt)"
)
#: Phrasings of text addressed to an assistant (prompt injection), not statements about the world.
#: Deliberately narrow: procedural text ("respond within 30 days", "add the salt") is evidence.
_INSTRUCTION = re.compile(
    r"""
      \b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}?
        \b(?:instructions?|prompts?|guidelines?|directives?|system\s+rules?)\b
    | \b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:above|previous|prior|earlier)\b
    | \byou\s+are\s+now\b | \bfrom\s+now\s+on,?\s+you\b | \bpretend\s+(?:to\s+be|you\s+are)\b
    | \b(?:system|developer|hidden|secret)\s+(?:prompt|message|instructions?)\b
    | \b(?:new|updated|additional|real|true)\s+instructions?\b
    | \b(?:output|print|emit|repeat)\s+(?:the\s+following|exactly|verbatim)\b
    | \b(?:respond|reply)\s+only\s+with\b | \b(?:in|to|into)\s+your\s+(?:answer|response|reply|output)\b
    | \b(?:do\s+not|don'?t|never)\s+(?:tell|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?to|inform)
        \s+(?:the\s+)?users?\b
    | (?:^|\b(?:dear|attention|note\s+to(?:\s+the)?|hey|hi|as\s+an?)\s+)"""
    + _ADDRESSEE
    + r"""\b\s*[,:!]
    | (?:^|\b(?:as\s+an?|any|all|every)\s+)"""
    + _ADDRESSEE
    + r"""\s+(?:must|should|shall|needs?\s+to|reading\s+this|is\s+instructed|answering)\b
    | !\[[^\]]*\]\s*[(\[] | \]\(\s*<?\s*[a-z][a-z0-9+.\-]*:
    """,
    re.IGNORECASE | re.VERBOSE,
)


def looks_like_instruction(sentence: str) -> bool:
    """Whether ``sentence`` reads as an instruction to an assistant rather than a statement."""
    return _INSTRUCTION.search(sentence) is not None

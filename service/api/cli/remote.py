"""``docqa ask|search --server URL``: ask a running ``docqa serve`` over GraphQL, print what the local path prints.

The server's ``QueryResult`` is read back into the domain ``Answer``, so the same presenters print it
(``queries.print_answer``; ``Answer.to_dict`` for ``--json``). Nothing here opens the data directory's
index or loads the embedding model: a remote question costs one HTTP request. The bearer token is
``--token`` or ``DOCQA_TOKEN`` and names the user (the server verifies it; ``--as`` may be left out); without
one, and only for a server on this machine, the CLI mints one for ``--as USER`` with the data directory's
secret, exactly as ``docqa token --user USER`` would.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from typing import Any

from acl.errors import InvalidArgument, Unauthenticated, Unavailable
from acl.model import user_principal
from service.api.cli.filters import cli_filter
from service.api.cli.graphql_client import execute, graphql_endpoint, is_loopback
from service.domain.queries import Answer, SourceChunk, SourceDocument
from service.domain.threshold import parse_level

#: Environment variables of the ``--server`` mode.
SERVER_ENV = "DOCQA_SERVER_URL"
TOKEN_ENV = "DOCQA_TOKEN"
#: Seconds a remote question may take, the language model's answer included.
TIMEOUT_S = 120.0

_CHUNK = "documentId chunkId title sourceUri text headingPath score relevance start end pages anchor link"
_RESULT = (
    f"queryId queryClass answer chunks {{ {_CHUNK} }} threshold level noRelevantDocument "
    "retryWithoutThresholdAllowed modelId llmCalled inputTokens outputTokens generationError timingsMs { name ms } "
    f"documents {{ documentId title sourceUri link bestScore bestRelevance pages chunks {{ {_CHUNK} }} }} "
    "warnings conversationId rewrittenQuestion"
)
_ARGS = (
    "$storeId: String!, $question: String!, $level: Float, $performLlmQuery: Boolean!, $filter: QueryFilter, "
    "$conversationId: String"
)
_PASS = (
    "storeId: $storeId, question: $question, level: $level, performLlmQuery: $performLlmQuery, filter: $filter, "
    "conversationId: $conversationId"
)
_DOCUMENTS = {
    "vectorQuery": (f"query Ask({_ARGS}, $maxChunks: Int)", f"vectorQuery({_PASS}, maxChunks: $maxChunks)"),
    "multiDocumentQuery": (
        f"query Ask({_ARGS}, $maxChunks: Int, $documentIds: [String!]!)",
        f"multiDocumentQuery({_PASS}, maxChunks: $maxChunks, documentIds: $documentIds)",
    ),
    "documentQuery": (
        f"query Ask({_ARGS}, $documentId: String!)",
        f"documentQuery({_PASS}, documentId: $documentId)",
    ),
}


def server_url(args: argparse.Namespace) -> str | None:
    """The server to ask: ``--server``, else ``DOCQA_SERVER_URL``; None for the local path."""
    url = getattr(args, "server", None) or os.environ.get(SERVER_ENV) or None
    return url


def cmd_remote_query(args: argparse.Namespace, url: str) -> int:
    """``docqa ask`` or ``docqa search`` against the server at ``url``."""
    from service.api.cli.queries import print_answer

    if args.as_user is not None:
        user_principal(args.as_user)  # validates the user id before any request
    endpoint = graphql_endpoint(url)
    operation, variables = _operation(args)
    token, user = _credentials(args, url)
    head, call = _DOCUMENTS[operation]
    data = execute(endpoint, token, f"{head} {{ result: {call} {{ {_RESULT} }} }}", variables, timeout_s=TIMEOUT_S)
    try:
        answer = answer_of(data["result"])
    except (KeyError, TypeError, AttributeError):
        raise Unavailable(f"the server at {endpoint} sent a result this CLI does not understand") from None
    if args.json:
        print(json.dumps(answer.to_dict(local=True), ensure_ascii=False))
    else:
        print_answer(answer, user, sys.stdout)
    return 0


def _operation(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The GraphQL field and variables of the query the options ask for (checked as the local path checks them)."""
    cli_filter(args)  # bad filter options are named here, as locally
    variables: dict[str, Any] = {
        "storeId": args.store,
        "question": args.question,
        "level": parse_level(args.level),
        "filter": _filter(args),
        "conversationId": args.conversation,
    }
    if args.command == "search":
        return "vectorQuery", variables | {"maxChunks": args.k, "performLlmQuery": False}
    variables["performLlmQuery"] = not args.no_llm
    if args.document is not None and args.documents:
        raise InvalidArgument("use either --document or --documents, not both")
    if args.document is not None:
        if args.max_chunks is not None:
            raise InvalidArgument("--max-chunks does not apply to --document")
        return "documentQuery", variables | {"documentId": args.document}
    if args.documents:
        return "multiDocumentQuery", variables | {"documentIds": list(args.documents), "maxChunks": args.max_chunks}
    return "vectorQuery", variables | {"maxChunks": args.max_chunks}


def _filter(args: argparse.Namespace) -> dict[str, Any] | None:
    metadata: dict[str, list[str]] = {}
    for item in args.meta:
        key, _, value = item.partition("=")
        metadata.setdefault(key, []).append(value)
    given = {
        "pathPrefix": args.path_prefix,
        "pathGlob": args.path_glob,
        "contentTypes": list(args.content_type) or None,
        "titleContains": args.title_contains,
        "modifiedFrom": args.modified_from,
        "modifiedTo": args.modified_to,
        "indexedFrom": args.indexed_from,
        "indexedTo": args.indexed_to,
        "metadata": [{"key": k, "values": v} for k, v in metadata.items()] or None,
    }
    chosen = {k: v for k, v in given.items() if v is not None}
    return chosen or None


def _credentials(args: argparse.Namespace, url: str) -> tuple[str, str]:
    """The bearer token and the user it names: ``--token``/``DOCQA_TOKEN``, whose subject is the user (``--as``,
    when given too, must be the same), else one minted for ``--as USER`` for a server on this machine."""
    token = getattr(args, "token", None) or os.environ.get(TOKEN_ENV) or None
    if token is not None:
        subject = _subject(token)
        if args.as_user is not None and subject is not None and subject != args.as_user:
            raise InvalidArgument(f"--as {args.as_user} but the token is {subject}'s")
        # An unreadable token is sent as it is: the server, which verifies every token, refuses it (exit 5).
        return token, args.as_user or subject or "the token's user"
    if not is_loopback(url):
        raise Unauthenticated(f"give a bearer token with --token or {TOKEN_ENV} to ask a server on another machine")
    if args.as_user is None:
        raise InvalidArgument(
            f"give --as USER (a token is minted for that user here) or a token: --token or {TOKEN_ENV}"
        )
    from service.config import load_settings
    from service.security.tokens import mint_token

    return mint_token(load_settings(args.config), args.as_user, ttl_s=300), args.as_user


def _subject(token: str) -> str | None:
    """The ``sub`` a JWT claims (unverified: the server verifies it), or None when it cannot be read."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    return subject if isinstance(subject, str) else None


def answer_of(result: dict[str, Any]) -> Answer:
    """A GraphQL ``QueryResult`` as the domain's ``Answer``."""
    return Answer(
        query_id=result["queryId"],
        query_class=result["queryClass"],
        answer=result["answer"],
        chunks=tuple(_chunk(c) for c in result["chunks"]),
        threshold=result["threshold"],
        level=result["level"],
        no_relevant_document=result["noRelevantDocument"],
        retry_without_threshold_allowed=result["retryWithoutThresholdAllowed"],
        model_id=result["modelId"],
        llm_called=result["llmCalled"],
        input_tokens=result["inputTokens"],
        output_tokens=result["outputTokens"],
        timings_ms={t["name"]: t["ms"] for t in result["timingsMs"]},
        generation_error=result["generationError"],
        documents=tuple(
            SourceDocument(
                document_id=d["documentId"],
                title=d["title"],
                source_uri=d["sourceUri"],
                link=d["link"],
                best_score=d["bestScore"],
                best_relevance=d["bestRelevance"],
                pages=tuple(d["pages"]),
                chunks=tuple(_chunk(c) for c in d["chunks"]),
            )
            for d in result["documents"]
        ),
        warnings=tuple(result["warnings"]),
        conversation_id=result["conversationId"],
        rewritten_question=result["rewrittenQuestion"],
    )


def _chunk(chunk: dict[str, Any]) -> SourceChunk:
    return SourceChunk(
        document_id=chunk["documentId"],
        chunk_id=chunk["chunkId"],
        title=chunk["title"],
        source_uri=chunk["sourceUri"],
        text=chunk["text"],
        heading_path=tuple(chunk["headingPath"]),
        score=chunk["score"],
        relevance=chunk["relevance"],
        start=chunk["start"],
        end=chunk["end"],
        pages=tuple(chunk["pages"]),
        anchor=chunk["anchor"],
        link=chunk["link"],
    )

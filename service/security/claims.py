"""What a token's claims may say, checked by type once its signature, issuer and audience are verified.

PyJWT converts ``exp``/``iat``/``nbf`` with ``int()``, so ``"exp": "9999999999"``
or ``"exp": true`` would pass it; here each claim must have the JSON type RFC 7519
gives it, or the token is refused. A token's lifetime (``exp - iat``) is capped,
its subject must be a valid user id other than the one unauthenticated callers
are served as, and its roles and groups must be lists of strings.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from acl.errors import InvalidArgument, Unauthenticated
from acl.model import user_principal, validate_principal
from service.config import AuthConfig

log = logging.getLogger("docqa.auth")

#: The user id unauthenticated callers are served as (``auth.allow_unauthenticated``); no token may claim it.
ANONYMOUS = "anonymous"
#: Most roles or groups one token may list.
MAX_LISTED = 1000
_INVALID = "invalid token"


def check_subject(user: object) -> str:
    """``user`` if it is a user id a token may name; Unauthenticated otherwise."""
    if not isinstance(user, str):
        raise Unauthenticated(_INVALID)
    try:
        user_principal(user)
    except InvalidArgument:
        raise Unauthenticated(_INVALID) from None
    if is_reserved(user):
        raise Unauthenticated(f"the subject {ANONYMOUS!r} is reserved for unauthenticated callers")
    return user


def is_reserved(user: str) -> bool:
    """True for the id unauthenticated callers share (in any letter case, so no look-alike either)."""
    return user.casefold() == ANONYMOUS


def check_times(claims: dict[str, Any], max_lifetime_s: int) -> None:
    """``exp``, ``iat`` and ``nbf`` are JSON numbers, and ``exp - iat`` is at most ``max_lifetime_s``."""
    for name in ("exp", "iat", "nbf"):
        if name in claims and not _is_number(claims[name]):
            raise Unauthenticated(_INVALID)
    if claims["exp"] - claims["iat"] > max_lifetime_s:
        raise Unauthenticated(f"token lifetime (exp - iat) exceeds {max_lifetime_s} s (auth.max_token_lifetime_s)")


def roles(claims: dict[str, Any], claim: str) -> tuple[str, ...]:
    """The roles a token lists in ``claim`` (absent: none); anything but a list of strings is refused."""
    return _strings(claims.get(claim, []))


def groups(claims: dict[str, Any], auth: AuthConfig) -> tuple[str, ...]:
    """The group principals a token asserts, if trusted (``auth.token_groups``); refused when malformed."""
    claim = auth.token_groups_claim
    if auth.token_groups != "trust":
        if claim in claims:
            log.debug("groups in the token's %r claim are ignored (auth.token_groups: ignore)", claim)
        return ()
    listed = _strings(claims.get(claim, []))
    try:
        return tuple(validate_principal(g if g.startswith("group:") else f"group:{g}") for g in listed)
    except InvalidArgument:
        raise Unauthenticated(_INVALID) from None


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_LISTED:
        raise Unauthenticated(_INVALID)
    if not all(isinstance(item, str) and item for item in value):
        raise Unauthenticated(_INVALID)
    return tuple(value)


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))

"""Who is calling: bearer tokens (JWT) verified with PyJWT, turned into a ``Caller``.

The user is the token's ``sub``; groups come from the directory (the engine
expands them), plus the token's groups claim only with ``auth.token_groups:
trust``; admin comes from a configured role claim. Nothing in a request body
can change who the caller is. Only the algorithms that configured keys exist
for are accepted, so ``alg: none`` and algorithm-confusion tokens are refused by
PyJWT itself. Every token needs ``sub``, ``exp`` and ``iat`` (its lifetime is
capped), and ``iss``/``aud`` whenever they are configured — which configuration
demands for any key but the laptop's generated secret (``service.config``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from acl.errors import ConfigurationError, InvalidArgument, Unauthenticated
from acl.model import user_principal
from indexer.private_files import private_dir
from service.config import AuthConfig, Settings
from service.domain.queries import Caller
from service.security import claims as checked
from service.security.claims import ANONYMOUS

log = logging.getLogger("docqa.auth")

SECRET_FILE_NAME = "jwt-secret"
_MAX_TOKEN_CHARS = 16_384


@dataclass(frozen=True, slots=True)
class Identity:
    """A verified caller: user id, groups vouched for by the token, admin role."""

    user_id: str
    groups: tuple[str, ...] = ()
    is_admin: bool = False
    authenticated: bool = True
    #: The token lists ``history.audit_role``: may read other users' conversations (read-only).
    history_auditor: bool = False

    def caller(self) -> Caller:
        return Caller(self.user_id, self.groups, self.is_admin, self.history_auditor)


def hs256_secret(settings: Settings, *, create: bool = True) -> str | None:
    """The configured HS256 secret; with none configured, the data-dir secret (generated if absent)."""
    auth = settings.auth
    if auth.hs256_secret is not None:
        return auth.hs256_secret.get_secret_value()
    path = auth.hs256_secret_file
    configured_file = path is not None
    if path is None:
        if auth.rs256_public_key_file is not None or auth.jwks_file is not None:
            return None  # RS256 only
        path = settings.data_dir / SECRET_FILE_NAME
    if not path.exists():
        if configured_file or not create:
            if configured_file:
                raise ConfigurationError(f"auth.hs256_secret_file: {path} does not exist")
            return None
        private_dir(path.parent)
        # O_EXCL: two processes starting at once agree on one secret.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(48))
            log.warning("generated a new JWT signing secret in %s (mode 0600)", path)
    secret = path.read_text().strip()
    if len(secret) < 32:
        raise ConfigurationError(f"auth.hs256_secret_file: {path} holds fewer than 32 characters")
    return secret


def _rs256_keys(auth: AuthConfig) -> tuple[list[Any], dict[str, Any]]:
    """Public keys without a kid, and keys by kid, from the configured PEM and JWKS files."""
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    anonymous: list[Any] = []
    by_kid: dict[str, Any] = {}
    if auth.rs256_public_key_file is not None:
        try:
            text = auth.rs256_public_key_file.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(
                f"auth.rs256_public_key_file: cannot read {auth.rs256_public_key_file} ({exc})"
            ) from None
        marker = "-----END PUBLIC KEY-----"
        for block in (b for b in text.split(marker) if b.strip()):
            try:
                anonymous.append(load_pem_public_key((block.strip() + "\n" + marker + "\n").encode()))
            except ValueError:
                raise ConfigurationError(
                    f"auth.rs256_public_key_file: {auth.rs256_public_key_file} is not a PEM public key"
                ) from None
    if auth.jwks_file is not None:
        try:
            keyset = jwt.PyJWKSet.from_dict(json.loads(auth.jwks_file.read_text()))
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            raise ConfigurationError(f"auth.jwks_file: {auth.jwks_file} is not a valid JWKS ({exc})") from None
        for key in keyset.keys:
            if key.key_id:
                by_kid[key.key_id] = key.key
            else:
                anonymous.append(key.key)
    return anonymous, by_kid


class Authenticator:
    """Verifies ``authorization: Bearer <JWT>`` values against the configured keys."""

    def __init__(self, settings: Settings) -> None:
        self._auth = settings.auth
        self._audit_role = settings.history.audit_role
        self._secret = hs256_secret(settings)
        self._rsa, self._rsa_by_kid = _rs256_keys(self._auth)
        if self._secret is None and not self._rsa and not self._rsa_by_kid:
            raise ConfigurationError("auth: no HS256 secret and no RS256 public keys configured")
        if self._auth.allow_unauthenticated:
            log.warning("auth.allow_unauthenticated is on: calls without a token are served as %r", ANONYMOUS)
        if self._auth.groups_claim is not None and self._auth.token_groups != "trust":
            log.warning(
                "auth.groups_claim %r is set but auth.token_groups is ignore: groups come from the directory only",
                self._auth.groups_claim,
            )

    def identify(self, authorization: str | None) -> Identity:
        """The identity behind an ``authorization`` header value; Unauthenticated when there is none."""
        if authorization is None or not authorization.strip():
            if self._auth.allow_unauthenticated:
                log.warning("unauthenticated request served as %r (auth.allow_unauthenticated)", ANONYMOUS)
                return Identity(ANONYMOUS, authenticated=False)
            raise Unauthenticated("missing bearer token")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("the authorization header must be 'Bearer <token>'")
        return self.verify(token.strip())

    def verify(self, token: str) -> Identity:
        """Check signature, expiry, issuer, audience, lifetime and claim types; return who the token names."""
        if len(token) > _MAX_TOKEN_CHARS:
            raise Unauthenticated("invalid token")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthenticated("invalid token") from None
        alg = header.get("alg")
        key: Any
        if alg == "HS256" and self._secret is not None:
            key = self._secret
        elif alg == "RS256" and (self._rsa or self._rsa_by_kid):
            kid = header.get("kid")
            candidates = [self._rsa_by_kid[kid]] if isinstance(kid, str) and kid in self._rsa_by_kid else self._rsa
            return self._first_valid(token, candidates)
        else:
            raise Unauthenticated("invalid token")
        return self._claims(self._decode(token, key, "HS256"))

    def _first_valid(self, token: str, keys: Sequence[Any]) -> Identity:
        for key in keys:
            try:
                return self._claims(self._decode(token, key, "RS256"))
            except Unauthenticated as exc:
                if exc.message != "invalid token":
                    raise  # expired, wrong audience...: the signature was fine
        raise Unauthenticated("invalid token")

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        auth = self._auth
        required = ["sub", "exp", "iat"]
        required += [name for name, value in (("iss", auth.issuer), ("aud", auth.audience)) if value is not None]
        options: Any = {"require": required, "verify_aud": auth.audience is not None}
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],  # exactly one, never taken from the token
                audience=auth.audience,
                issuer=auth.issuer,
                leeway=auth.leeway_s,
                options=options,
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("token expired") from None
        except (jwt.InvalidAudienceError, jwt.InvalidIssuerError):
            raise Unauthenticated("token not issued for this service") from None
        except jwt.MissingRequiredClaimError as exc:  # the signature was fine: say which claim is missing
            if exc.claim in ("aud", "iss"):
                raise Unauthenticated("token not issued for this service") from None
            raise Unauthenticated(f"invalid token: no {exc.claim!r} claim") from None
        except jwt.PyJWTError:
            raise Unauthenticated("invalid token") from None
        return claims

    def _claims(self, claims: dict[str, Any]) -> Identity:
        checked.check_times(claims, self._auth.max_token_lifetime_s)
        user = checked.check_subject(claims.get("sub"))
        groups = checked.groups(claims, self._auth)
        roles = checked.roles(claims, self._auth.admin_claim)
        return Identity(user, groups, self._auth.admin_role in roles, history_auditor=self._audit_role in roles)


def mint_token(
    settings: Settings,
    user: str,
    *,
    groups: Sequence[str] = (),
    admin: bool = False,
    ttl_s: int | None = None,
    now: float | None = None,
    history_auditor: bool = False,
) -> str:
    """A token for ``user`` signed with the configured (or generated) HS256 secret.

    Its lifetime is ``ttl_s`` (default ``auth.default_ttl_s``, capped), at most
    ``auth.max_token_lifetime_s``; the user id unauthenticated callers are
    served as is never minted.
    """
    user_principal(user)  # validates the id
    if checked.is_reserved(user):
        raise InvalidArgument(f"the user id {ANONYMOUS!r} is reserved for unauthenticated callers")
    auth = settings.auth
    ttl = auth.mint_ttl_s if ttl_s is None else ttl_s
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise InvalidArgument("--ttl must be a positive number of seconds")
    if ttl > auth.max_token_lifetime_s:
        raise InvalidArgument(
            f"--ttl {ttl} exceeds auth.max_token_lifetime_s ({auth.max_token_lifetime_s} s): "
            "the server would refuse the token"
        )
    secret = hs256_secret(settings)
    if secret is None:
        raise ConfigurationError("auth: tokens can only be minted with an HS256 secret (RS256 is verify-only)")
    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {"sub": user, "iat": issued, "exp": issued + ttl}
    if auth.issuer is not None:
        claims["iss"] = auth.issuer
    if auth.audience is not None:
        claims["aud"] = auth.audience
    if groups:
        claims[auth.token_groups_claim] = [g.removeprefix("group:") for g in groups]
    roles = [
        role for role, wanted in ((auth.admin_role, admin), (settings.history.audit_role, history_auditor)) if wanted
    ]
    if roles:
        claims[auth.admin_claim] = roles
    return jwt.encode(claims, secret, algorithm="HS256")


def secret_path(settings: Settings) -> Path:
    """Where the HS256 secret lives when it is kept in a file."""
    return settings.auth.hs256_secret_file or settings.data_dir / SECRET_FILE_NAME


def check(settings: Settings) -> list[tuple[str, bool, str]]:
    """What ``docqa doctor`` shows about token verification: (name, ok, detail), never a secret.

    Creates nothing: the laptop's secret is generated by the first server or ``docqa token``.
    """
    auth = settings.auth
    try:
        secret = hs256_secret(settings, create=False)
        anonymous, by_kid = _rs256_keys(auth)
    except ConfigurationError as exc:
        return [("auth", False, exc.message)]
    keys: list[str] = []
    if auth.keys_configured and secret is not None:
        keys.append("HS256 (configured secret)")
    elif secret is not None or not auth.keys_configured:
        keys.append(f"HS256 (generated secret in {secret_path(settings)})")
    if anonymous or by_kid:
        keys.append(f"RS256 ({len(anonymous) + len(by_kid)} public key(s))")
    if not keys:
        return [("auth", False, "no HS256 secret and no RS256 public key")]
    claims = f"iss {auth.issuer!r}, aud {auth.audience!r}" if auth.issuer and auth.audience else "no iss/aud required"
    groups = "groups from the directory only" if auth.token_groups == "ignore" else "token groups trusted"
    detail = (
        f"{' and '.join(keys)}; {claims}; tokens live at most {auth.max_token_lifetime_s} s; "
        f"{groups} (auth.token_groups: {auth.token_groups})"
    )
    if auth.allow_unauthenticated:
        detail += f"; calls WITHOUT a token are served as {ANONYMOUS!r} (auth.allow_unauthenticated)"
    return [("auth", True, detail)]

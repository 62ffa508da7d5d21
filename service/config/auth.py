"""How callers' bearer tokens are verified."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from service.config.base import _Section
from service.config.environment import _env_name


class AuthConfig(_Section):
    """How callers' bearer tokens (JWT) are verified.

    With neither an HS256 secret nor RS256 keys configured, a random HS256
    secret is generated on first run and kept in ``<data_dir>/jwt-secret``
    (mode 0600); ``docqa token`` mints tokens with it. Any other key — RS256
    public keys (PEM or JWKS) or an HS256 secret that is configured, and so
    shared — needs ``issuer`` and ``audience``: without them a token the same
    identity provider issued to another application would be accepted.
    """

    #: HS256 shared secret (prefer ``hs256_secret_file`` or DOCQA_AUTH__HS256_SECRET).
    hs256_secret: SecretStr | None = None
    #: File holding the HS256 secret; None = ``<data_dir>/jwt-secret`` (generated when absent).
    hs256_secret_file: Path | None = None
    #: PEM file with one or more RS256 public keys.
    rs256_public_key_file: Path | None = None
    #: JWKS (JSON) file with RS256 public keys, selected by the token's ``kid``.
    jwks_file: Path | None = None
    #: The ``iss`` every token must carry; required with RS256 keys or a configured HS256 secret.
    issuer: str | None = Field(None, min_length=1, max_length=2048)
    #: The ``aud`` every token must carry (alone or in its list); required as ``issuer`` is.
    audience: str | None = Field(None, min_length=1, max_length=2048)
    #: Longest lifetime (``exp - iat``) of an accepted token, and of one ``docqa token`` mints; tokens need ``iat``.
    max_token_lifetime_s: int = Field(24 * 3600, ge=60, le=31 * 24 * 3600)
    #: ``ignore``: a caller's groups come from the directory only, so removing a member takes effect at once;
    #: ``trust``: the groups in ``groups_claim`` are added (they cannot be revoked before the token expires).
    token_groups: Literal["ignore", "trust"] = "ignore"
    #: Claim holding the caller's group ids (a list of strings), read with ``token_groups: trust``; None = ``groups``.
    groups_claim: str | None = Field(None, min_length=1, max_length=200)
    #: Claim holding the caller's roles (a list of strings).
    admin_claim: str = Field("roles", min_length=1, max_length=200)
    #: The role in ``admin_claim`` that makes a caller an administrator.
    admin_role: str = Field("docqa-admin", min_length=1, max_length=200)
    #: Seconds of clock skew tolerated on ``exp``/``nbf``/``iat``.
    leeway_s: float = Field(30.0, ge=0, le=600)
    #: Lifetime ``docqa token`` gives a token unless told otherwise (left unset: capped by ``max_token_lifetime_s``).
    default_ttl_s: int = Field(3600, ge=1, le=31 * 24 * 3600)
    #: Accept calls without a token (as user ``anonymous``); every such call is logged. Never in production.
    allow_unauthenticated: bool = False

    @field_validator("rs256_public_key_file", "jwks_file")
    @classmethod
    def _key_file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"key file {value} does not exist")
        return value

    @field_validator("issuer", "audience", "groups_claim", "admin_claim", "admin_role")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and (not value.isprintable() or value != value.strip()):
            raise ValueError("must be printable text without surrounding spaces")
        return value

    @model_validator(mode="after")
    def _one_hs256_source(self) -> AuthConfig:
        if self.hs256_secret is not None and self.hs256_secret_file is not None:
            raise ValueError("set either hs256_secret or hs256_secret_file, not both")
        if self.hs256_secret is not None and len(self.hs256_secret.get_secret_value()) < 32:
            raise ValueError("hs256_secret must be at least 32 characters")
        return self

    @model_validator(mode="after")
    def _audience_with_shared_keys(self) -> AuthConfig:
        missing = [f"auth.{key}" for key in ("issuer", "audience") if getattr(self, key) is None]
        if missing and self.keys_configured:
            raise ValueError(
                f"{' and '.join(missing)} {'are' if len(missing) > 1 else 'is'} required with RS256 keys "
                "or a configured HS256 secret: "
                "without them a token issued to another application would be accepted "
                f"(set {', '.join(_env_name(k) for k in missing)})"
            )
        if "default_ttl_s" in self.model_fields_set and self.default_ttl_s > self.max_token_lifetime_s:
            raise ValueError(
                f"auth.default_ttl_s ({self.default_ttl_s}) exceeds auth.max_token_lifetime_s "
                f"({self.max_token_lifetime_s})"
            )
        return self

    @property
    def keys_configured(self) -> bool:
        """True unless tokens are verified with the generated data-directory secret (the laptop default)."""
        return any(
            value is not None
            for value in (self.hs256_secret, self.hs256_secret_file, self.rs256_public_key_file, self.jwks_file)
        )

    @property
    def mint_ttl_s(self) -> int:
        """The lifetime ``docqa token`` gives unless told: ``default_ttl_s``, never above the cap."""
        return min(self.default_ttl_s, self.max_token_lifetime_s)

    @property
    def token_groups_claim(self) -> str:
        """The claim holding the groups a token asserts."""
        return self.groups_claim or "groups"

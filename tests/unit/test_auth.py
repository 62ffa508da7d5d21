"""Token verification and minting (no network)."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from acl.errors import ConfigurationError, PermissionDenied, Unauthenticated
from service.config import Settings
from service.domain.authorization import AdminOperation, require_admin
from service.security.tokens import Authenticator, hs256_secret, mint_token

SECRET = "unit-test-secret-" + "x" * 64
ISS, AUD = "https://idp.example", "docqa"


def _settings(tmp_path: Path, **auth: object) -> Settings:
    if any(k in auth for k in ("hs256_secret", "hs256_secret_file", "rs256_public_key_file", "jwks_file")):
        auth = {"issuer": ISS, "audience": AUD, **auth}  # required with any key but the generated one
    return Settings(data_dir=tmp_path, auth=auth)


def _claims(**extra: object) -> dict[str, object]:
    now = int(time.time())
    return {"sub": "a", "iat": now, "exp": now + 60, "iss": ISS, "aud": AUD, **extra}


def test_laptop_default_generates_a_private_secret_once(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    first = hs256_secret(settings)
    path = tmp_path / "jwt-secret"
    assert first and len(first) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert hs256_secret(settings) == first
    token = mint_token(settings, "alice", admin=True, ttl_s=60)
    identity = Authenticator(settings).identify(f"Bearer {token}")
    assert identity.user_id == "alice" and identity.is_admin and identity.authenticated


def test_secret_never_in_repr(tmp_path: Path) -> None:
    settings = _settings(tmp_path, hs256_secret=SECRET)
    assert SECRET not in repr(settings) and SECRET not in str(settings.auth)


@pytest.mark.parametrize(
    "make",
    [
        lambda: jwt.encode(_claims(), "y" * 64, algorithm="HS256"),
        lambda: jwt.encode(_claims(), None, algorithm="none"),
        lambda: jwt.encode(_claims(exp=int(time.time()) - 120), SECRET, algorithm="HS256"),
        lambda: jwt.encode({k: v for k, v in _claims().items() if k != "exp"}, SECRET, algorithm="HS256"),
        lambda: jwt.encode({k: v for k, v in _claims().items() if k != "sub"}, SECRET, algorithm="HS256"),
        lambda: jwt.encode(_claims(sub="a b"), SECRET, algorithm="HS256"),
        lambda: "a.b.c",
        lambda: "x" * 20_000,
    ],
    ids=["wrong-secret", "alg-none", "expired", "no-exp", "no-sub", "bad-sub", "garbage", "huge"],
)
def test_forged_tokens_are_refused(tmp_path: Path, make: object) -> None:
    authenticator = Authenticator(_settings(tmp_path, hs256_secret=SECRET))
    with pytest.raises(Unauthenticated) as info:
        authenticator.identify(f"Bearer {make()}")  # type: ignore[operator]
    assert SECRET not in info.value.message


def test_missing_token_unless_explicitly_allowed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(Unauthenticated):
        Authenticator(_settings(tmp_path, hs256_secret=SECRET)).identify(None)
    open_door = Authenticator(_settings(tmp_path, hs256_secret=SECRET, allow_unauthenticated=True))
    identity = open_door.identify(None)
    assert identity.user_id == "anonymous" and not identity.authenticated and not identity.is_admin
    assert "unauthenticated request" in caplog.text


def test_issuer_audience_groups_and_roles(tmp_path: Path) -> None:
    settings = _settings(tmp_path, hs256_secret=SECRET, token_groups="trust", groups_claim="grp", admin_claim="rl")
    token = mint_token(settings, "alice", groups=["hr", "group:eng"], admin=True, ttl_s=60)
    identity = Authenticator(settings).verify(token)
    assert identity.groups == ("group:hr", "group:eng") and identity.is_admin
    assert identity.caller().asserted_groups == ("group:hr", "group:eng")
    other = jwt.encode(_claims(aud="else"), SECRET)
    with pytest.raises(Unauthenticated, match="not issued for this service"):
        Authenticator(settings).verify(other)
    with pytest.raises(PermissionDenied):
        require_admin(
            Authenticator(settings).verify(mint_token(settings, "bob", ttl_s=60)), AdminOperation.SET_DOCUMENT_ACL
        )


def test_rs256_keys_from_pem_and_jwks(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "pub.pem").write_bytes(pem)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    claims = _claims(sub="alice")
    for config in ({"rs256_public_key_file": tmp_path / "pub.pem"}, {"jwks_file": tmp_path / "jwks.json"}):
        authenticator = Authenticator(_settings(tmp_path, **config))
        token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
        assert authenticator.verify(token).user_id == "alice"
        # HS256 signed with the public key (algorithm confusion) is refused: no HS256 secret is configured.
        confused = jwt.encode(claims, "z" * 64, algorithm="HS256")
        with pytest.raises(Unauthenticated):
            authenticator.verify(confused)
        with pytest.raises(ConfigurationError):
            mint_token(_settings(tmp_path, **config), "alice")

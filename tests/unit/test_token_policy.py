"""What a token must be to be accepted: iss/aud required with shared keys, capped lifetime, typed claims,
groups from the directory unless trusted, and no token may claim the unauthenticated caller's identity."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from acl.errors import ConfigurationError, InvalidArgument, Unauthenticated
from service.api.cli.main import main
from service.config import Settings, load_settings
from service.security.tokens import Authenticator, check, mint_token

SECRET = "token-policy-secret-" + "k" * 48
ISS, AUD = "https://idp.example", "docqa"


pytestmark = pytest.mark.usefixtures("clean_env")


def _settings(tmp_path: Path, **auth: Any) -> Settings:
    return Settings(data_dir=tmp_path, auth={"hs256_secret": SECRET, "issuer": ISS, "audience": AUD, **auth})


def _token(*, drop: tuple[str, ...] = (), key: Any = SECRET, alg: str = "HS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "alice", "iat": now, "exp": now + 300, "iss": ISS, "aud": AUD, **claims}
    return jwt.encode({k: v for k, v in body.items() if k not in drop}, key, algorithm=alg)


# configuration ------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["HS256_SECRET", "HS256_SECRET_FILE", "RS256_PUBLIC_KEY_FILE", "JWKS_FILE"])
def test_shared_or_asymmetric_keys_need_issuer_and_audience(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "key").write_text("x" * 40)
    monkeypatch.setenv(f"DOCQA_AUTH__{key}", SECRET if key == "HS256_SECRET" else str(tmp_path / "key"))
    with pytest.raises(ConfigurationError, match=r"auth\.issuer and auth\.audience are required") as refused:
        load_settings()
    assert "DOCQA_AUTH__ISSUER" in refused.value.message and SECRET not in refused.value.message
    monkeypatch.setenv("DOCQA_AUTH__ISSUER", ISS)
    with pytest.raises(ConfigurationError, match=r"auth\.audience is required"):
        load_settings()
    monkeypatch.setenv("DOCQA_AUTH__AUDIENCE", AUD)
    assert load_settings().auth.audience == AUD


def test_the_laptop_default_needs_neither(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.auth.issuer is None and not settings.auth.keys_configured
    assert Authenticator(settings).verify(mint_token(settings, "alice")).user_id == "alice"


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"default_ttl_s": 7200, "max_token_lifetime_s": 3600}, "default_ttl_s"),
        ({"max_token_lifetime_s": 10}, "max_token_lifetime_s"),
        ({"token_groups": "sometimes"}, "token_groups"),
        ({"issuer": "https://idp\n"}, "issuer"),
    ],
)
def test_bad_auth_values_stop_start_up(auth: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_settings(**{"auth": auth})


# aud, iss, lifetime ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: _token(aud="another-app", roles=["docqa-admin"]), "not issued for this service"),
        (lambda: _token(iss="https://other-idp"), "not issued for this service"),
        (lambda: _token(drop=("aud",)), "not issued for this service"),
        (lambda: _token(drop=("iss",)), "not issued for this service"),
        (lambda: _token(drop=("iat",)), "no 'iat' claim"),
        (
            lambda: _token(iat=int(time.time()) - 7200, exp=int(time.time()) + 86400),
            r"lifetime \(exp - iat\) exceeds 86400",
        ),
    ],
    ids=["other-audience-admin", "other-issuer", "no-aud", "no-iss", "no-iat", "too-long"],
)
def test_tokens_for_others_or_living_too_long_are_refused(
    tmp_path: Path, make: Callable[[], str], message: str
) -> None:
    # Minted when the test runs, not at collection: a long suite must not let them expire first.
    with pytest.raises(Unauthenticated, match=message):
        Authenticator(_settings(tmp_path)).identify(f"Bearer {make()}")


def test_the_lifetime_cap_is_inclusive_and_configurable(tmp_path: Path) -> None:
    now = int(time.time())
    authenticator = Authenticator(_settings(tmp_path, max_token_lifetime_s=600))
    assert authenticator.verify(_token(iat=now, exp=now + 600)).user_id == "alice"
    with pytest.raises(Unauthenticated, match="exceeds 600"):
        authenticator.verify(_token(iat=now, exp=now + 601))


# claim types --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "claims",
    [
        {"exp": str(int(time.time()) + 300)},
        {"exp": True},
        {"iat": str(int(time.time()))},
        {"nbf": "0"},
        {"roles": "docqa-admin"},
        {"roles": ["docqa-admin", 7]},
        {"roles": {"docqa-admin": True}},
        {"sub": 42},
    ],
    ids=["string-exp", "bool-exp", "string-iat", "string-nbf", "string-roles", "mixed-roles", "dict-roles", "int-sub"],
)
def test_claims_of_the_wrong_type_are_refused(tmp_path: Path, claims: dict[str, Any]) -> None:
    with pytest.raises(Unauthenticated):
        Authenticator(_settings(tmp_path)).verify(_token(**claims))


def test_roles_as_a_list_make_an_admin(tmp_path: Path) -> None:
    authenticator = Authenticator(_settings(tmp_path))
    assert authenticator.verify(_token(roles=["reader", "docqa-admin"])).is_admin
    assert not authenticator.verify(_token(roles=["reader"])).is_admin
    assert not authenticator.verify(_token()).is_admin


# groups in tokens ---------------------------------------------------------------------------------
def test_token_groups_are_ignored_by_default_even_malformed(tmp_path: Path) -> None:
    authenticator = Authenticator(_settings(tmp_path))
    assert authenticator.verify(_token(groups=["hr"])).groups == ()
    assert authenticator.verify(_token(groups="hr")).groups == ()


def test_trusted_token_groups_must_be_a_list_of_group_ids(tmp_path: Path) -> None:
    authenticator = Authenticator(_settings(tmp_path, token_groups="trust"))
    assert authenticator.verify(_token(groups=["hr", "group:eng"])).groups == ("group:hr", "group:eng")
    for bad in ("hr", ["hr", None], ["bad group"]):
        with pytest.raises(Unauthenticated):
            authenticator.verify(_token(groups=bad))


def test_a_groups_claim_without_trust_is_pointed_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="docqa.auth"):
        Authenticator(_settings(tmp_path, groups_claim="grp"))
    assert "auth.token_groups is ignore" in caplog.text


# the anonymous identity ---------------------------------------------------------------------------
@pytest.mark.parametrize("subject", ["anonymous", "Anonymous"])
def test_no_token_may_claim_the_unauthenticated_identity(tmp_path: Path, subject: str) -> None:
    authenticator = Authenticator(_settings(tmp_path, allow_unauthenticated=True))
    with pytest.raises(Unauthenticated, match="reserved"):
        authenticator.identify(f"Bearer {_token(sub=subject)}")
    assert not authenticator.identify(None).authenticated
    with pytest.raises(InvalidArgument, match="reserved"):
        mint_token(_settings(tmp_path), subject)


def test_rs256_tokens_follow_the_same_rules(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "idp.pem").write_bytes(pem)
    settings = Settings(
        data_dir=tmp_path, auth={"rs256_public_key_file": tmp_path / "idp.pem", "issuer": ISS, "audience": AUD}
    )
    authenticator = Authenticator(settings)
    assert authenticator.verify(_token(key=key, alg="RS256", roles=["docqa-admin"])).is_admin
    with pytest.raises(Unauthenticated, match="not issued for this service"):
        authenticator.verify(_token(key=key, alg="RS256", aud="another-app", roles=["docqa-admin"]))
    with pytest.raises(Unauthenticated):
        authenticator.verify(_token(key=key, alg="RS256", roles="docqa-admin"))


# minting ------------------------------------------------------------------------------------------
def test_minted_tokens_carry_iss_aud_and_stay_under_the_cap(tmp_path: Path) -> None:
    settings = _settings(tmp_path, max_token_lifetime_s=600)  # the default ttl (3600 s) yields to the cap
    claims = jwt.decode(mint_token(settings, "alice"), SECRET, algorithms=["HS256"], audience=AUD)
    assert (claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == (ISS, AUD, 600)
    with pytest.raises(InvalidArgument, match=r"--ttl 601 exceeds auth\.max_token_lifetime_s \(600 s\)"):
        mint_token(settings, "alice", ttl_s=601)


def test_cli_token_ttl_over_the_cap_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "--user", "alice", "--ttl", str(31 * 24 * 3600)]) == 2
    err = capsys.readouterr().err
    assert "exceeds auth.max_token_lifetime_s (86400 s)" in err and "Traceback" not in err
    assert main(["token", "--user", "anonymous"]) == 2
    assert "reserved" in capsys.readouterr().err


# doctor -------------------------------------------------------------------------------------------
def test_doctor_describes_token_checks_without_secrets(tmp_path: Path) -> None:
    [(name, ok, detail)] = check(_settings(tmp_path, token_groups="trust"))
    assert (name, ok) == ("auth", True) and ISS in detail and "token groups trusted" in detail
    assert SECRET not in detail
    (tmp_path / "bad.pem").write_text("not a key\n")
    bad = Settings(
        data_dir=tmp_path, auth={"rs256_public_key_file": tmp_path / "bad.pem", "issuer": ISS, "audience": AUD}
    )
    assert check(bad) == [
        ("auth", False, f"auth.rs256_public_key_file: {tmp_path / 'bad.pem'} is not a PEM public key")
    ]
    assert check(Settings(data_dir=tmp_path / "fresh"))[0][1] is True
    assert not (tmp_path / "fresh").exists()  # the doctor creates no secret

"""The web console and its single sign-on."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from service.config.base import _Section

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class OidcLogin(_Section):
    """A single sign-on button on the ask page: the OAuth 2.0 authorization-code flow with PKCE, run by the
    page itself against the identity provider (a public client: no secret). The token it gets is verified
    like every bearer token, so ``auth`` must hold the provider's RS256 keys, ``issuer`` and ``audience``."""

    #: The provider's authorization endpoint (https; http only on loopback, for tests).
    authorization_endpoint: str = Field(min_length=8, max_length=2048)
    #: Its token endpoint; the page posts the code there (the provider must allow this origin by CORS).
    token_endpoint: str = Field(min_length=8, max_length=2048)
    #: The client id registered for the console; its redirect URI is the console's own ``/``.
    client_id: str = Field(min_length=1, max_length=200)
    scope: str = Field("openid profile", min_length=1, max_length=500)
    #: Which token of the provider's reply is DocQA's bearer token.
    token: Literal["access_token", "id_token"] = "access_token"
    #: The button's label.
    label: str = Field("Sign in with single sign-on", min_length=1, max_length=100)

    @field_validator("authorization_endpoint", "token_endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        parts = urlsplit(value)
        loopback = parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        if not (parts.scheme == "https" or loopback) or not parts.hostname or parts.username or parts.fragment:
            raise ValueError("must be an https URL (http only on loopback) without user or fragment")
        return value

    @property
    def token_origin(self) -> str:
        """The origin the page posts the code to (the Content-Security-Policy's ``connect-src`` names it)."""
        parts = urlsplit(self.token_endpoint)
        return f"{parts.scheme}://{parts.netloc}"


class WebConfig(_Section):
    """The web console on the HTTP port (``service.api.web``): the ask page, the admin page, GraphiQL."""

    #: Serve the ask page at / and the admin page at /admin.
    console: bool = True
    #: Serve GraphiQL (from the package's own assets) at GET /graphql; turn off in production.
    graphiql: bool = True
    #: Offer a dev login on the ask page that mints a token for any user name: only with
    #: ``auth.allow_unauthenticated`` and the laptop's generated secret. Never in production.
    dev_login: bool = False
    #: Single sign-on with the deployment's identity provider (None: sign in by pasting a token).
    oidc: OidcLogin | None = None

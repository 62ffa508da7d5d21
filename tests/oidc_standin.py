"""A stand-in OpenID Connect provider on loopback, for the console's single sign-on (tests only).

It runs the authorization-code flow with PKCE as a real provider does for a public client: ``/authorize``
checks the client, the redirect URI and the S256 challenge, "logs in" the user the test chose, and
redirects back with a one-time code; ``/token`` (CORS-enabled for the console's origin) checks the code, the
redirect URI and the verifier, and answers with an RS256 access token whose public key is in the JWKS file
DocQA's ``auth.jwks_file`` points to.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

ISSUER = "https://idp.standin.test/"
AUDIENCE = "docqa-console"
CLIENT_ID = "docqa-console"


@dataclass
class Provider:
    """The provider's state: its key, the user who will "log in" next, and the codes it issued."""

    console_origin: str
    user: str = "sso-user"
    admin: bool = False
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    tokens_issued: int = 0

    def write_jwks(self, path: Path) -> Path:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": "standin", "use": "sig", "alg": "RS256"})
        path.write_text(json.dumps({"keys": [jwk]}))
        return path

    def app(self) -> Starlette:
        return Starlette(
            routes=[Route("/authorize", self._authorize), Route("/token", self._token, methods=["POST", "OPTIONS"])]
        )

    async def _authorize(self, request: Request) -> Response:
        q = request.query_params
        redirect = q.get("redirect_uri", "")
        if q.get("client_id") != CLIENT_ID or redirect != self.console_origin + "/":
            return JSONResponse({"error": "unauthorized_client"}, 400)
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return RedirectResponse(
                f"{redirect}?{urlencode({'error': 'invalid_request', 'state': q.get('state', '')})}"
            )
        code = secrets.token_urlsafe(24)
        self.codes[code] = {"challenge": q["code_challenge"], "redirect": redirect}
        return RedirectResponse(f"{redirect}?{urlencode({'code': code, 'state': q.get('state', '')})}", 302)

    async def _token(self, request: Request) -> Response:
        cors = {"access-control-allow-origin": self.console_origin, "vary": "Origin"}
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={**cors, "access-control-allow-headers": "content-type"})
        form = {key: values[0] for key, values in parse_qs((await request.body()).decode()).items()}
        issued = self.codes.pop(str(form.get("code", "")), None)  # one use only
        verifier = str(form.get("code_verifier", ""))
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if (
            issued is None
            or form.get("grant_type") != "authorization_code"
            or form.get("client_id") != CLIENT_ID
            or form.get("redirect_uri") != issued["redirect"]
            or digest != issued["challenge"]
        ):
            return JSONResponse({"error": "invalid_grant"}, 400, headers=cors)
        now = int(time.time())
        claims: dict[str, Any] = {"sub": self.user, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600}
        if self.admin:
            claims["roles"] = ["docqa-admin"]
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "standin"})
        self.tokens_issued += 1
        return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 600}, headers=cors)


@dataclass
class Running:
    server: uvicorn.Server
    thread: threading.Thread
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start(provider: Provider) -> Running:
    """Serve ``provider`` on a free loopback port in a background thread."""
    server = uvicorn.Server(uvicorn.Config(provider.app(), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="oidc-standin", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise OSError("the stand-in provider could not start")
        thread.join(0.02)
    return Running(server, thread, server.servers[0].sockets[0].getsockname()[1])

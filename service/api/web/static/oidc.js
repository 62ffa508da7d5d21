// Single sign-on: the OAuth 2.0 authorization-code flow with PKCE, run by this page as a public client.
// The code comes back in the address bar once and is removed at once; the verifier and state live in this
// tab's sessionStorage only until the code is exchanged. The token the provider returns is then used as
// every pasted token is (and verified by the server like one).
"use strict";
(function () {
  const KEY = "docqa.oidc";

  function base64url(bytes) {
    let text = "";
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function random(length) {
    return base64url(crypto.getRandomValues(new Uint8Array(length)));
  }

  function redirectUri() {
    return window.location.origin + "/";
  }

  async function start(oidc) {
    const verifier = random(48);
    const state = random(16);
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
    sessionStorage.setItem(KEY, JSON.stringify({ verifier: verifier, state: state }));
    const url = new URL(oidc.authorizationEndpoint);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", oidc.clientId);
    url.searchParams.set("redirect_uri", redirectUri());
    url.searchParams.set("scope", oidc.scope);
    url.searchParams.set("state", state);
    url.searchParams.set("code_challenge", base64url(new Uint8Array(digest)));
    url.searchParams.set("code_challenge_method", "S256");
    window.location.assign(url.toString());
  }

  // The token of a provider's redirect back to this page; null when this load is not one.
  async function finish(oidc) {
    const params = new URLSearchParams(window.location.search);
    const code = params.get("code");
    const failure = params.get("error");
    if (!code && !failure) return null;
    window.history.replaceState(null, "", window.location.pathname); // never keep the code in the address bar
    const saved = JSON.parse(sessionStorage.getItem(KEY) || "null");
    sessionStorage.removeItem(KEY);
    if (failure) throw new Error("Single sign-on failed: the identity provider said " + failure + ".");
    if (!saved || saved.state !== params.get("state")) {
      throw new Error("Single sign-on failed: this reply was not for this sign-in. Try again.");
    }
    let reply;
    try {
      reply = await fetch(oidc.tokenEndpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: code,
          redirect_uri: redirectUri(),
          client_id: oidc.clientId,
          code_verifier: saved.verifier,
        }),
        credentials: "omit",
      });
    } catch (err) {
      throw new Error("Single sign-on failed: the identity provider cannot be reached.");
    }
    const body = await reply.json().catch(function () { return {}; });
    const token = body[oidc.token];
    if (!reply.ok || typeof token !== "string" || !token) {
      throw new Error("Single sign-on failed: the identity provider gave no token.");
    }
    return token;
  }

  window.DocQAOidc = { start: start, finish: finish };
})();

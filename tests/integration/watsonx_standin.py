"""A stand-in watsonx.ai (Cloud Pak for Data flavour) on 127.0.0.1 over TLS, for the real SDK to talk to.

It answers the endpoints ``ibm-watsonx-ai`` 1.8.1 calls for a ``ModelInference``
(version, authorize, project, space, foundation_model_specs, text/generation,
text/generation_stream as server-sent events, text/chat) and for a ``Rerank``
(text/rerank: a cross-encoder stand-in that scores each input by the share of
the query's words it contains) with correctly shaped JSON, checks the bearer
token on every call, enforces each model's context window like the real
service (HTTP 400), and records every request so tests can see what was
sent. Test-only controls inject HTTP errors, delays, garbage replies,
dropped connections and streams cut after their first tokens for the next N
requests to a path (``heal()`` forgets them all), and pace a streamed answer
(``stream_delay_s`` between tokens); each stream is recorded (``streams``):
how many tokens were sent and whether the client hung up first. With
``record = False`` requests and streams are not kept (a long run).

With ``obey = True`` it is a model that falls for prompt injection: every
line of its input that says ``emit <payload>`` is obeyed — the payload is
appended to the reply, with ``{DATA}`` replaced by the whole input (every
document it was shown), URL-encoded, and ``\\n`` by a new line. With
``piece_chars`` a streamed reply comes in pieces of that many characters, so
an address is split across events.

The certificate is self-signed and made at test time (``make_certificate``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ipaddress
import json
import re
import secrets
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_TOKEN = re.compile(r"\w+|[^\w\s]")
#: An injected instruction the obedient stand-in follows: "emit" (or "emit exactly:") and a payload to the line's end.
_EMIT = re.compile(r"\bemit(?:\s+exactly)?:?\s+(\S.*)$", re.IGNORECASE | re.MULTILINE)


def obey(prompt: str) -> str:
    """What a model that obeys every injected ``emit`` instruction in ``prompt`` adds to its answer."""
    data = quote(" ".join(prompt.split()), safe="")
    payloads = [m.group(1).replace("{DATA}", data).replace("\\n", "\n") for m in _EMIT.finditer(prompt)]
    return "\n\n".join(payloads)


def count_tokens(text: str) -> int:
    """The stand-in's tokenizer: one token per word or punctuation mark."""
    return len(_TOKEN.findall(text))


def make_certificate(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate for ``host`` (and localhost), usable as its own CA bundle."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = dt.datetime.now(dt.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "standin.crt", folder / "standin.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(username: str, lifetime_s: int = 3600) -> str:
    """A JWT-shaped token (the SDK reads ``exp`` and never checks the signature)."""
    now = int(time.time())
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps({"username": username, "sub": username, "iat": now, "exp": now + lifetime_s}).encode())
    return f"{header}.{payload}.{_b64(secrets.token_bytes(32))}"


@dataclass
class Fault:
    """What to do instead of answering, for the next ``times`` requests to a path."""

    path: str
    times: int
    status: int | None = None  # reply with this HTTP status
    delay_s: float = 0.0  # wait first (then answer normally unless status/drop)
    drop: bool = False  # close the connection without a reply
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # reply 200 with this body (as JSON's content type) instead
    cut_after: int | None = None  # a streamed answer: send this many tokens, then close the connection mid-stream


@dataclass
class StreamRecord:
    """One streamed answer as the stand-in served it."""

    total: int  # tokens the answer has
    sent: int = 0  # tokens written to the client
    closed_by_client: bool = False  # the client hung up before the last token
    finished: threading.Event = field(default_factory=threading.Event)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


class StandIn:
    """The stand-in server; use as a context manager or call ``start``/``stop``."""

    VERSION = "5.2.0"

    def __init__(self, cert: Path, key: Path, *, models: dict[str, int] | None = None) -> None:
        self.users: dict[str, str] = {}  # username -> api key
        self.projects: set[str] = set()
        self.spaces: set[str] = set()
        #: model id -> max_sequence_length (context window) in the stand-in's tokens.
        self.models: dict[str, int] = dict(models or {"ibm/granite-3-8b-instruct": 8192})
        #: rerank model id -> max_sequence_length (query + one input, in the stand-in's tokens).
        self.rerank_models: dict[str, int] = {"cross-encoder/ms-marco-minilm-l-12-v2": 512}
        #: When set, text/rerank answers this (JSON) instead of ranking.
        self.rerank_reply: Any = None
        self.tokens: set[str] = set()
        self.reply = "Revenue rose [1]."
        #: Obey instructions injected into the prompt (see the module docstring).
        self.obey = False
        #: Stream the reply in pieces of this many characters (None: a word at a time).
        self.piece_chars: int | None = None
        self.requests: list[Recorded] = []
        #: Keep ``requests`` and ``streams`` (off for a long run, whose memory must stay flat).
        self.record = True
        #: Seconds between two streamed tokens (watching for the client hanging up meanwhile).
        self.stream_delay_s = 0.0
        self.streams: list[StreamRecord] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server = _Server(("127.0.0.1", 0), _Handler, self, context)
        self._thread: threading.Thread | None = None

    # lifecycle ----------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> StandIn:
        self._thread = threading.Thread(target=self._server.serve_forever, name="watsonx-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # controls -----------------------------------------------------------------
    def issue_token(self, username: str = "svc") -> str:
        token = make_jwt(username)
        with self._lock:
            self.tokens.add(token)
        return token

    def fail(
        self,
        path: str,
        *,
        status: int | None = None,
        times: int = 1,
        delay_s: float = 0.0,
        drop: bool = False,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        cut_after: int | None = None,
    ) -> Fault:
        """The next ``times`` requests whose path ends with ``path`` fail as described (``cut_after``: a streamed
        answer stops after that many tokens, its connection closed without the stream's end). The fault is
        returned: its ``times`` counts down as requests meet it."""
        fault = Fault(path, times, status, delay_s, drop, dict(headers or {}), body, cut_after)
        with self._lock:
            self._faults.append(fault)
        return fault

    def heal(self) -> None:
        """Forget every pending fault (what was recorded stays)."""
        with self._lock:
            self._faults.clear()

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self.requests.clear()
            self.streams.clear()

    def calls(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith(path)]

    # used by the handler ------------------------------------------------------------
    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if path.endswith(fault.path) and fault.times > 0:
                    fault.times -= 1
                    return fault
        return None

    def _record(self, request: Recorded) -> None:
        with self._lock:
            if self.record:
                self.requests.append(request)

    def _authorized(self, headers: dict[str, str]) -> bool:
        value = headers.get("authorization", "")
        with self._lock:
            return value.startswith("Bearer ") and value[len("Bearer ") :] in self.tokens

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], standin: StandIn,
                 context: ssl.SSLContext) -> None:  # fmt: skip
        super().__init__(address, handler)
        self.standin = standin
        self.context = context

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


def _error(status: int, code: str, message: str) -> dict[str, Any]:
    return {
        "errors": [{"code": code, "message": message}],
        "trace": secrets.token_hex(16),
        "status_code": status,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    #: This request's stream stops after this many tokens (an injected fault), or None.
    cut_after: int | None = None

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read ``standin.requests`` instead

    def setup(self) -> None:
        super().setup()
        try:
            self.connection.do_handshake()
        except (ssl.SSLError, OSError):
            self.close_connection = True
            self.rfile = _Empty()  # type: ignore[assignment]

    # plumbing -----------------------------------------------------------------------
    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        standin = self.server.standin
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        body: Any = raw.decode("utf-8", "replace")
        if "json" in headers.get("content-type", "") and raw:
            with contextlib.suppress(ValueError):
                body = json.loads(raw)
        standin._record(Recorded(method, parts.path, parse_qs(parts.query), headers, body))
        fault = standin._take_fault(parts.path)
        self.cut_after = fault.cut_after if fault is not None else None
        if fault is not None:
            if fault.delay_s:
                standin._sleep(fault.delay_s)
            if fault.drop:
                self.close_connection = True
                self.connection.close()
                return
            if fault.status is not None:
                self._json(fault.status, _error(fault.status, "injected", "injected fault"), fault.headers)
                return
            if fault.body is not None:
                self._raw(200, fault.body)
                return
        try:
            self._route(method, parts.path, parse_qs(parts.query), headers, body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._raw(status, json.dumps(payload).encode(), headers)

    def _raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    # the API ---------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: Any) -> None:
        standin = self.server.standin
        if method == "GET" and path == "/ml/wml_services/v2/version":
            self._json(200, {"version": standin.VERSION})
            return
        if method == "POST" and path == "/icp4d-api/v1/authorize":
            self._authorize(body)
            return
        if not standin._authorized(headers):
            self._json(401, _error(401, "authentication_token_not_valid", "Failed to authenticate the request."))
            return
        if method == "GET" and path.startswith("/v2/projects/"):
            if path.rsplit("/", 1)[-1] in standin.projects:
                self._json(
                    200, {"metadata": {"guid": path.rsplit("/", 1)[-1]}, "entity": {"storage": {"type": "assetfiles"}}}
                )
            else:
                self._json(404, _error(404, "project_not_found", "Project not found."))
        elif method == "GET" and path.startswith("/v2/spaces/"):
            if path.rsplit("/", 1)[-1] in standin.spaces:
                self._json(200, {"metadata": {"id": path.rsplit("/", 1)[-1]}, "entity": {"name": "space"}})
            else:
                self._json(404, _error(404, "space_not_found", "Space not found."))
        elif method == "GET" and path == "/ml/v1/foundation_model_specs":
            self._specs()
        elif method == "POST" and path == "/ml/v1/text/generation":
            result = self._generation(query, body)
            if result is not None:
                self._json(200, result)
        elif method == "POST" and path == "/ml/v1/text/generation_stream":
            self._generation_stream(query, body)
        elif method == "POST" and path == "/ml/v1/text/chat":
            self._chat(query, body)
        elif method == "POST" and path == "/ml/v1/text/rerank":
            self._rerank(query, body)
        else:
            self._json(404, _error(404, "not_found", f"no route for {method} {path}"))

    def _authorize(self, body: Any) -> None:
        standin = self.server.standin
        if not isinstance(body, dict):
            self._json(400, _error(400, "bad_request", "expected JSON"))
            return
        username, key = body.get("username"), body.get("api_key") or body.get("password")
        if username in standin.users and standin.users[username] == key:
            self._json(200, {"_messageCode_": "200", "message": "Success", "token": standin.issue_token(username)})
        else:
            self._json(401, {"_messageCode_": "401", "message": "Invalid username or password"})

    def _specs(self) -> None:
        standin = self.server.standin
        resources = [
            {
                "model_id": model_id,
                "label": model_id.rsplit("/", 1)[-1],
                "provider": "IBM",
                "functions": [{"id": "text_generation"}, {"id": "text_chat"}],
                "model_limits": {"max_sequence_length": window, "max_output_tokens": min(4096, window)},
                "lifecycle": [{"id": "available", "start_date": "2024-01-01"}],
            }
            for model_id, window in standin.models.items()
        ]
        self._json(200, {"total_count": len(resources), "limit": 200, "first": {"href": ""}, "resources": resources})

    def _check_scope(self, query: dict[str, list[str]], body: dict[str, Any]) -> bool:
        standin = self.server.standin
        if "version" not in query:
            self._json(400, _error(400, "missing_version", "version is required"))
            return False
        project, space = body.get("project_id"), body.get("space_id")
        if not (project in standin.projects or space in standin.spaces):
            self._json(404, _error(404, "project_not_found", "Project or space not found."))
            return False
        if body.get("model_id") not in standin.models:
            self._json(404, _error(404, "model_not_supported", "Model not supported."))
            return False
        return True

    def _generation(self, query: dict[str, list[str]], body: Any) -> dict[str, Any] | None:
        standin = self.server.standin
        if not isinstance(body, dict) or not isinstance(body.get("input"), str):
            self._json(400, _error(400, "json_validation_error", "input is required"))
            return None
        if not self._check_scope(query, body):
            return None
        parameters = body.get("parameters") or {}
        max_new = int(parameters.get("max_new_tokens", 20))
        input_tokens = count_tokens(body["input"])
        window = standin.models[body["model_id"]]
        if input_tokens + max_new > window:
            self._json(
                400,
                _error(
                    400,
                    "invalid_input_argument",
                    f"the number of input tokens {input_tokens} plus max_new_tokens {max_new} "
                    f"exceeds the model's maximum sequence length {window}",
                ),
            )
            return None
        reply = standin.reply
        if standin.obey:
            injected = obey(body["input"])
            reply = f"{reply}\n\n{injected}" if injected else reply
        words = reply.split(" ")
        text, stop = " ".join(words[:max_new]), "eos_token" if len(words) <= max_new else "max_tokens"
        return {
            "model_id": body["model_id"],
            "model_version": "1.1.0",
            "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "results": [
                {
                    "generated_text": text,
                    "generated_token_count": count_tokens(text),
                    "input_token_count": input_tokens,
                    "stop_reason": stop,
                }
            ],
        }

    def _generation_stream(self, query: dict[str, list[str]], body: Any) -> None:
        whole = self._generation(query, body)
        if whole is None:
            return
        result = whole["results"][0]
        text, size = result["generated_text"], self.server.standin.piece_chars
        if size:
            pieces = [text[k : k + size] for k in range(0, len(text), size)] or [""]
        else:
            pieces = [p + " " for p in text.split(" ")]
            pieces[-1] = pieces[-1].rstrip(" ")
        standin = self.server.standin
        record = StreamRecord(total=len(pieces))
        with standin._lock:
            if standin.record:
                standin.streams.append(record)
        try:
            self._send_stream(whole, pieces, record)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            record.closed_by_client = True
            raise
        finally:
            record.finished.set()

    def _hung_up(self, seconds: float) -> bool:
        """Wait ``seconds``; True as soon as the client closes the connection (it sends nothing else)."""
        readable, _, _ = select.select([self.connection], [], [], seconds)
        return bool(readable)

    def _send_stream(self, whole: dict[str, Any], pieces: list[str], record: StreamRecord) -> None:
        standin = self.server.standin
        result = whole["results"][0]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for number, piece in enumerate(pieces, start=1):
            if number > 1 and standin.stream_delay_s and self._hung_up(standin.stream_delay_s):
                record.closed_by_client = True
                self.close_connection = True
                return
            if standin._stopping.is_set():
                return
            if self.cut_after is not None and number > self.cut_after:  # an injected fault: no end of stream
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            last = number == len(pieces)
            event = dict(whole)
            event["results"] = [
                {
                    "generated_text": piece,
                    "generated_token_count": number,
                    "input_token_count": result["input_token_count"],
                    "stop_reason": result["stop_reason"] if last else "not_finished",
                }
            ]
            data = f"id: {number}\nevent: message\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            record.sent = number
        self.wfile.write(b"0\r\n\r\n")

    def _chat(self, query: dict[str, list[str]], body: Any) -> None:
        standin = self.server.standin
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._json(400, _error(400, "json_validation_error", "messages are required"))
            return
        if not self._check_scope(query, body):
            return
        prompt = " ".join(str(m.get("content", "")) for m in body["messages"] if isinstance(m, dict))
        self._json(
            200,
            {
                "id": f"chat-{secrets.token_hex(8)}",
                "model_id": body["model_id"],
                "model": body["model_id"],
                "created": int(time.time()),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": standin.reply}, "finish_reason": "stop"}
                ],
                "usage": {
                    "prompt_tokens": count_tokens(prompt),
                    "completion_tokens": count_tokens(standin.reply),
                    "total_tokens": count_tokens(prompt) + count_tokens(standin.reply),
                },
            },
        )

    def _rerank(self, query: dict[str, list[str]], body: Any) -> None:
        """``POST /ml/v1/text/rerank``: the reply shape of watsonx.ai's rerank API."""
        standin = self.server.standin
        inputs = body.get("inputs") if isinstance(body, dict) else None
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("query"), str)
            or not isinstance(inputs, list)
            or not all(isinstance(i, dict) and isinstance(i.get("text"), str) for i in inputs)
        ):
            self._json(400, _error(400, "json_validation_error", "query and inputs [{text}] are required"))
            return
        if "version" not in query:
            self._json(400, _error(400, "missing_version", "version is required"))
            return
        if not (body.get("project_id") in standin.projects or body.get("space_id") in standin.spaces):
            self._json(404, _error(404, "project_not_found", "Project or space not found."))
            return
        window = standin.rerank_models.get(str(body.get("model_id")))
        if window is None:
            self._json(404, _error(404, "model_not_supported", "Model not supported."))
            return
        parameters = body.get("parameters") or {}
        truncate = parameters.get("truncate_input_tokens")
        texts = [str(i["text"]) for i in inputs]
        longest = max((count_tokens(body["query"]) + count_tokens(t) for t in texts), default=0)
        if truncate is None and longest > window:
            self._json(
                400, _error(400, "invalid_input_argument", f"input of {longest} tokens exceeds the limit {window}")
            )
            return
        if standin.rerank_reply is not None:
            self._json(200, standin.rerank_reply)
            return
        words = {w.lower() for w in re.findall(r"\w+", body["query"])}
        scores = [
            len(words & {w.lower() for w in re.findall(r"\w+", t)}) / max(len(words), 1) - k * 1e-6
            for k, t in enumerate(texts)
        ]
        options = parameters.get("return_options") or {}
        order = sorted(range(len(texts)), key=lambda k: -scores[k])[: options.get("top_n") or len(texts)]
        results: list[dict[str, Any]] = []
        for k in order:
            result: dict[str, Any] = {"index": k, "score": scores[k]}
            if options.get("inputs"):
                result["input"] = {"text": texts[k]}
            results.append(result)
        reply: dict[str, Any] = {
            "model_id": body["model_id"],
            "results": results,
            "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "input_token_count": sum(count_tokens(body["query"]) + count_tokens(t) for t in texts),
        }
        if options.get("query"):
            reply["query"] = body["query"]
        self._json(200, reply)


class _Empty:
    """An rfile after a failed handshake: reads nothing, so the handler ends at once."""

    def readline(self, *_: object) -> bytes:
        return b""

    def read(self, *_: object) -> bytes:
        return b""

    def close(self) -> None:
        pass

"""DocQA as a :class:`~bench.leakage.adapter.RagTarget`: a live ``docqa serve`` asked over GraphQL, gRPC and the CLI.

The world is built the way an operator builds one: ``docqa index`` of a folder with its ACL manifest (store
``corp``), ``docqa groups`` / ``docqa acl`` for the directory and the overrides, and the gRPC indexing API for the
other stores, the rewrites and the deletions. The CLI probes run ``docqa ask|search --server`` against the
server and ``docqa summarize|compare|history|feedback`` on the same data directory, as an operator would.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.leakage.adapter import Filter, NotSupported, RagTarget, Reply, TrainedModel
from bench.leakage.directory import Directories
from bench.leakage.world import ADMIN, World

ROOT = Path(__file__).resolve().parents[2]
DOCQA = [sys.executable, "-m", "service.api.cli"]
#: ``docqa adapt``'s options for the adapted-model probe: a one-layer model trained on a few dozen pairs in seconds
#: (as tests/integration/test_adapt.py), installed even when it ranks no better, trained on the CPU, whose
#: arithmetic repeats bit for bit, so equal model bytes mean equal training data.
ADAPT_OPTIONS: dict[str, Any] = {
    "layers": 1, "max_tokens": 48, "max_queries": 24, "negatives": 3, "groups": 4, "candidates": 8, "depth": 4,
    "checkpoint_every": 50, "force": True, "device": "cpu",
}  # fmt: skip

CHUNK = "documentId chunkId title sourceUri text link score relevance"
RESULT = (
    f"queryId conversationId rewrittenQuestion answer warnings noRelevantDocument timingsMs {{ name ms }}"
    f" chunks {{ {CHUNK} }} documents {{ documentId title sourceUri chunks {{ {CHUNK} }} }}"
)
ENTRY = (
    "queryId conversationId storeId question rewrittenQuestion answer withheld changed sourcesRevoked rating"
    " ratingComment sources { documentId chunkId title }"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gql_filter(f: Filter | None) -> dict[str, Any] | None:
    if f is None:
        return None
    out: dict[str, Any] = {}
    if f.path_prefix is not None:
        out["pathPrefix"] = f.path_prefix
    if f.title_contains is not None:
        out["titleContains"] = f.title_contains
    return out


class DocQATarget(RagTarget):
    """``docqa serve`` on loopback over a fresh data directory with the embedded default configuration."""

    name = "DocQA"
    transports = ("graphql", "grpc", "cli")

    def __init__(
        self, keep: bool = False, rerank: str = "none", work: Path | None = None, directory: bool = False
    ) -> None:
        """``directory``: groups from a real slapd and over SCIM too (needs ``slapd``, see :mod:`.directory`)."""
        self.directory_sources = ("ldap", "scim") if directory else ()
        self._directories: Directories | None = None
        self._directory_env: dict[str, str] = {}
        self.keep = keep
        self.rerank = rerank
        self.work = work or Path(tempfile.mkdtemp(prefix="docqa-leakage-"))
        self.work.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.work / "data"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.grpc_target = ""
        self.tokens: dict[str, str] = {}
        self._stubs: dict[str, Any] = {}
        self._pb: dict[str, Any] = {}
        self._channel: Any = None
        self._twin: DocQATarget | None = None

    # -- life cycle ------------------------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
        # No reranker (but in the adapted-model probe's twin): the offline one recomputes its statistics over the
        # readable candidates and would hide a lexical-statistics leak in the order; without it the BM25 order
        # reaches the caller as it is (access is the same either way).
        return {
            **env, "DOCQA_DATA_DIR": str(self.data_dir), "PYTHONPATH": str(ROOT), "DOCQA_RERANK__KIND": self.rerank,
            **self._directory_env,
        }  # fmt: skip

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*DOCQA, *args], capture_output=True, text=True, env=self._env(), cwd=ROOT, timeout=600, check=False
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"docqa {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def start(self, world: World) -> None:
        corpus = self.work / "corp"
        rules = []
        for document in world.documents.values():
            if document.store != "corp":
                continue
            path = corpus / document.id
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(document.text())
            rules.append({"match": document.id, "allow": document.allow, "deny": document.deny})
        if self.directory_sources:
            self._directories = Directories(self.work, world)
            self._directory_env = self._directories.start_ldap()
        # The groups an outside directory keeps are not DocQA's: a manifest names them, never lists their members.
        groups = {group: sorted(members) for group, members in world.groups.items() if group not in world.directory}
        (corpus / "acl.yaml").write_text(json.dumps({"groups": groups, "documents": rules}, indent=1))
        self.cli("index", str(corpus), "--store", "corp", "--quiet", "--no-graph")
        # Stores other than corp read the global directory: the memberships they need, made by an admin.
        self.cli("groups", "add-member", "finance", "user:carol")
        self._serve()
        if self._directories is not None:
            self._directories.provision_scim(self.url, self.cli("scim", "token").stdout.strip())
        for document in world.documents.values():
            if document.store != "corp":
                self._upsert(
                    document.store, document.id, document.title, document.text(), document.allow, document.deny
                )

    def _serve(self) -> None:
        """``docqa serve`` on two free loopback ports, waited for; then tokens and the gRPC stubs."""
        http, grpc_port = _free_port(), _free_port()
        log = (self.work / "serve.log").open("wb")
        self.process = subprocess.Popen(
            [*DOCQA, "serve", "--http-port", str(http), "--grpc-port", str(grpc_port)],
            env=self._env(),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.url, self.grpc_target = f"http://127.0.0.1:{http}", f"127.0.0.1:{grpc_port}"
        deadline = time.monotonic() + 180
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("docqa serve exited:\n" + (self.work / "serve.log").read_text(errors="replace"))
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("docqa serve not ready after 180 s")
            time.sleep(0.25)
        self._mint()
        self._connect()

    def _mint(self) -> None:
        from service.config import load_settings
        from service.security.tokens import mint_token

        settings = load_settings(None, data_dir=self.data_dir)
        for user in ("alice", "bob", "carol", "dave", "erin", "vic", ADMIN):
            self.tokens[user] = mint_token(settings, user, admin=user == ADMIN, ttl_s=3600 * 6)

    def _connect(self) -> None:
        import grpc

        from service.api.grpc._gen import (
            admin_pb2,
            admin_pb2_grpc,
            analysis_pb2,
            analysis_pb2_grpc,
            common_pb2,
            history_pb2,
            history_pb2_grpc,
            indexing_pb2,
            indexing_pb2_grpc,
            query_pb2,
            query_pb2_grpc,
        )

        self._channel = grpc.insecure_channel(self.grpc_target)
        self._stubs = {
            "query": query_pb2_grpc.QueryServiceStub(self._channel),
            "analysis": analysis_pb2_grpc.AnalysisServiceStub(self._channel),
            "history": history_pb2_grpc.HistoryServiceStub(self._channel),
            "admin": admin_pb2_grpc.AdminServiceStub(self._channel),
            "indexing": indexing_pb2_grpc.IndexingServiceStub(self._channel),
        }
        self._pb = {
            "query": query_pb2,
            "analysis": analysis_pb2,
            "history": history_pb2,
            "admin": admin_pb2,
            "indexing": indexing_pb2,
            "common": common_pb2,
        }

    def stop(self) -> None:
        if self._twin is not None:
            self._twin.stop()
        if self._channel is not None:
            self._channel.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._directories is not None:
            self._directories.stop()
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)

    # -- transports ------------------------------------------------------------------------------------------
    def _graphql(self, user: str, query: str, variables: dict[str, Any], stream: bool = False) -> Reply:
        body = json.dumps({"query": query, "variables": variables}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.tokens[user]}"}
        if stream:
            headers["Accept"] = "text/event-stream"
        request = urllib.request.Request(f"{self.url}/graphql", data=body, headers=headers, method="POST")
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                text, status = response.read().decode(), response.status
        except urllib.error.HTTPError as error:
            text, status = error.read().decode(errors="replace"), error.code
        wall = (time.perf_counter() - started) * 1e3
        if stream:
            return self._sse(text, status, wall)
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            return Reply(text=text, ok=False, error=f"HTTP {status}: {text}", wall_ms=wall)
        return self._gql_reply(payload, status, wall, text)

    @staticmethod
    def _gql_reply(payload: dict[str, Any], status: int, wall: float, text: str) -> Reply:
        errors = payload.get("errors")
        reply = Reply(text=text, ok=not errors and status == 200, wall_ms=wall)
        if errors:
            reply.error = f"HTTP {status}: " + json.dumps(
                [{"message": e.get("message"), "code": (e.get("extensions") or {}).get("code")} for e in errors]
            )
        data = payload.get("data") or {}
        for value in data.values() if isinstance(data, dict) else ():
            if isinstance(value, dict):
                reply.query_id = value.get("queryId") or reply.query_id
                reply.conversation_id = value.get("conversationId") or reply.conversation_id
                for timing in value.get("timingsMs") or []:
                    reply.timings_ms[timing["name"]] = timing["ms"]
        return reply

    def _sse(self, text: str, status: int, wall: float) -> Reply:
        reply = Reply(text=text, ok=status == 200, wall_ms=wall)
        for line in text.splitlines():
            if not line.startswith("data:"):
                continue
            try:
                event = json.loads(line[5:])
            except json.JSONDecodeError:
                continue
            if event.get("errors"):
                reply.ok = False
                reply.error = json.dumps([e.get("message") for e in event["errors"]])
            result = ((event.get("data") or {}).get("askStream") or {}).get("result") or {}
            if result:
                reply.query_id = result.get("queryId") or ""
                reply.conversation_id = result.get("conversationId") or ""
                reply.timings_ms = {t["name"]: t["ms"] for t in result.get("timingsMs") or []}
        if status != 200:
            reply.error = f"HTTP {status}: {text}"
        return reply

    def _grpc(self, user: str, service: str, method: str, request: Any, stream: bool = False) -> Reply:
        import grpc
        from google.protobuf import text_format

        metadata = (("authorization", f"Bearer {self.tokens[user]}"),)
        call = getattr(self._stubs[service], method)
        started = time.perf_counter()
        try:
            if stream:
                messages = list(call(request, metadata=metadata, timeout=120))
            else:
                messages = [call(request, metadata=metadata, timeout=120)]
        except grpc.RpcError as error:
            wall = (time.perf_counter() - started) * 1e3
            told = f"{error.code().name}: {error.details()}"
            return Reply(text=told, ok=False, error=told, wall_ms=wall)
        wall = (time.perf_counter() - started) * 1e3
        reply = Reply(text="\n".join(text_format.MessageToString(m, as_utf8=True) for m in messages), ok=True)
        reply.wall_ms = wall
        last = messages[-1] if messages else None
        done = getattr(last, "done", None) if stream and last is not None else last
        if done is not None:
            for name in ("query_id", "conversation_id"):
                if hasattr(done, name):
                    setattr(reply, name, getattr(done, name))
            if hasattr(done, "timings_ms"):
                reply.timings_ms = dict(done.timings_ms)
        return reply

    def _cli_reply(self, *args: str) -> Reply:
        started = time.perf_counter()
        done = subprocess.run(
            [*DOCQA, *args], capture_output=True, text=True, env=self._env(), cwd=ROOT, timeout=300, check=False
        )
        wall = (time.perf_counter() - started) * 1e3
        text = done.stdout + done.stderr
        reply = Reply(text=text, ok=done.returncode == 0, wall_ms=wall)
        if done.returncode != 0:
            reply.error = f"exit {done.returncode}: {done.stderr.strip()}"
        elif "--json" in args:
            try:
                payload = json.loads(done.stdout)
            except json.JSONDecodeError:
                return reply
            if isinstance(payload, dict):
                reply.query_id = str(payload.get("query_id") or "")
                reply.conversation_id = str(payload.get("conversation_id") or "")
                reply.timings_ms = dict(payload.get("timings_ms") or {})
        return reply

    # -- what callers read -----------------------------------------------------------------------------------
    def ask(
        self,
        transport: str,
        user: str,
        store: str,
        question: str,
        *,
        documents: list[str] | None = None,
        document: str | None = None,
        filter: Filter | None = None,
        conversation: str | None = None,
        llm: bool = True,
        stream: bool = False,
    ) -> Reply:
        if transport == "graphql":
            variables: dict[str, Any] = {
                "s": store, "q": question, "llm": llm, "f": _gql_filter(filter), "c": conversation,
            }  # fmt: skip
            if stream:
                variables.update(ds=documents, d=document)
                return self._graphql(
                    user,
                    "subscription($s:String!,$q:String!,$llm:Boolean!,$f:QueryFilter,$c:String,$ds:[String!],"
                    "$d:String){askStream(storeId:$s,question:$q,performLlmQuery:$llm,filter:$f,conversationId:$c,"
                    f"documentIds:$ds,documentId:$d){{ text result {{ {RESULT} }} }} }}",
                    variables,
                    stream=True,
                )
            head = "$s:String!,$q:String!,$llm:Boolean!,$f:QueryFilter,$c:String"
            fields = "storeId:$s,question:$q,performLlmQuery:$llm,filter:$f,conversationId:$c"
            if document is not None:
                variables["d"] = document
                op = f"query({head},$d:String!){{r:documentQuery({fields},documentId:$d){{ {RESULT} }} }}"
            elif documents is not None:
                variables["ds"] = documents
                op = f"query({head},$ds:[String!]!){{r:multiDocumentQuery({fields},documentIds:$ds){{ {RESULT} }} }}"
            else:
                op = f"query({head}){{r:vectorQuery({fields}){{ {RESULT} }} }}"
            return self._graphql(user, op, variables)
        if transport == "grpc":
            pb = self._pb["query"]
            common = self._pb["common"]
            kwargs: dict[str, Any] = {"store_id": store, "question": question, "perform_llm_query": llm}
            if conversation:
                kwargs["conversation_id"] = conversation
            if filter is not None:
                kwargs["filter"] = common.QueryFilter(**{k: v for k, v in vars(filter).items() if v is not None})
            if document is not None:
                name, request = "DocumentQuery", pb.DocumentQueryRequest(document_id=document, **kwargs)
            elif documents is not None:
                name, request = "MultiDocumentQuery", pb.MultiDocumentQueryRequest(document_ids=documents, **kwargs)
            else:
                name, request = "VectorQuery", pb.VectorQueryRequest(**kwargs)
            return self._grpc(user, "query", ("Stream" + name) if stream else name, request, stream=stream)
        if transport == "cli":
            if stream:
                raise NotSupported("the CLI does not stream")
            args = ["ask", question, "--store", store, "--as", user, "--json", "--server", self.url]
            if not llm:
                args.append("--no-llm")
            if document is not None:
                args += ["--document", document]
            if documents is not None:
                args += ["--documents", *documents]
            if conversation:
                args += ["--conversation", conversation]
            if filter is not None and filter.path_prefix is not None:
                args += ["--path-prefix", filter.path_prefix]
            if filter is not None and filter.title_contains is not None:
                args += ["--title-contains", filter.title_contains]
            return self._cli_reply(*args)
        raise NotSupported(transport)

    def documents(self, transport: str, user: str, store: str, search: str | None = None) -> Reply:
        if transport == "graphql":
            return self._graphql(
                user,
                "query($s:String!,$q:String){documents(storeId:$s,search:$q){documentId title sourceUri chunks}}",
                {"s": store, "q": search},
            )
        raise NotSupported("documents: GraphQL only (the console's picker)")

    def stores(self, transport: str, user: str) -> Reply:
        if transport == "graphql":
            return self._graphql(user, "{stores{id name documents chunks}}", {})
        if transport == "grpc":
            return self._grpc(user, "admin", "ListStores", self._pb["admin"].ListStoresRequest())
        raise NotSupported("docqa stores is an operator's view of the data directory (no --as)")

    def summarize(self, transport: str, user: str, store: str, document: str) -> Reply:
        if transport == "graphql":
            return self._graphql(
                user,
                "query($s:String!,$d:String!){r:summarizeDocument(storeId:$s,documentId:$d){queryId documentId title"
                f" summary timingsMs{{name ms}} sections{{summary headingPath}} sources{{ {CHUNK} }} }} }}",
                {"s": store, "d": document},
            )
        if transport == "grpc":
            request = self._pb["analysis"].SummarizeDocumentRequest(store_id=store, document_id=document)
            return self._grpc(user, "analysis", "SummarizeDocument", request)
        return self._cli_reply("summarize", document, "--store", store, "--as", user, "--json")

    def compare(self, transport: str, user: str, store: str, documents: list[str]) -> Reply:
        if transport == "graphql":
            return self._graphql(
                user,
                "query($s:String!,$ds:[String!]!){r:compareDocuments(storeId:$s,documentIds:$ds){queryId comparison"
                f" timingsMs{{name ms}} topics{{label entries{{documentId statement}}}} sources{{ {CHUNK} }} }} }}",
                {"s": store, "ds": documents},
            )
        if transport == "grpc":
            request = self._pb["analysis"].CompareDocumentsRequest(store_id=store, document_ids=documents)
            return self._grpc(user, "analysis", "CompareDocuments", request)
        return self._cli_reply("compare", *documents, "--store", store, "--as", user, "--json")

    def history(self, transport: str, user: str) -> Reply:
        if transport == "graphql":
            return self._graphql(user, f"{{history(first:100){{edges{{node{{ {ENTRY} }} }} }} }}", {})
        if transport == "grpc":
            return self._grpc(user, "history", "ListHistory", self._pb["history"].ListHistoryRequest(page_size=100))
        return self._cli_reply("history", "list", "--as", user)

    def conversation(self, transport: str, user: str, conversation: str) -> Reply:
        if transport == "graphql":
            return self._graphql(
                user, f"query($c:String!){{conversation(id:$c){{id turns{{ {ENTRY} }} }} }}", {"c": conversation}
            )
        if transport == "grpc":
            request = self._pb["history"].GetConversationRequest(conversation_id=conversation)
            return self._grpc(user, "history", "GetConversation", request)
        return self._cli_reply("history", "show", conversation, "--as", user)

    def rate(self, transport: str, user: str, query_id: str, comment: str) -> Reply:
        if transport == "graphql":
            return self._graphql(
                user,
                "mutation($q:String!,$c:String){rateAnswer(queryId:$q,rating:UP,comment:$c){queryId comment}}",
                {"q": query_id, "c": comment},
            )
        if transport == "grpc":
            pb = self._pb["history"]
            request = pb.RateAnswerRequest(query_id=query_id, rating=pb.Rating.Value("UP"), comment=comment)
            return self._grpc(user, "history", "RateAnswer", request)
        return self._cli_reply("feedback", "rate", query_id, "up", "--as", user, "--comment", comment)

    def feedback(self, transport: str, user: str, store: str) -> Reply:
        if transport == "graphql":
            return self._graphql(
                user,
                "query($s:String!){feedback(storeId:$s,first:100){edges{node{queryId userId comment"
                f" entry{{ {ENTRY} }} }} }} }} }}",
                {"s": store},
            )
        if transport == "grpc":
            request = self._pb["history"].ListFeedbackRequest(store_id=store, page_size=100)
            return self._grpc(user, "history", "ListFeedback", request)
        return self._cli_reply("feedback", "list", "--store", store, "--as", user, "--admin")

    def export(self, user: str, store: str) -> Reply:
        out = self.work / f"export-{user}-{store}.yaml"
        reply = self._cli_reply("feedback", "export", "--store", store, "--as", user, "--admin", "--out", str(out))
        if out.exists():
            reply.text += "\n" + out.read_text(errors="replace")
            out.unlink()
        return reply

    def rank_lexically(self, store: str) -> None:
        reply = self._graphql(
            ADMIN,
            'mutation($s:String!){updateStoreSettings(storeId:$s,settings:{fusion:"lexical",level:0}){fusion}}',
            {"s": store},
        )
        if not reply.ok:
            raise RuntimeError(f"updateStoreSettings {store}: {reply.error}")

    # -- the adapted-model probe -----------------------------------------------------------------------------
    def adapted_twin(self, world: World) -> DocQATarget:
        """A second ``docqa serve`` with ``rerank.kind: adapted`` over its own data directory (in this target's
        work folder), holding ``world``'s group directory and no documents yet."""
        if self._twin is None:
            self._twin = DocQATarget(keep=self.keep, rerank="adapted", work=self.work / "adapted")
            self._twin._serve()
            for group, members in sorted(world.groups.items()):
                for member in sorted(members):
                    reply = self._twin._graphql(
                        ADMIN,
                        "mutation($g:String!,$m:String!){addGroupMember(group:$g,member:$m)}",
                        {"g": group, "m": member},
                    )
                    if not reply.ok:
                        raise RuntimeError(f"addGroupMember {group} {member}: {reply.error}")
        return self._twin

    def train_ranker(self, store: str, *, all_content: bool = False) -> TrainedModel:
        """``docqa adapt`` (the job itself, in this process: the CLI has no option to install a model that does
        not win) with :data:`ADAPT_OPTIONS`, over this target's data directory while its server runs."""
        from service.adaptation.job import adapt
        from service.adaptation.options import AdaptOptions
        from service.bootstrap import build_app
        from service.config import load_settings
        from service.ranking.adapted_model import MODEL_FILE, model_folder, sha256

        options = AdaptOptions(**ADAPT_OPTIONS)
        if all_content:
            options = replace(options, principals=frozenset(), everything=True)
        app = build_app(load_settings(None, data_dir=self.data_dir))
        try:
            result = adapt(app, store, options)
        finally:
            app.close()
        if not result.installed:
            raise RuntimeError(f"docqa adapt {store}: no model installed: {result.message}")
        detail = (
            f"{result.scope}: {result.documents} documents, {result.training_queries} pseudo-queries, "
            f"{result.precision}, blend {result.blend:.2f}, {result.seconds.get('total', 0.0):.1f} s"
        )
        return TrainedModel(sha256(model_folder(self.data_dir, store) / MODEL_FILE), detail)

    # -- changes ---------------------------------------------------------------------------------------------
    def set_acl(self, store: str, document: str, allow: list[str], deny: list[str]) -> None:
        args = ["acl", "set", document, "--allow", *allow]
        if deny:
            args += ["--deny", *deny]
        self.cli(*args, "--store", store)

    def remove_member(self, group: str, member: str) -> None:
        self.cli("groups", "remove-member", group, member)

    def remove_directory_member(self, source: str, group: str, member: str) -> None:
        if self._directories is None or source not in self.directory_sources:
            raise NotSupported(f"no {source} directory (directory mode off)")
        self._directories.remove_member(source, group, member)

    def _upsert(self, store: str, document: str, title: str, text: str, allow: list[str], deny: list[str]) -> None:
        pb, common = self._pb["indexing"], self._pb["common"]
        request = pb.UpsertDocumentRequest(
            store_id=store,
            document_id=document,
            data=text.encode(),
            content_type="text/markdown",
            title=title,
            acl=common.Acl(allow=allow, deny=deny),
            create_store=True,
        )
        reply = self._grpc(ADMIN, "indexing", "UpsertDocument", request)
        if not reply.ok:
            raise RuntimeError(f"UpsertDocument {store}/{document}: {reply.error}")

    def rewrite(self, store: str, document: str, title: str, text: str, allow: list[str], deny: list[str]) -> None:
        self._upsert(store, document, title, text, allow, deny)

    def delete(self, store: str, document: str) -> None:
        request = self._pb["indexing"].DeleteDocumentRequest(store_id=store, document_id=document)
        reply = self._grpc(ADMIN, "indexing", "DeleteDocument", request)
        if not reply.ok:
            raise RuntimeError(f"DeleteDocument {store}/{document}: {reply.error}")

// The ask page: sign-in, a question over a store (whole, chosen documents or one document), the streamed answer
// with its citations linked to source cards, conversations, history and feedback.
import {
  ApiError,
  clear,
  debounce,
  describeError,
  devLogin,
  endSession,
  externalLink,
  graphql,
  h,
  notify,
  num,
  pagesLabel,
  ready,
  resumeSession,
  showUser,
  startSession,
  subscribe,
  webConfig,
  when,
} from "/static/api.js";

const CHUNK_FIELDS = "documentId chunkId title sourceUri text headingPath score relevance pages anchor link";

const ASK_STREAM = `subscription Ask($storeId: String!, $question: String!, $documentIds: [String!], $documentId: String,
    $level: Float, $filter: QueryFilter, $conversationId: String) {
  askStream(storeId: $storeId, question: $question, documentIds: $documentIds, documentId: $documentId,
            level: $level, filter: $filter, conversationId: $conversationId) {
    text
    result {
      queryId queryClass answer threshold level noRelevantDocument retryWithoutThresholdAllowed modelId
      generationError warnings conversationId rewrittenQuestion
      chunks { ${CHUNK_FIELDS} }
      documents { documentId title sourceUri link bestScore bestRelevance pages chunks { chunkId } }
    }
  }
}`;

const STORES = `query Stores { stores { id name level documents chunks } }`;

const DOCUMENTS = `query Documents($storeId: String!, $search: String, $first: Int) {
  documents(storeId: $storeId, search: $search, first: $first) { documentId title contentType chunks }
}`;

const HISTORY = `query History($first: Int, $after: String) {
  history(first: $first, after: $after) {
    edges { node { queryId conversationId storeId queryClass question rewrittenQuestion answer level threshold
                   createdAt sourcesRevoked rating ratingComment
                   sources { documentId chunkId title score relevance } } }
    pageInfo { endCursor hasNextPage }
  }
}`;

const RATE = `mutation Rate($queryId: String!, $rating: Rating!, $comment: String) {
  rateAnswer(queryId: $queryId, rating: $rating, comment: $comment) { queryId rating comment }
}`;

const DELETE_ENTRY = `mutation Delete($queryId: String!) { deleteHistoryEntry(queryId: $queryId) }`;

const DOC_PAGE = 50;
const HISTORY_PAGE = 10;
const $ = (id) => document.getElementById(id);

const state = {
  session: null,
  stores: new Map(),
  conversationId: null,
  turns: 0,
  chosen: new Map(), // documentId -> title (scope "documents")
  single: null, // {documentId, title} (scope "document")
  controller: null,
  lastAsk: null, // the variables of the last question (for "retry without threshold")
  feedback: { queryId: null, rating: null },
  historyCursor: null,
  historyEntry: null, // the history entry shown in the result card
};

// ---------------------------------------------------------------- sign-in

function showSignin(message) {
  state.session = null;
  $("app").hidden = true;
  $("user-box").hidden = true;
  $("signin").hidden = false;
  if (message) notify($("notice"), message);
  $("token").focus();
}

async function enterApp(session) {
  state.session = session;
  showUser(session, { userBox: $("user-box"), userName: $("user-name"), adminLink: $("admin-link") });
  $("signin").hidden = true;
  $("token").value = "";
  $("app").hidden = false;
  resetConversation();
  await loadStores();
  await loadHistory(true);
}

function failed(error) {
  if (error instanceof ApiError && (error.code === "UNAUTHENTICATED" || error.status === 401)) {
    endSession();
    showSignin(describeError(error));
    return;
  }
  notify($("notice"), describeError(error));
}

async function onTokenSubmit(event) {
  event.preventDefault();
  const token = $("token").value.trim().replace(/^Bearer\s+/i, "");
  if (!token) {
    notify($("notice"), "Paste a bearer token to sign in.");
    $("token").focus();
    return;
  }
  notify($("notice"), "");
  $("token-submit").disabled = true;
  try {
    await enterApp(await startSession(token));
  } catch (error) {
    notify($("notice"), error instanceof ApiError && error.status === 401
      ? "That token was not accepted: " + describeTokenError(error) : describeError(error));
  } finally {
    $("token-submit").disabled = false;
  }
}

function describeTokenError(error) {
  return error.message && !error.message.startsWith("HTTP ") ? error.message : "it is invalid or has expired.";
}

async function onDevSubmit(event) {
  event.preventDefault();
  const userId = $("dev-user").value.trim();
  if (!userId) {
    notify($("notice"), "Type a user id for the dev login.");
    $("dev-user").focus();
    return;
  }
  const groups = $("dev-groups").value.split(",").map((g) => g.trim()).filter(Boolean);
  notify($("notice"), "");
  $("dev-submit").disabled = true;
  try {
    const token = await devLogin(userId, groups, $("dev-admin").checked);
    await enterApp(await startSession(token));
  } catch (error) {
    notify($("notice"), describeError(error));
  } finally {
    $("dev-submit").disabled = false;
  }
}

async function onSignOut() {
  if (state.controller) state.controller.abort();
  await endSession();
  clearResult();
  clear($("history-list"));
  clear($("store"));
  state.stores.clear();
  notify($("notice"), "You are signed out.", "info");
  showSignin();
}

// ---------------------------------------------------------------- stores and the document picker

async function loadStores() {
  let data;
  try {
    data = await graphql(STORES);
  } catch (error) {
    failed(error);
    return;
  }
  const select = $("store");
  clear(select);
  state.stores.clear();
  for (const store of data.stores) {
    state.stores.set(store.id, store);
    const label = store.name && store.name !== store.id ? `${store.name} (${store.id})` : store.id;
    select.append(h("option", { value: store.id }, label));
  }
  const empty = data.stores.length === 0;
  select.disabled = empty;
  $("ask-button").disabled = empty;
  if (empty) {
    $("store-info").textContent = "You cannot read any document yet. Ask an administrator for access.";
  }
  onStoreChange();
}

function currentStore() {
  return state.stores.get($("store").value) || null;
}

function onStoreChange() {
  const store = currentStore();
  $("store-info").textContent = store
    ? `${store.documents} document${store.documents === 1 ? "" : "s"} you can read · ${store.chunks} chunks · level ${num(store.level)}`
    : $("store-info").textContent;
  $("store-level").textContent = store ? `(${num(store.level)})` : "";
  $("question").placeholder = store
    ? `Ask a question about ${store.name || store.id}`
    : "Choose a store, then ask a question";
  if (store && $("use-store-level").checked) {
    $("level").value = String(store.level);
    $("level-value").textContent = num(store.level);
  }
  state.chosen.clear();
  state.single = null;
  renderChips();
  if (!$("picker").hidden) loadDocuments();
  resetConversation();
}

function scope() {
  return document.querySelector('input[name="scope"]:checked').value;
}

function onScopeChange() {
  const mode = scope();
  $("picker").hidden = mode === "store";
  renderChips();
  if (mode !== "store") loadDocuments();
}

let documentsRequest = 0;

async function loadDocuments() {
  const store = currentStore();
  const list = $("doc-list");
  if (!store) return;
  const search = $("doc-search").value.trim();
  const ticket = ++documentsRequest;
  $("doc-status").textContent = "Loading documents…";
  let data;
  try {
    data = await graphql(DOCUMENTS, { storeId: store.id, search: search || null, first: DOC_PAGE });
  } catch (error) {
    if (ticket === documentsRequest) $("doc-status").textContent = "";
    failed(error);
    return;
  }
  if (ticket !== documentsRequest) return; // a newer search answered first
  clear(list);
  const single = scope() === "document";
  for (const doc of data.documents) {
    const input = h("input", {
      type: single ? "radio" : "checkbox",
      name: single ? "doc-one" : "doc-many",
      value: doc.documentId,
    });
    input.checked = single ? state.single?.documentId === doc.documentId : state.chosen.has(doc.documentId);
    input.addEventListener("change", () => onPick(doc, input.checked));
    list.append(
      h("li", {},
        h("label", { class: "doc-item" },
          input,
          h("span", { class: "doc-title" }, doc.title || doc.documentId),
          h("span", { class: "doc-path" }, doc.documentId),
        ),
      ),
    );
  }
  const count = data.documents.length;
  $("doc-status").textContent = count === 0
    ? (search ? "No document you can read matches that." : "No document you can read in this store.")
    : count >= DOC_PAGE ? `Showing the first ${DOC_PAGE}; type to narrow the list.` : `${count} document${count === 1 ? "" : "s"}.`;
}

function onPick(doc, checked) {
  if (scope() === "document") {
    state.single = checked ? { documentId: doc.documentId, title: doc.title || doc.documentId } : state.single;
  } else if (checked) {
    state.chosen.set(doc.documentId, doc.title || doc.documentId);
  } else {
    state.chosen.delete(doc.documentId);
  }
  renderChips();
}

function renderChips() {
  const box = $("doc-chosen");
  clear(box);
  const picked = scope() === "document"
    ? (state.single ? [[state.single.documentId, state.single.title]] : [])
    : scope() === "documents" ? [...state.chosen] : [];
  for (const [id, title] of picked) {
    const remove = h("button", { type: "button", class: "chip-remove", "aria-label": `Remove ${title}` }, "×");
    remove.addEventListener("click", () => {
      if (scope() === "document") state.single = null;
      else state.chosen.delete(id);
      for (const input of $("doc-list").querySelectorAll("input")) if (input.value === id) input.checked = false;
      renderChips();
    });
    box.append(h("span", { class: "chip", title: id }, h("span", {}, title), remove));
  }
}

// ---------------------------------------------------------------- asking

function buildFilter() {
  const filter = {};
  const path = $("f-path").value.trim();
  const type = $("f-type").value;
  const title = $("f-title").value.trim();
  const from = $("f-from").value;
  const to = $("f-to").value;
  if (path) filter.pathPrefix = path;
  if (type) filter.contentTypes = [type];
  if (title) filter.titleContains = title;
  if (from) filter.modifiedFrom = from;
  if (to) filter.modifiedTo = to;
  return Object.keys(filter).length ? filter : null;
}

function onAskSubmit(event) {
  event.preventDefault();
  const store = currentStore();
  const question = $("question").value.trim();
  if (!store) {
    notify($("notice"), "Choose a store first.");
    $("store").focus();
    return;
  }
  if (!question) {
    notify($("notice"), "Type a question first.");
    $("question").focus();
    return;
  }
  const variables = { storeId: store.id, question, documentIds: null, documentId: null, level: null,
    filter: buildFilter(), conversationId: state.conversationId };
  const mode = scope();
  if (mode === "documents") {
    if (!state.chosen.size) {
      notify($("notice"), "Choose at least one document, or search the whole store.");
      $("doc-search").focus();
      return;
    }
    variables.documentIds = [...state.chosen.keys()];
  } else if (mode === "document") {
    if (!state.single) {
      notify($("notice"), "Choose the document to ask about, or search the whole store.");
      $("doc-search").focus();
      return;
    }
    variables.documentId = state.single.documentId;
  }
  if (!$("use-store-level").checked) variables.level = Number($("level").value);
  ask(variables);
}

function nextFrame() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

async function ask(variables) {
  if (state.controller) state.controller.abort();
  const controller = new AbortController();
  state.controller = controller;
  state.lastAsk = variables;
  notify($("notice"), "");
  clearResult();
  $("result").hidden = false;
  $("asked").textContent = variables.question;
  $("result-meta").textContent = "Answering…";
  const answer = $("answer");
  answer.setAttribute("aria-busy", "true");
  answer.dataset.pieces = "0";
  const streaming = h("p", { class: "streaming" });
  answer.append(streaming);
  $("ask-button").disabled = true;
  $("stop-button").hidden = false;
  let received = false;
  try {
    await subscribe(ASK_STREAM, variables, async (data) => {
      const event = data && data.askStream;
      if (!event) return;
      if (event.text) {
        streaming.append(document.createTextNode(event.text));
        answer.dataset.pieces = String(Number(answer.dataset.pieces) + 1);
      }
      if (event.result) {
        received = true;
        await nextFrame(); // the streamed text is painted before the sources are built
        if (controller.signal.aborted) return;
        renderResult(event.result, variables);
      }
    }, { signal: controller.signal });
    if (!received && !controller.signal.aborted) {
      notify($("notice"), "The answer ended before it was complete. Please try again.");
    }
  } catch (error) {
    if (error && error.name === "AbortError") {
      $("result-meta").textContent = "Stopped.";
    } else {
      $("result-meta").textContent = "";
      if (!received) $("result").hidden = !answer.textContent;
      failed(error);
    }
  } finally {
    answer.removeAttribute("aria-busy");
    if (state.controller === controller) {
      state.controller = null;
      $("ask-button").disabled = false;
      $("stop-button").hidden = true;
    }
  }
}

function clearResult() {
  for (const id of ["answer", "source-list", "warnings"]) clear($(id));
  for (const id of ["searched", "no-answer", "warnings", "feedback", "sources", "history-actions", "retry",
    "no-answer-hint"]) {
    $(id).hidden = true;
  }
  $("asked").textContent = "";
  $("result-meta").textContent = "";
  $("answer-status").textContent = "";
  $("result").dataset.queryId = "";
}

function renderResult(result, variables) {
  const answer = $("answer");
  $("result").dataset.queryId = result.queryId;
  const label = { vector: "whole store", multi_document: "chosen documents", document: "one document" };
  const scopeLabel = label[result.queryClass] || result.queryClass;
  const level = result.threshold === null || result.threshold === undefined || !result.level
    ? "no threshold" : `level ${num(result.level)}`;
  $("result-meta").textContent = `${scopeLabel} · ${level}`;
  if (result.conversationId) {
    state.conversationId = result.conversationId;
    state.turns += 1;
    showConversationState();
  }
  if (result.rewrittenQuestion) {
    $("searched").textContent = `Searched: ${result.rewrittenQuestion}`;
    $("searched").hidden = false;
  }
  clear(answer);
  if (result.noRelevantDocument) {
    $("no-answer").hidden = false;
    const retry = result.retryWithoutThresholdAllowed && variables && variables.level !== 0;
    $("retry").hidden = !retry;
    $("no-answer-hint").hidden = retry;
    $("answer-status").textContent = "No relevant document was found.";
  } else if (result.answer) {
    renderAnswer(answer, result.answer, result.chunks);
    $("answer-status").textContent = `Answer ready, with ${result.chunks.length} source${result.chunks.length === 1 ? "" : "s"}.`;
  } else {
    answer.append(h("p", { class: "hint" }, "No answer was generated; the sources are below."));
  }
  const warnings = [...(result.warnings || [])];
  if (result.generationError) warnings.unshift(`No answer could be generated: ${result.generationError}`);
  showWarnings(warnings);
  setFeedback(result.queryId, null, "");
  renderSources(result, variables ? variables.question : "");
  loadHistory(true);
}

function showWarnings(warnings) {
  const list = $("warnings");
  clear(list);
  for (const warning of warnings) list.append(h("li", {}, warning));
  list.hidden = warnings.length === 0;
}

// ---------------------------------------------------------------- answer text and citations

const CITATION = /\[(\d{1,4}(?:\s*(?:,|;|-|–|—)\s*\d{1,4})*)\]/g;

function citationNumbers(group) {
  const numbers = [];
  for (const part of group.split(/\s*[,;]\s*/)) {
    const range = part.split(/\s*[-–—]\s*/).map(Number);
    if (range.length === 2 && range[1] >= range[0] && range[1] - range[0] <= 50) {
      for (let n = range[0]; n <= range[1]; n += 1) numbers.push(n);
    } else if (range.length === 1) {
      numbers.push(range[0]);
    } else {
      return null;
    }
  }
  return numbers;
}

/** The answer as paragraphs, each [n] a link to source card n (only when chunk n exists). */
function renderAnswer(container, text, chunks) {
  for (const line of text.split(/\n+/)) {
    if (!line.trim()) continue;
    const paragraph = h("p");
    let last = 0;
    for (const match of line.matchAll(CITATION)) {
      const numbers = citationNumbers(match[1]);
      if (!numbers || !numbers.every((n) => n >= 1 && n <= chunks.length)) continue;
      paragraph.append(document.createTextNode(line.slice(last, match.index)));
      const group = h("span", { class: "cites" });
      for (const n of numbers) {
        const chunk = chunks[n - 1];
        const link = h("a", { class: "cite", "data-source": n, "aria-label": `Source ${n}: ${chunk.title || chunk.documentId}` }, `[${n}]`);
        link.setAttribute("href", `#source-${n}`);
        group.append(link);
      }
      paragraph.append(group);
      last = match.index + match[0].length;
    }
    paragraph.append(document.createTextNode(line.slice(last)));
    container.append(paragraph);
  }
}

function focusSource(n) {
  const card = document.getElementById(`source-${n}`);
  if (!card) return;
  card.scrollIntoView({ block: "center" });
  card.focus({ preventScroll: true });
  card.classList.remove("flash");
  void card.offsetWidth; // restart the highlight animation
  card.classList.add("flash");
}

function onAnswerClick(event) {
  const link = event.target.closest("a.cite");
  if (!link) return;
  event.preventDefault();
  focusSource(Number(link.dataset.source));
}

// ---------------------------------------------------------------- source cards

const STOP = new Set(("a an and are as at be but by can do does for from has have how i if in is it its me my of on or " +
  "our so that the their them then there these they this to was we were what when where which who why will with " +
  "would you your").split(" "));

function words(text) {
  return (text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) || [])
    .filter((w) => w.length > 2 && !STOP.has(w))
    .map((w) => (w.length > 4 && w.endsWith("s") ? w.slice(0, -1) : w));
}

function normalise(text) {
  return text.replace(CITATION, " ").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim();
}

/**
 * Sentences of `text` with their offsets: a sentence ends at . ! ? before a space, at a blank line, or before a
 * line that starts a list item or a table row (a single line break inside a paragraph is hard wrapping).
 */
function sentences(text) {
  const found = [];
  const pattern = /\S[^]*?(?:[.!?]+["'”’)\]]*(?=\s|$)|(?=\n[ \t]*\n)|(?=\n[ \t]*(?:[-*•+|]|\d{1,3}[.)])[ \t])|$)/g;
  for (const match of text.matchAll(pattern)) {
    if (!match[0]) break;
    found.push({ start: match.index, end: match.index + match[0].length, text: match[0] });
  }
  return found;
}

/** Which sentences of a chunk to highlight: those the answer quotes, else those sharing most words with the question. */
function highlights(text, answer, question) {
  const parts = sentences(text);
  const answerNorm = answer ? normalise(answer) : "";
  const answerLines = answer ? answer.split(/\n+/).map(normalise).filter((l) => l.length >= 12) : [];
  let marked = parts.filter((part) => {
    const norm = normalise(part.text);
    if (norm.length < 12) return false;
    return answerNorm.includes(norm) || answerLines.some((line) => norm.includes(line));
  });
  if (!marked.length && question) {
    const asked = new Set(words(question));
    const scored = parts.map((part) => ({ part, shared: new Set(words(part.text).filter((w) => asked.has(w))).size }));
    const best = Math.max(0, ...scored.map((s) => s.shared));
    if (best > 0) marked = scored.filter((s) => s.shared === best).slice(0, 2).map((s) => s.part);
  }
  return marked;
}

function markedText(text, ranges, from = 0, to = text.length) {
  const paragraph = h("p", { class: "chunk-text" });
  let last = from;
  if (from > 0) paragraph.append(document.createTextNode("… "));
  for (const range of [...ranges].sort((a, b) => a.start - b.start)) {
    if (range.start < last || range.end > to) continue;
    paragraph.append(document.createTextNode(text.slice(last, range.start)));
    paragraph.append(h("mark", {}, text.slice(range.start, range.end)));
    last = range.end;
  }
  paragraph.append(document.createTextNode(text.slice(last, to)));
  if (to < text.length) paragraph.append(document.createTextNode(" …"));
  return paragraph;
}

/** Sentences of context shown around the quoted passage; the whole chunk opens on demand. */
const CONTEXT_SENTENCES = 1;
/** A card shows this many sentences of a chunk nothing of which was quoted. */
const OPENING_SENTENCES = 2;

/**
 * The passage a card shows: the marked sentences with a sentence of context on each side (or the chunk's first
 * sentences when nothing is marked), as [from, to) offsets into the chunk's text.
 */
function passageBounds(text, ranges) {
  const parts = sentences(text);
  if (!parts.length) return [0, text.length];
  if (!ranges.length) return [0, parts[Math.min(OPENING_SENTENCES, parts.length) - 1].end];
  const first = parts.findIndex((p) => p.end > Math.min(...ranges.map((r) => r.start)));
  const lastEnd = Math.max(...ranges.map((r) => r.end));
  const last = parts.findIndex((p) => p.end >= lastEnd);
  const from = parts[Math.max(0, first - CONTEXT_SENTENCES)].start;
  const to = parts[Math.min(parts.length - 1, (last < 0 ? parts.length - 1 : last) + CONTEXT_SENTENCES)].end;
  return [from, to];
}

/** The chunk as a card shows it: the passage, and the whole text behind a disclosure when there is more. */
function chunkBody(text, ranges) {
  const [from, to] = passageBounds(text, ranges);
  if (from === 0 && to >= text.trimEnd().length) return [markedText(text, ranges)];
  const whole = h("details", { class: "whole-chunk" },
    h("summary", {}, "Show the whole passage"),
    markedText(text, ranges));
  return [markedText(text, ranges, from, to), whole];
}

function relevanceMeter(value, id) {
  const meter = h("meter", { min: "0", max: "1", low: "0.34", high: "0.67", optimum: "1", id });
  meter.value = typeof value === "number" ? value : 0;
  meter.textContent = num(value);
  return meter;
}

function sourceCard(chunk, n, answerText, question) {
  const meterId = `source-${n}-meter`;
  const heading = (chunk.headingPath || []).filter(Boolean).join(" › ");
  const pages = pagesLabel(chunk.pages);
  const card = h("article", { class: "source", id: `source-${n}`, tabindex: "-1", "aria-labelledby": `source-${n}-label` },
    h("div", { class: "source-head" },
      h("span", { class: "source-n", id: `source-${n}-label` }, `[${n}]`),
      h("span", { class: "source-where" }, heading || chunk.title || chunk.documentId),
      pages ? h("span", { class: "source-pages" }, pages) : null,
      h("span", { class: "source-relevance" },
        h("label", { for: meterId }, "Relevance"), relevanceMeter(chunk.relevance, meterId),
        h("span", { class: "source-score" }, num(chunk.relevance))),
    ),
    ...chunkBody(chunk.text, highlights(chunk.text, answerText, question)),
  );
  if (chunk.link) {
    const link = externalLink(chunk.link, "Open at this passage", "source-link");
    if (link.tagName === "A") card.append(h("p", { class: "source-foot" }, link));
  }
  return card;
}

function renderSources(result, question) {
  const list = $("source-list");
  clear(list);
  const chunks = result.chunks || [];
  if (!chunks.length) return;
  const index = new Map(chunks.map((chunk, i) => [chunk.chunkId, i + 1]));
  const placed = new Set();
  const groups = (result.documents || []).length ? result.documents : [];
  for (const doc of groups) {
    const numbers = doc.chunks.map((c) => index.get(c.chunkId)).filter((n) => n !== undefined);
    if (!numbers.length) continue;
    const pages = pagesLabel(doc.pages);
    const title = h("h3", { class: "doc-group-title" }, doc.title || doc.documentId);
    const group = h("section", { class: "doc-group" },
      h("header", { class: "doc-group-head" },
        title,
        h("p", { class: "doc-group-meta" },
          h("span", { class: "doc-path" }, doc.documentId),
          pages ? h("span", {}, pages) : null,
          h("span", {}, `best relevance ${num(doc.bestRelevance)}`),
          doc.link ? externalLink(doc.link, "Open original", "doc-open") : null,
        ),
      ),
    );
    for (const n of numbers) {
      group.append(sourceCard(chunks[n - 1], n, result.answer, question));
      placed.add(n);
    }
    list.append(group);
  }
  const rest = chunks.map((_, i) => i + 1).filter((n) => !placed.has(n));
  for (const n of rest) list.append(sourceCard(chunks[n - 1], n, result.answer, question));
  $("sources").hidden = false;
}

// ---------------------------------------------------------------- conversations

function showConversationState() {
  $("conversation-state").textContent = state.conversationId
    ? `Follow-up questions continue this conversation (${state.turns} question${state.turns === 1 ? "" : "s"} so far).`
    : "New conversation.";
  $("conversation-state").dataset.conversation = state.conversationId || "";
}

function resetConversation() {
  state.conversationId = null;
  state.turns = 0;
  showConversationState();
}

function onNewConversation() {
  if (state.controller) state.controller.abort();
  resetConversation();
  clearResult();
  $("result").hidden = true;
  $("question").value = "";
  $("question").focus();
}

// ---------------------------------------------------------------- feedback

function setFeedback(queryId, rating, comment) {
  state.feedback = { queryId, rating };
  $("feedback").hidden = !queryId;
  $("comment").value = comment || "";
  $("feedback-state").textContent = rating ? `You rated this answer ${rating === "UP" ? "helpful" : "not helpful"}.` : "";
  $("rate-up").setAttribute("aria-pressed", String(rating === "UP"));
  $("rate-down").setAttribute("aria-pressed", String(rating === "DOWN"));
}

async function rate(rating) {
  const { queryId } = state.feedback;
  if (!queryId) return;
  const comment = $("comment").value.trim();
  try {
    await graphql(RATE, { queryId, rating, comment: comment || null });
  } catch (error) {
    failed(error);
    return;
  }
  state.feedback.rating = rating;
  $("rate-up").setAttribute("aria-pressed", String(rating === "UP"));
  $("rate-down").setAttribute("aria-pressed", String(rating === "DOWN"));
  $("feedback-state").textContent = comment ? "Thanks — your rating and comment were saved." : "Thanks — your rating was saved.";
  loadHistory(true);
}

function onSendComment() {
  if (!state.feedback.rating) {
    $("feedback-state").textContent = "Choose Yes or No first; the comment is sent with your rating.";
    return;
  }
  rate(state.feedback.rating);
}

// ---------------------------------------------------------------- history

async function loadHistory(reset) {
  if (!state.session) return;
  let data;
  try {
    data = await graphql(HISTORY, { first: HISTORY_PAGE, after: reset ? null : state.historyCursor });
  } catch (error) {
    failed(error);
    return;
  }
  const list = $("history-list");
  if (reset) clear(list);
  for (const { node } of data.history.edges) list.append(historyItem(node));
  state.historyCursor = data.history.pageInfo.endCursor;
  $("history-more").hidden = !data.history.pageInfo.hasNextPage;
  $("history-empty").hidden = list.children.length > 0;
}

function historyItem(entry) {
  const open = h("button", { type: "button", class: "history-open" },
    h("span", { class: "history-question" }, entry.question));
  open.addEventListener("click", () => showHistoryEntry(entry));
  const rating = entry.rating === "UP" ? "rated helpful" : entry.rating === "DOWN" ? "rated not helpful" : null;
  const remove = h("button", { type: "button", class: "ghost small danger-text", "aria-label": `Delete “${entry.question}” from your history` }, "Delete");
  const item = h("li", { class: "history-item", "data-query-id": entry.queryId },
    open,
    h("p", { class: "history-meta" },
      h("span", {}, entry.storeId),
      h("span", {}, when(entry.createdAt)),
      rating ? h("span", { class: "history-rating" }, rating) : null,
      entry.sourcesRevoked ? h("span", { class: "revoked" }, "sources revoked") : null,
      remove),
  );
  remove.addEventListener("click", async () => {
    try {
      await graphql(DELETE_ENTRY, { queryId: entry.queryId });
    } catch (error) {
      failed(error);
      return;
    }
    const next = item.nextElementSibling || item.previousElementSibling;
    item.remove();
    $("history-empty").hidden = $("history-list").children.length > 0;
    notify($("notice"), "Deleted from your history.", "info");
    if (next) next.querySelector(".history-open").focus();
  });
  return item;
}

function showHistoryEntry(entry) {
  if (state.controller) state.controller.abort();
  clearResult();
  $("result").hidden = false;
  $("asked").textContent = entry.question;
  $("result-meta").textContent = `From your history · ${entry.storeId} · ${when(entry.createdAt)}`;
  if (entry.rewrittenQuestion) {
    $("searched").textContent = `Searched: ${entry.rewrittenQuestion}`;
    $("searched").hidden = false;
  }
  const answer = $("answer");
  if (entry.sourcesRevoked) {
    answer.append(h("p", { class: "hint" }, "This answer is withheld: a document it cited is no longer readable by you."));
  } else if (entry.answer) {
    renderAnswer(answer, entry.answer, entry.sources); // [n] is the n-th source the answer had, as kept in history
  } else {
    answer.append(h("p", { class: "hint" }, "No answer was asked for; the sources are below."));
  }
  const list = $("source-list");
  if (entry.sources.length) {
    const items = h("ul", { class: "history-sources" });
    entry.sources.forEach((source, i) => {
      const meterId = `hist-${i}-meter`;
      items.append(h("li", { id: `source-${i + 1}`, tabindex: "-1", class: "history-source" },
        h("span", { class: "source-n" }, `[${i + 1}]`),
        h("span", { class: "doc-title" }, source.title || source.documentId),
        h("span", { class: "doc-path" }, source.chunkId),
        h("span", { class: "source-relevance" }, h("label", { for: meterId }, "Relevance"),
          relevanceMeter(source.relevance, meterId), h("span", { class: "source-score" }, num(source.relevance)))));
    });
    list.append(items);
    $("sources").hidden = false;
  }
  $("history-actions").hidden = false;
  state.historyEntry = entry;
  setFeedback(entry.answer ? entry.queryId : null, entry.rating, entry.ratingComment);
  $("result").scrollIntoView({ block: "start" });
  $("asked").setAttribute("tabindex", "-1");
  $("asked").focus({ preventScroll: true });
}

function onContinueConversation() {
  const entry = state.historyEntry;
  if (!entry) return;
  if (state.stores.has(entry.storeId) && $("store").value !== entry.storeId) {
    $("store").value = entry.storeId;
    onStoreChange();
  }
  state.conversationId = entry.conversationId;
  state.turns = Math.max(state.turns, 1);
  showConversationState();
  $("question").value = "";
  $("question").focus();
}

// ---------------------------------------------------------------- wiring

function onLevelToggle() {
  const useStore = $("use-store-level").checked;
  $("level").disabled = useStore;
  const store = currentStore();
  if (useStore && store) {
    $("level").value = String(store.level);
    $("level-value").textContent = num(store.level);
  }
}

function wire() {
  $("token-form").addEventListener("submit", onTokenSubmit);
  $("dev-form").addEventListener("submit", onDevSubmit);
  $("sign-out").addEventListener("click", onSignOut);
  $("store").addEventListener("change", onStoreChange);
  for (const radio of document.querySelectorAll('input[name="scope"]')) radio.addEventListener("change", onScopeChange);
  $("doc-search").addEventListener("input", debounce(loadDocuments, 250));
  $("doc-search").addEventListener("keydown", (event) => {
    if (event.key === "Enter") event.preventDefault(); // searching, not asking
  });
  $("ask-form").addEventListener("submit", onAskSubmit);
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("stop-button").addEventListener("click", () => state.controller && state.controller.abort());
  $("new-conversation").addEventListener("click", onNewConversation);
  $("use-store-level").addEventListener("change", onLevelToggle);
  $("level").addEventListener("input", () => {
    $("level-value").textContent = num(Number($("level").value));
  });
  $("answer").addEventListener("click", onAnswerClick);
  $("retry").addEventListener("click", () => {
    if (state.lastAsk) ask({ ...state.lastAsk, level: 0, conversationId: state.conversationId });
  });
  $("rate-up").addEventListener("click", () => rate("UP"));
  $("rate-down").addEventListener("click", () => rate("DOWN"));
  $("send-comment").addEventListener("click", onSendComment);
  $("history-refresh").addEventListener("click", () => loadHistory(true));
  $("history-more").addEventListener("click", () => loadHistory(false));
  $("continue-conversation").addEventListener("click", onContinueConversation);
}

async function main() {
  await ready();
  wire();
  let config = { devLogin: false, graphiql: false, oidc: null };
  try {
    config = await webConfig();
  } catch {
    /* the console still works with a pasted token */
  }
  if (config.devLogin) {
    $("dev-banner").hidden = false;
    $("dev-form").hidden = false;
  }
  let session = null;
  if (config.oidc && window.DocQAOidc) session = await singleSignOn(config.oidc);
  if (!session) {
    try {
      session = await resumeSession();
    } catch (error) {
      notify($("notice"), describeError(error));
    }
  }
  if (session) await enterApp(session);
  else showSignin();
  document.body.dataset.ready = "true";
}

/** Single sign-on (web.oidc, flow in oidc.js): offers the button; finishes a redirect back from the provider. */
async function singleSignOn(oidc) {
  $("sso-button").textContent = oidc.label || "Sign in with single sign-on";
  $("sso").hidden = false;
  $("sso-button").addEventListener("click", async () => {
    $("sso-button").disabled = true;
    try {
      await window.DocQAOidc.start(oidc);
    } catch (error) {
      $("sso-button").disabled = false;
      notify($("notice"), error instanceof Error && error.message ? error.message : describeError(error));
    }
  });
  let token = null;
  try {
    token = await window.DocQAOidc.finish(oidc);
  } catch (error) {
    notify($("notice"), error instanceof Error && error.message ? error.message : describeError(error));
    return null;
  }
  if (!token) return null;
  try {
    return await startSession(token);
  } catch (error) {
    notify($("notice"), error instanceof ApiError && error.status === 401
      ? "The identity provider's token was not accepted: " + describeTokenError(error) : describeError(error));
    return null;
  }
}

main();

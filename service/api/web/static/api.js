// DocQA web console: what both pages share. The bearer token (kept in sessionStorage only), GraphQL over fetch,
// the SSE reader of streamed answers, sign-in and the session cookie that gates /admin, readable error messages,
// and a tiny DOM builder that only ever writes text (never HTML).
//
// Security rules this file keeps for the whole console (the server sends a strict CSP):
//   - data is written with textContent / createTextNode only; no innerHTML, no inline handlers or styles;
//   - a link from data becomes an href only when it parses as an absolute http: or https: URL (safeHref).

const TOKEN_KEY = "docqa.token";

/** The bearer token of this tab (sessionStorage: gone when the tab closes; never in a URL or a readable cookie). */
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken() {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage unavailable: nothing kept */
  }
}

/** An error the API reported, with its typed code (UNAUTHENTICATED, NOT_FOUND, ...) when it had one. */
export class ApiError extends Error {
  constructor(message, code = null, status = null) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
  }
}

// GraphQL error codes (extensions.code): GraphQL's names (FORBIDDEN, BAD_USER_INPUT, ...), with the gRPC names as aliases.
const CODE_MESSAGES = {
  UNAUTHENTICATED: "Your sign-in is not valid any more (it may have expired). Please sign in again.",
  FORBIDDEN: "You are not allowed to do that.",
  PERMISSION_DENIED: "You are not allowed to do that.",
  RATE_LIMITED: "You are sending requests too fast. Please wait a moment and try again.",
  RESOURCE_EXHAUSTED: "The service is busy right now. Please try again in a moment.",
  UNAVAILABLE: "The service is unavailable right now. Please try again in a moment.",
  DEADLINE_EXCEEDED: "The request took too long. Please try again.",
  CONFIGURATION_ERROR: "The service is not configured correctly. Please tell your administrator.",
  CANCELLED: "The request was cancelled.",
  INTERNAL_SERVER_ERROR: "Something went wrong on the server. Please try again.",
  INTERNAL: "Something went wrong on the server. Please try again.",
};

// Codes whose server message is written for the user (what was wrong with the input, what was not found).
export const USER_INPUT_CODES = new Set(["BAD_USER_INPUT", "INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION",
  "GRAPHQL_VALIDATION_FAILED"]);

/** A sentence a person can read for any error thrown by this module (never raw JSON). */
export function describeError(error) {
  if (error instanceof ApiError) {
    if (error.code && USER_INPUT_CODES.has(error.code) && error.message) return error.message;
    if (error.code && CODE_MESSAGES[error.code]) return CODE_MESSAGES[error.code];
    if (error.status === 401) return CODE_MESSAGES.UNAUTHENTICATED;
    if (error.status === 403) return CODE_MESSAGES.PERMISSION_DENIED;
    if (error.status === 413) return "That request is too large.";
    if (error.status === 429) return CODE_MESSAGES.RESOURCE_EXHAUSTED;
    if (error.message) return error.message;
    return "The request failed.";
  }
  if (error && error.name === "AbortError") return "Stopped.";
  if (error instanceof TypeError) return "The server could not be reached. Check your connection and try again.";
  return "Something went wrong. Please try again.";
}

function firstError(errors, status) {
  const first = Array.isArray(errors) && errors.length ? errors[0] : {};
  const message = typeof first.message === "string" ? first.message : "The request failed.";
  const code = first.extensions && typeof first.extensions.code === "string" ? first.extensions.code : null;
  return new ApiError(message, code, status);
}

async function errorFromResponse(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    /* not JSON */
  }
  if (body && Array.isArray(body.errors)) return firstError(body.errors, response.status);
  const message = body && typeof body.error === "string" ? body.error : `HTTP ${response.status}`;
  const code = response.status === 401 ? "UNAUTHENTICATED" : response.status === 403 ? "PERMISSION_DENIED" : null;
  return new ApiError(message, code, response.status);
}

function authHeaders(extra = {}) {
  const headers = { ...extra };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  return headers;
}

/** Runs one GraphQL document; resolves to its `data`, or throws an ApiError with the first error's code. */
export async function graphql(query, variables = {}, { signal } = {}) {
  const response = await fetch("/graphql", {
    method: "POST",
    headers: authHeaders({ "Content-Type": "application/json", Accept: "application/json" }),
    body: JSON.stringify({ query, variables }),
    credentials: "same-origin",
    signal,
  });
  if (!response.ok) throw await errorFromResponse(response);
  const body = await response.json();
  if (body.errors && body.errors.length) throw firstError(body.errors, response.status);
  return body.data;
}

/**
 * Runs a GraphQL subscription over Server-Sent Events (fetch + a stream reader: EventSource cannot send headers).
 * Calls onNext(data) for every `next` event's data, in order; resolves at `complete` (or the end of the body).
 * An `errors` payload rejects with an ApiError. Comments (": ping") are ignored.
 */
export async function subscribe(query, variables, onNext, { signal } = {}) {
  const response = await fetch("/graphql", {
    method: "POST",
    headers: authHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify({ query, variables }),
    credentials: "same-origin",
    signal,
  });
  if (!response.ok) throw await errorFromResponse(response);
  const type = response.headers.get("Content-Type") || "";
  if (!type.includes("text/event-stream")) {
    // A server may answer a single JSON result (an error before the stream started, typically).
    const body = await response.json();
    if (body.errors && body.errors.length) throw firstError(body.errors, response.status);
    if (body.data) await onNext(body.data);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let pendingCR = false; // a "\r" at the end of a read may be the first half of "\r\n"
  let done = false;
  const dispatch = async (block) => {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (event === "complete") {
      done = true;
      return;
    }
    if (!data.length) return;
    const payload = JSON.parse(data.join("\n"));
    if (payload.errors && payload.errors.length) throw firstError(payload.errors, response.status);
    if (event === "next" || event === "message") await onNext(payload.data);
  };
  try {
    while (!done) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      let text = (pendingCR ? "\r" : "") + decoder.decode(value, { stream: true });
      pendingCR = text.endsWith("\r");
      if (pendingCR) text = text.slice(0, -1);
      buffer += text.replace(/\r\n?/g, "\n");
      let cut;
      while (!done && (cut = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        await dispatch(block);
      }
    }
    if (!done && buffer.trim()) await dispatch(buffer.replace(/\r$/, ""));
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** The console's configuration: {devLogin, graphiql, oidc}. */
export async function webConfig() {
  const response = await fetch("/web/config", { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!response.ok) throw await errorFromResponse(response);
  return response.json();
}

/**
 * Checks `token` with the server and opens the session (the HttpOnly cookie that only gates /admin).
 * Resolves to {userId, admin, historyAuditor, expiresAt}; keeps the token only when the server accepted it.
 */
export async function startSession(token) {
  const response = await fetch("/web/session", {
    method: "POST",
    headers: { Authorization: `Bearer ${token}` },
    credentials: "same-origin",
  });
  if (!response.ok) throw await errorFromResponse(response);
  const session = await response.json();
  setToken(token);
  return session;
}

/** Signs out: the session cookie is cleared by the server, the token forgotten by this tab. */
export async function endSession() {
  clearToken();
  try {
    await fetch("/web/session", { method: "DELETE", credentials: "same-origin" });
  } catch {
    /* offline: the token is gone from this tab anyway */
  }
}

/** Dev mode only (web.dev_login): a token for any user id. */
export async function devLogin(userId, groups, admin) {
  const response = await fetch("/web/dev-login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ userId, groups, admin }),
    credentials: "same-origin",
  });
  if (!response.ok) throw await errorFromResponse(response);
  const body = await response.json();
  return body.token;
}

/** The session of the token this tab keeps, or null (an invalid token is forgotten). */
export async function resumeSession() {
  const token = getToken();
  if (!token) return null;
  try {
    return await startSession(token);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.code === "UNAUTHENTICATED")) clearToken();
    throw error;
  }
}

// Single sign-on (web.oidc): the authorization-code flow with PKCE lives in oidc.js (a classic script that sets
// window.DocQAOidc); the ask page offers it when /web/config names a provider.

/** `url` as an href when it is an absolute http(s) URL; null for anything else (javascript:, data:, relative, junk). */
export function safeHref(url) {
  if (typeof url !== "string" || !url) return null;
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
}

/**
 * Builds an element: h("p", {class: "x", id: "y"}, "text", child, ...). Strings become text nodes; attributes are
 * set with setAttribute, and event-handler attributes and href/src are refused here (use safeHref + setAttribute).
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    const lower = name.toLowerCase();
    if (lower.startsWith("on") || lower === "href" || lower === "src" || lower === "style" || lower === "srcdoc") {
      throw new Error(`h(): set ${name} explicitly`);
    }
    if (name === "class") element.className = value;
    else if (name === "text") element.textContent = String(value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** A link to data's URL when it is http(s); otherwise the same words as plain text. */
export function externalLink(url, label, className = "") {
  const href = safeHref(url);
  if (!href) return h("span", { class: className }, label);
  const a = h("a", { class: className, rel: "noopener noreferrer", target: "_blank" }, label);
  a.setAttribute("href", href);
  return a;
}

/** Removes every child of `element`. */
export function clear(element) {
  element.replaceChildren();
}

/** 0.734 -> "0.73" (null -> "–"). */
export function num(value, digits = 2) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : "–";
}

/** An ISO date as the reader's local date and time. */
export function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/** Pages [3, 4, 5, 9] -> "pp. 3–5, 9"; [] -> "". */
export function pagesLabel(pages) {
  if (!Array.isArray(pages) || !pages.length) return "";
  const sorted = [...new Set(pages)].sort((a, b) => a - b);
  const runs = [];
  let start = sorted[0];
  let prev = sorted[0];
  for (const page of sorted.slice(1).concat([null])) {
    if (page !== null && page === prev + 1) {
      prev = page;
      continue;
    }
    runs.push(start === prev ? `${start}` : `${start}–${prev}`);
    start = prev = page;
  }
  return `${sorted.length === 1 ? "p." : "pp."} ${runs.join(", ")}`;
}

/** Shows a message in an aria-live region; kind "error" or "info"; an empty message hides it. */
export function notify(region, message, kind = "error") {
  region.textContent = message || "";
  region.dataset.kind = kind;
  region.hidden = !message;
}

/** Header: the signed-in user and a sign-out button (shared by both pages). */
export function showUser(session, { userBox, userName, adminLink }) {
  userName.textContent = session.userId;
  if (adminLink) adminLink.hidden = !session.admin;
  userBox.hidden = false;
}

/** Calls fn at most once per `ms` of quiet. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** The page is a module script; this resolves once the DOM is parsed (modules are deferred anyway). */
export function ready() {
  return document.readyState === "loading"
    ? new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }))
    : Promise.resolve();
}

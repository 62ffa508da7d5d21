// The admin console: a store's settings, a live relevancy preview, calibration with an inline SVG plot, why a user
// can or cannot read a document, the audit trail.
import {
  ApiError,
  USER_INPUT_CODES,
  clear,
  describeError,
  endSession,
  graphql,
  h,
  notify,
  num,
  ready,
  resumeSession,
  showUser,
  webConfig,
  when,
} from "/static/api.js";

// The store settings come from their declarations (storeSettingFields): the queries ask for each, and a
// setting the form below does not lay out by hand gets a field made from its type, bounds and description.
const SETTING_FIELDS = `query SettingFields {
  storeSettingFields { name type minimum maximum choices optional bounds description }
}`;
const STORE_FIELDS = "id name embeddingModel documents chunks";
const settingsSelection = () => `${STORE_FIELDS} ${state.declared.map((d) => d.name).join(" ")}`;

const STORES = `query Stores { stores { id name documents chunks } }`;
const storeQuery = () => `query Store($storeId: String!) { store(storeId: $storeId) { ${settingsSelection()} } }`;
const updateMutation = () => `mutation Update($storeId: String!, $settings: StoreSettingsInput!) {
  updateStoreSettings(storeId: $storeId, settings: $settings) { ${settingsSelection()} }
}`;
const PREVIEW = `query Preview($storeId: String!, $question: String!, $k: Int) {
  relevancyPreview(storeId: $storeId, question: $question, k: $k) {
    storeId level minThreshold maxThreshold notice
    chunks { maxPassingLevel chunk { documentId chunkId title headingPath score relevance } }
  }
}`;
const CALIBRATE = `mutation Calibrate($storeId: String!, $apply: Boolean!) {
  calibrateStore(storeId: $storeId, apply: $apply) {
    storeId embeddingModel documents documentsSampled chunks cut separationMethod balancedAccuracy auc level
    anchorLevel applied warnings
    current { minThreshold maxThreshold } proposed { minThreshold maxThreshold }
    predictions { level currentThreshold currentAnswerRate currentRefusalRate proposedThreshold proposedAnswerRate
                  proposedRefusalRate }
  }
}`;
const AUDIT = `query Audit($userId: String, $limit: Int!, $since: String, $until: String) {
  auditEntries(userId: $userId, limit: $limit, since: $since, until: $until) {
    queryId userId storeId queryClass outcome interface createdAt documentCount chunkCount threshold
    timingsMs { name ms }
  }
}`;
const EXPLAIN = `query Explain($userId: String!, $documentId: String!, $storeId: String) {
  explainAccess(userId: $userId, documentId: $documentId, storeId: $storeId) {
    userId storeId documentId readable reason decidingEntry
    acl { allow deny source changedBy changedAt }
    principals { principal path chain { member group source } }
  }
}`;

const EXPLAIN_QUESTION = `query ExplainQuestion($userId: String!, $storeId: String!, $question: String!) {
  explainAccess(userId: $userId, storeId: $storeId, question: $question) {
    userId storeId
    principals { principal path chain { member group source } }
    chunks { chunkId documentId score relevance visible decidingEntry reason }
  }
}`;

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const state = { store: null, preview: null, report: null, declared: [], storeReady: false };

// The buttons that act on the chosen store wait until its settings have loaded: one pressed before would act on no
// store, or on the store the form no longer shows.
const STORE_BUTTONS = ["settings-save", "preview-button", "calibrate", "calibrate-apply"];

function storeReady(ready) {
  state.storeReady = ready;
  for (const id of STORE_BUTTONS) $(id).disabled = !ready;
}

function release(button) {
  button.disabled = !state.storeReady;
}

function failed(error, region = $("notice")) {
  if (error instanceof ApiError && (error.code === "UNAUTHENTICATED" || error.status === 401)) {
    endSession();
    $("console").hidden = true;
    $("need-signin").hidden = false;
  }
  notify(region, describeError(error));
}

function storeId() {
  return $("admin-store").value;
}

// ---------------------------------------------------------------- stores and settings

async function loadStores() {
  const data = await graphql(STORES);
  const select = $("admin-store");
  clear(select);
  for (const store of data.stores) {
    select.append(h("option", { value: store.id }, store.name && store.name !== store.id ? `${store.name} (${store.id})` : store.id));
  }
  if (!data.stores.length) {
    notify($("notice"), "There is no store yet. Index a folder with docqa index to create one.", "info");
    return;
  }
  await loadStore();
}

async function loadStore() {
  let data;
  const stats = $("store-stats");
  stats.setAttribute("aria-busy", "true"); // until the form holds this store's settings
  storeReady(false);
  try {
    data = await graphql(storeQuery(), { storeId: storeId() });
  } catch (error) {
    failed(error);
    return;
  } finally {
    stats.removeAttribute("aria-busy");
  }
  showStore(data.store);
  storeReady(true);
  // A preview asked for this store while its settings loaded stays; one for another store goes.
  if (state.preview && state.preview.storeId !== storeId()) {
    state.preview = null;
    $("preview-result").hidden = true;
  }
  state.report = null;
  $("calibration-result").hidden = true;
  $("calibrate-apply").hidden = true;
  $("calibration-state").textContent = "";
}

function stat(list, term, value) {
  list.append(h("div", { class: "stat" }, h("dt", {}, term), h("dd", {}, value)));
}

function showStore(store) {
  state.store = store;
  const stats = $("store-stats");
  clear(stats);
  stat(stats, "Documents", String(store.documents));
  stat(stats, "Chunks", String(store.chunks));
  stat(stats, "Level", num(store.level));
  stat(stats, "Thresholds", `${num(store.minThreshold)} – ${num(store.maxThreshold)}`);
  stat(stats, "Max chunks", String(store.maxChunks));
  stat(stats, "Model", store.llmModelId || "—");
  stat(stats, "Embedding", store.embeddingModel || "—");
  fillSettings(store);
}

// The fields laid out by hand in admin.html; loadSettingFields adds the other settings'.
const FORM = {
  level: "s-level",
  minThreshold: "s-min",
  maxThreshold: "s-max",
  maxChunks: "s-chunks",
  fusion: "s-fusion",
  lexicalWeight: "s-lexical",
  llmModelId: "s-model",
  sourceBaseUrl: "s-base",
  promptTemplate: "s-template",
};

async function loadSettingFields() {
  const data = await graphql(SETTING_FIELDS);
  state.declared = data.storeSettingFields;
  const more = $("settings-more");
  clear(more);
  for (const d of state.declared) {
    if (FORM[d.name]) continue;
    const id = `s-setting-${d.name}`;
    let input;
    if (d.choices.length) {
      input = h("select", { id, name: d.name }, d.choices.map((c) => h("option", { value: c }, c)));
    } else if (d.type === "String") {
      input = h("input", { id, name: d.name, autocomplete: "off", spellcheck: "false" });
    } else {
      const integer = d.type === "Int";
      input = h("input", {
        id,
        name: d.name,
        type: "number",
        min: d.minimum ?? null,
        max: d.maximum ?? null,
        step: integer ? "1" : "any",
        inputmode: integer ? "numeric" : "decimal",
      });
    }
    const named = d.name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`); // as the CLI, the docs and errors say
    const label = h("label", { for: id }, named, " ", h("span", { class: "hint-inline" }, `(${d.bounds})`));
    more.append(h("div", { class: "field" }, label, input, h("p", { class: "hint" }, d.description)));
    FORM[d.name] = id;
  }
  more.hidden = !more.childElementCount;
}

function fillSettings(store) {
  for (const [field, id] of Object.entries(FORM)) {
    const value = store[field];
    $(id).value = value === null || value === undefined ? "" : String(value);
    $(id).removeAttribute("aria-invalid");
  }
  showSettingsErrors([]);
}

function showSettingsErrors(messages) {
  const box = $("settings-errors");
  clear(box);
  for (const id of Object.values(FORM)) $(id).removeAttribute("aria-invalid");
  if (!messages.length) {
    box.hidden = true;
    return;
  }
  const list = h("ul");
  for (const message of messages) list.append(h("li", {}, message));
  box.append(h("p", {}, "The server did not accept these settings:"), list);
  box.hidden = false;
  // Point at the field a message names (minThreshold or min_threshold): the longest name it holds, so that
  // max_chunks_per_document is not read as max_chunks.
  for (const message of messages) {
    const lower = message.toLowerCase().replace(/_/g, "");
    const named = Object.keys(FORM).filter((field) => lower.includes(field.toLowerCase()));
    const longest = Math.max(0, ...named.map((field) => field.length));
    for (const field of named) {
      if (field.length === longest) $(FORM[field]).setAttribute("aria-invalid", "true");
    }
  }
}

function changedSettings() {
  const store = state.store;
  const settings = {};
  const problems = [];
  for (const d of state.declared) {
    const raw = $(FORM[d.name]).value;
    if (d.type === "Int" || d.type === "Float") {
      const text = raw.trim();
      if (text === "") continue;
      const value = Number(text);
      const integer = d.type === "Int";
      if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
        problems.push(`${d.name}: “${text}” is not ${integer ? "a whole number" : "a number"}`);
        continue;
      }
      if (value !== store[d.name]) settings[d.name] = value;
    } else if (d.optional) {
      const value = raw.trim();
      if (value !== (store[d.name] ?? "")) settings[d.name] = value; // "" removes it
    } else if (raw !== (store[d.name] ?? "") && !(d.name === "llmModelId" && raw.trim() === "")) {
      settings[d.name] = raw;
    }
  }
  return { settings, problems };
}

async function onSettingsSubmit(event) {
  event.preventDefault();
  $("settings-state").textContent = "";
  const { settings, problems } = changedSettings();
  if (problems.length) {
    showSettingsErrors(problems);
    return;
  }
  if (!Object.keys(settings).length) {
    showSettingsErrors([]);
    $("settings-state").textContent = "Nothing changed.";
    return;
  }
  await saveSettings(settings, $("settings-state"));
}

async function saveSettings(settings, stateLine) {
  $("settings-save").disabled = true;
  try {
    const data = await graphql(updateMutation(), { storeId: storeId(), settings });
    showStore(data.updateStoreSettings);
    stateLine.textContent = "Saved.";
    if (state.preview) {
      state.preview.level = data.updateStoreSettings.level;
      state.preview.minThreshold = data.updateStoreSettings.minThreshold;
      state.preview.maxThreshold = data.updateStoreSettings.maxThreshold;
      updatePreview();
    }
    return true;
  } catch (error) {
    if (error instanceof ApiError && USER_INPUT_CODES.has(error.code)) {
      showSettingsErrors([error.message]);
      stateLine.textContent = "Not saved.";
      if (stateLine !== $("settings-state")) notify($("notice"), describeError(error));
    } else {
      failed(error);
    }
    return false;
  } finally {
    release($("settings-save"));
  }
}

// ---------------------------------------------------------------- relevancy preview

async function onPreviewSubmit(event) {
  event.preventDefault();
  const question = $("preview-question").value.trim();
  if (!question) {
    notify($("notice"), "Type a sample question to preview.");
    $("preview-question").focus();
    return;
  }
  const k = Number($("preview-k").value) || 20;
  $("preview-button").disabled = true;
  notify($("notice"), "");
  try {
    const data = await graphql(PREVIEW, { storeId: storeId(), question, k });
    state.preview = { ...data.relevancyPreview, storeId: storeId() };
  } catch (error) {
    failed(error);
    return;
  } finally {
    release($("preview-button"));
  }
  $("preview-level").value = String(state.preview.level);
  $("use-level-state").textContent = "";
  buildPreviewRows();
  updatePreview();
  $("preview-result").hidden = false;
}

function passes(level, maxPassingLevel) {
  return level === 0 || level <= maxPassingLevel + 1e-9;
}

function buildPreviewRows() {
  const body = $("preview-rows");
  clear(body);
  state.preview.chunks.forEach((item, i) => {
    const chunk = item.chunk;
    const meter = h("meter", { min: "0", max: "1", low: "0.34", high: "0.67", optimum: "1", "aria-label": `Relevance ${num(chunk.relevance)}` });
    meter.value = typeof chunk.relevance === "number" ? chunk.relevance : 0;
    const verdict = h("span", { class: "verdict" });
    const headings = chunk.headingPath || [];
    const section = headings[0] === chunk.title ? headings.slice(1) : headings;
    body.append(h("tr", { "data-max-level": String(item.maxPassingLevel) },
      h("td", { class: "num" }, String(i + 1)),
      h("td", { class: "cell-chunk" },
        h("span", { class: "cell-title" }, chunk.title || chunk.documentId),
        section.length ? h("span", { class: "cell-section" }, section.join(" › ")) : null,
        h("span", { class: "doc-path" }, chunk.documentId)),
      h("td", { class: "num" }, num(chunk.score, 3)),
      h("td", {}, h("span", { class: "meter-cell" }, meter, h("span", {}, num(chunk.relevance)))),
      h("td", { class: "num" }, num(item.maxPassingLevel)),
      h("td", {}, verdict),
    ));
  });
}

/** Which chunks pass at the slider's level: computed here on every input event, no server round trip. */
function updatePreview() {
  const preview = state.preview;
  if (!preview) return;
  const level = Number($("preview-level").value);
  $("preview-level-value").textContent = num(level);
  let passing = 0;
  for (const row of $("preview-rows").rows) {
    const ok = passes(level, Number(row.dataset.maxLevel));
    if (ok) passing += 1;
    row.classList.toggle("fail", !ok);
    const verdict = row.querySelector(".verdict");
    verdict.textContent = ok ? "pass" : "fail";
    verdict.className = `verdict ${ok ? "pass" : "fail"}`;
  }
  const total = preview.chunks.length;
  // An admin who may read none of the store's documents is told so, not "0 of 0 pass".
  $("preview-count").textContent = preview.notice || `${passing} of ${total} pass`;
  $("preview-count").dataset.passing = String(passing);
  const threshold = preview.minThreshold + level * (preview.maxThreshold - preview.minThreshold);
  $("preview-threshold").textContent = level === 0
    ? "Level 0: no threshold, every chunk passes."
    : `Threshold score at this level: ${num(threshold, 3)} (scale ${num(preview.minThreshold)}–${num(preview.maxThreshold)}).`;
  $("preview-current").textContent = `The store's level is ${num(preview.level)}.`;
  $("use-level").disabled = Math.abs(level - preview.level) < 1e-9;
}

async function onUseLevel() {
  const level = Number($("preview-level").value);
  $("use-level").disabled = true;
  const ok = await saveSettings({ level }, $("use-level-state"));
  if (ok) $("use-level-state").textContent = `Saved: the store's level is now ${num(level)}.`;
  else updatePreview();
}

// ---------------------------------------------------------------- calibration

async function calibrate(apply) {
  const button = apply ? $("calibrate-apply") : $("calibrate");
  button.disabled = true;
  $("calibration-state").textContent = apply ? "Applying…" : "Calibrating… (this embeds a few hundred probes)";
  try {
    const data = await graphql(CALIBRATE, { storeId: storeId(), apply });
    state.report = data.calibrateStore;
  } catch (error) {
    $("calibration-state").textContent = "";
    failed(error);
    return;
  } finally {
    release(button);
  }
  const report = state.report;
  showCalibration(report);
  if (report.applied) {
    $("calibration-state").textContent =
      `Applied: thresholds are now ${num(report.proposed.minThreshold)}–${num(report.proposed.maxThreshold)}.`;
    $("calibrate-apply").hidden = true;
    await loadStoreSettingsOnly();
  } else {
    $("calibration-state").textContent = "Nothing is changed until you apply the proposed scale.";
    $("calibrate-apply").hidden = false;
  }
}

async function loadStoreSettingsOnly() {
  try {
    const data = await graphql(storeQuery(), { storeId: storeId() });
    showStore(data.store);
  } catch (error) {
    failed(error);
  }
}

function showCalibration(report) {
  const summary = $("calibration-summary");
  clear(summary);
  stat(summary, "Current scale", `${num(report.current.minThreshold)} – ${num(report.current.maxThreshold)}`);
  stat(summary, "Proposed scale", `${num(report.proposed.minThreshold)} – ${num(report.proposed.maxThreshold)}`);
  stat(summary, "Separation", report.separationMethod);
  stat(summary, "Balanced accuracy", num(report.balancedAccuracy));
  stat(summary, "AUC", num(report.auc));
  stat(summary, "Documents sampled", `${report.documentsSampled} of ${report.documents}`);
  const warnings = $("calibration-warnings");
  clear(warnings);
  for (const warning of report.warnings) warnings.append(h("li", {}, warning));
  warnings.hidden = report.warnings.length === 0;
  const rows = $("calibration-rows");
  clear(rows);
  for (const p of report.predictions) {
    rows.append(h("tr", {},
      ...[p.level, p.currentThreshold, p.currentAnswerRate, p.currentRefusalRate, p.proposedThreshold,
        p.proposedAnswerRate, p.proposedRefusalRate].map((v, i) =>
        h("td", { class: "num" }, i === 0 || i === 1 || i === 4 ? num(v) : percent(v)))));
  }
  const plot = $("calibration-plot");
  clear(plot);
  plot.append(calibrationPlot(report));
  $("calibration-result").hidden = false;
}

function percent(value) {
  return typeof value === "number" ? `${Math.round(value * 100)} %` : "–";
}

function svg(tag, attributes = {}, text = null) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== null) element.textContent = text;
  return element;
}

/** Predicted answer and refusal rates per level, current and proposed scales, as an inline SVG (no library). */
function calibrationPlot(report) {
  const width = 640;
  const height = 300;
  const m = { top: 16, right: 20, bottom: 44, left: 52 };
  const w = width - m.left - m.right;
  const hgt = height - m.top - m.bottom;
  const x = (level) => m.left + level * w;
  const y = (rate) => m.top + (1 - rate) * hgt;
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "chart",
    role: "img",
    "aria-labelledby": "calibration-plot-title",
    id: "calibration-svg",
  });
  root.append(svg("title", { id: "calibration-plot-title" },
    "Predicted answer and refusal rates per relevancy level, on the current and the proposed threshold scale"));
  const grid = svg("g", { class: "grid" });
  for (const rate of [0, 0.25, 0.5, 0.75, 1]) {
    grid.append(svg("line", { x1: m.left, x2: m.left + w, y1: y(rate), y2: y(rate) }));
    grid.append(svg("text", { x: m.left - 8, y: y(rate) + 4, class: "tick", "text-anchor": "end" }, `${rate * 100}%`));
  }
  for (const level of [0, 0.2, 0.4, 0.6, 0.8, 1]) {
    grid.append(svg("line", { x1: x(level), x2: x(level), y1: m.top, y2: m.top + hgt, class: "vertical" }));
    grid.append(svg("text", { x: x(level), y: m.top + hgt + 18, class: "tick", "text-anchor": "middle" }, level.toFixed(1)));
  }
  root.append(grid);
  root.append(svg("text", { x: m.left + w / 2, y: height - 6, class: "axis-label", "text-anchor": "middle" }, "Relevancy level"));
  root.append(svg("text", {
    x: -(m.top + hgt / 2), y: 14, class: "axis-label", "text-anchor": "middle", transform: "rotate(-90)",
  }, "Share of probes"));
  const level = report.level;
  root.append(svg("line", { x1: x(level), x2: x(level), y1: m.top, y2: m.top + hgt, class: "current-level" }));
  const labelLeft = level > 0.75;
  root.append(svg("text", {
    x: x(level) + (labelLeft ? -6 : 6), y: m.top + hgt - 8, class: "tick current-level-label",
    "text-anchor": labelLeft ? "end" : "start",
  }, `store level ${num(level)}`));
  const points = [...report.predictions].sort((a, b) => a.level - b.level);
  const series = [
    ["currentAnswerRate", "s-answer", "Answer rate, current"],
    ["proposedAnswerRate", "s-answer dashed", "Answer rate, proposed"],
    ["currentRefusalRate", "s-refusal", "Refusal rate, current"],
    ["proposedRefusalRate", "s-refusal dashed", "Refusal rate, proposed"],
  ];
  for (const [field, cls, label] of series) {
    const path = points.map((p, i) => `${i ? "L" : "M"}${x(p.level).toFixed(1)},${y(p[field]).toFixed(1)}`).join(" ");
    const group = svg("g", { class: `series ${cls}`, "data-series": field });
    group.append(svg("path", { d: path }));
    for (const p of points) {
      const dot = svg("circle", { cx: x(p.level).toFixed(1), cy: y(p[field]).toFixed(1), r: 3 });
      dot.append(svg("title", {}, `${label} at level ${num(p.level, 1)}: ${percent(p[field])}`));
      group.append(dot);
    }
    root.append(group);
  }
  return root;
}

// ---------------------------------------------------------------- access explanation

async function onExplainSubmit(event) {
  event.preventDefault();
  const userId = $("explain-user").value.trim();
  const documentId = $("explain-document").value.trim();
  const question = $("explain-question").value.trim();
  if (!userId || !documentId === !question) {
    notify($("notice"), "Type a user id and either a document id or a question to explain.");
    $(userId ? "explain-document" : "explain-user").focus();
    return;
  }
  if (question && !storeId()) {
    notify($("notice"), "Choose a store to search for the question.");
    return;
  }
  $("explain-button").disabled = true;
  notify($("notice"), "");
  let data;
  try {
    data = question
      ? await graphql(EXPLAIN_QUESTION, { userId, storeId: storeId(), question })
      : await graphql(EXPLAIN, { userId, documentId, storeId: storeId() || null });
  } catch (error) {
    $("explain-result").hidden = true;
    failed(error);
    return;
  } finally {
    $("explain-button").disabled = false;
  }
  (question ? showQuestionExplanation : showExplanation)(data.explainAccess);
}

function showQuestionExplanation(result) {
  const chunks = result.chunks;
  const seen = chunks.filter((c) => c.visible).length;
  const decision = $("explain-decision");
  decision.textContent = `user:${result.userId} would see ${seen} of your top ${chunks.length} chunks`;
  decision.className = `verdict ${seen === chunks.length ? "pass" : "fail"}`;
  delete decision.dataset.readable;
  $("explain-reason").textContent = chunks.length ? "" : "— you may read nothing this question finds here.";
  clear($("explain-acl"));
  const rows = $("explain-chunk-rows");
  clear(rows);
  for (const c of chunks) {
    rows.append(h("tr", { "data-chunk": c.chunkId, "data-visible": String(c.visible), title: c.reason },
      h("td", { class: "mono" }, c.chunkId),
      h("td", { class: "mono" }, c.documentId),
      h("td", {}, c.relevance === null ? "–" : c.relevance.toFixed(3)),
      h("td", {}, c.visible ? "yes" : "no"),
      h("td", {}, c.decidingEntry || "none allows the user"),
    ));
  }
  $("explain-chunks").hidden = false;
  showPrincipals(result.principals, "");
  $("explain-result").hidden = false;
}

function showExplanation(result) {
  const decision = $("explain-decision");
  decision.textContent = `user:${result.userId} ${result.readable ? "CAN" : "CANNOT"} read ${result.documentId}`;
  decision.className = `verdict ${result.readable ? "pass" : "fail"}`;
  decision.dataset.readable = String(result.readable);
  $("explain-reason").textContent = `— because ${result.reason}.`;
  const acl = result.acl;
  const list = $("explain-acl");
  clear(list);
  const origin = acl.changedBy ? `${acl.source}, by ${acl.changedBy} ${when(acl.changedAt)}` : acl.source;
  stat(list, "ACL source", origin);
  stat(list, "Allow", acl.allow.join(", ") || "nobody");
  stat(list, "Deny", acl.deny.join(", ") || "nobody");
  stat(list, "Deciding entry", result.decidingEntry || "none allows the user");
  $("explain-chunks").hidden = true;
  showPrincipals(result.principals, result.decidingEntry || "");
  $("explain-result").hidden = false;
}

function showPrincipals(principals, decidingEntry) {
  const rows = $("explain-rows");
  clear(rows);
  const decides = decidingEntry.split(" ").slice(1).join(" ");
  for (const p of principals) {
    rows.append(h("tr", { "data-principal": p.principal, class: decides && p.principal === decides ? "deciding" : "" },
      h("td", { class: "mono" }, p.principal),
      h("td", {}, p.path),
      h("td", {}, decides && p.principal === decides ? decidingEntry : ""),
    ));
  }
}

// ---------------------------------------------------------------- audit

async function onAuditSubmit(event) {
  event.preventDefault();
  const since = $("audit-since").value;
  const until = $("audit-until").value;
  if (since && until && since > until) {
    notify($("notice"), "“Since” is after “Until”: choose a date range that is not empty.");
    return;
  }
  const variables = {
    userId: $("audit-user").value.trim() || null,
    limit: Math.max(1, Math.min(1000, Number($("audit-limit").value) || 100)),
    since: since || null,
    until: until || null,
  };
  $("audit-button").disabled = true;
  notify($("notice"), "");
  let data;
  try {
    data = await graphql(AUDIT, variables);
  } catch (error) {
    failed(error);
    return;
  } finally {
    $("audit-button").disabled = false;
  }
  const rows = $("audit-rows");
  clear(rows);
  for (const entry of data.auditEntries) {
    const total = (entry.timingsMs || []).find((t) => t.name === "total");
    rows.append(h("tr", { "data-query-id": entry.queryId },
      h("td", {}, when(entry.createdAt)),
      h("td", {}, entry.userId),
      h("td", {}, entry.storeId),
      h("td", {}, entry.queryClass),
      h("td", {}, h("span", { class: `outcome outcome-${entry.outcome.replace(/[^a-z_-]/gi, "")}` }, entry.outcome)),
      h("td", {}, entry.interface),
      h("td", { class: "num" }, String(entry.documentCount)),
      h("td", { class: "num" }, String(entry.chunkCount)),
      h("td", { class: "num" }, num(entry.threshold)),
      h("td", { class: "num" }, total ? num(total.ms, 0) : "–"),
    ));
  }
  $("audit-table").hidden = data.auditEntries.length === 0;
  $("audit-state").textContent = data.auditEntries.length
    ? `${data.auditEntries.length} entr${data.auditEntries.length === 1 ? "y" : "ies"}, newest first.`
    : "No audited query matches.";
}

// ---------------------------------------------------------------- wiring

function wire() {
  $("sign-out").addEventListener("click", async () => {
    await endSession();
    window.location.assign("/");
  });
  $("admin-store").addEventListener("change", loadStore);
  $("settings-form").addEventListener("submit", onSettingsSubmit);
  $("settings-reset").addEventListener("click", () => {
    if (state.store) fillSettings(state.store);
    $("settings-state").textContent = "";
  });
  $("preview-form").addEventListener("submit", onPreviewSubmit);
  $("preview-level").addEventListener("input", updatePreview);
  $("use-level").addEventListener("click", onUseLevel);
  $("calibrate").addEventListener("click", () => calibrate(false));
  $("calibrate-apply").addEventListener("click", () => calibrate(true));
  $("explain-form").addEventListener("submit", onExplainSubmit);
  $("audit-form").addEventListener("submit", onAuditSubmit);
}

async function main() {
  await ready();
  wire();
  try {
    const config = await webConfig();
    $("dev-banner").hidden = !config.devLogin;
  } catch {
    /* not needed to administer */
  }
  let session = null;
  try {
    session = await resumeSession();
  } catch (error) {
    notify($("notice"), describeError(error));
  }
  if (!session) {
    $("need-signin").hidden = false;
  } else if (!session.admin) {
    showUser(session, { userBox: $("user-box"), userName: $("user-name") });
    notify($("notice"), "This console is for administrators; your sign-in is not an administrator's.");
  } else {
    showUser(session, { userBox: $("user-box"), userName: $("user-name") });
    $("console").hidden = false;
    try {
      await loadSettingFields();
      await loadStores();
    } catch (error) {
      failed(error);
    }
  }
  document.body.dataset.ready = "true";
}

main();

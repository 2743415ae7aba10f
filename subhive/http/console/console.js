// The subhive console: plain JavaScript over the root's HTTP API (/api/v1), no build step.
// Every value from the API is put in the page as text (textContent), never as HTML: hives write what it shows.
"use strict";

const API = "/api/v1";
const page = document.getElementById("page");
const live = document.getElementById("live");
const tokenInput = document.getElementById("token");
const byInput = document.getElementById("by");
let lastSeq = 0;
const eventLog = []; // newest first, at most 200
let onFrame = null; // the current page's reaction to a live frame
let refresh = null; // the tree page's next look at health

tokenInput.value = sessionStorage.getItem("subhive.token") || "";
byInput.value = localStorage.getItem("subhive.by") || "";
tokenInput.addEventListener("change", () => sessionStorage.setItem("subhive.token", tokenInput.value.trim()));
byInput.addEventListener("change", () => localStorage.setItem("subhive.by", byInput.value.trim()));
document.getElementById("who").addEventListener("submit", (e) => e.preventDefault());

// -- helpers ----------------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function badge(text) {
  return h("span", { class: `badge ${text}` }, text);
}

class Problem extends Error {
  constructor(body) {
    super(body.detail || "request failed");
    this.body = body;
  }
}

async function api(path, options = {}) {
  const init = { method: options.method || "GET", headers: { Accept: "application/json" } };
  if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  // Changes, and reads of what hives keep (boards, dead letters), need the admin token: send it when given.
  const token = tokenInput.value.trim();
  if (token) init.headers.Authorization = `Bearer ${token}`;
  const response = await fetch(API + path, init);
  const body = await response.json().catch(() => ({ detail: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Problem(body);
  return body;
}

function problemView(error) {
  const body = error.body || { detail: String(error) };
  return h("p", { class: "problem", role: "alert" }, body.detail, body.code ? ` [${body.code}]` : "",
    body.hint ? h("span", { class: "muted" }, ` — ${body.hint}`) : "");
}

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

function show(title, ...content) {
  page.replaceChildren(h("h2", {}, title), ...content);
}

// A list with a "More" button while the API has a next page.
async function paged(path, renderItem, empty) {
  const list = h("div", {});
  const more = h("button", { type: "button", hidden: true }, "More");
  let cursor = null;
  async function load() {
    const sep = path.includes("?") ? "&" : "?";
    const answer = await api(path + (cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ""));
    for (const item of answer.items) list.append(renderItem(item));
    if (!list.childElementCount) list.append(h("p", { class: "muted" }, empty));
    cursor = answer.next_cursor;
    more.hidden = !cursor;
  }
  more.addEventListener("click", () => load().catch((e) => list.append(problemView(e))));
  await load();
  return h("div", {}, list, more);
}

// -- pages ------------------------------------------------------------------------------------------------

async function treePage() {
  const tree = await api("/hives");
  const node = (hive) =>
    h("li", {},
      h("strong", {}, hive.name), " ", h("span", { class: "muted" }, hive.kind), " ",
      hive.health ? badge(hive.health) : h("span", { class: "muted" }, "(not running)"),
      hive.provides.length ? h("div", {}, "provides ", hive.provides.map((c) => h("a", { href: `#/contracts/${c}` }, c, " "))) : "",
      hive.consumes.length ? h("div", { class: "muted" }, "consumes ",
        hive.consumes.map((c) => `${c.contract} ${c.versions} → ${c.satisfied_by || "unmet"}`).join(", ")) : "",
      hive.children.length ? h("ul", {}, hive.children.map(node)) : "");
  show("Hive tree",
    h("p", { class: "muted" }, tree.up ? "The tree is up: health is live." : "The tree is not up (subhive up starts it)."),
    h("div", { class: "tree", "data-testid": "tree" }, h("ul", {}, tree.hives.map(node))));
  onFrame = debounce(() => route(), 500);
  // Health lives in the hives' heartbeats, not in frames: look again every few seconds while the tree is shown.
  if (tree.up) refresh = setTimeout(() => { if (location.hash.startsWith("#/tree") || !location.hash) route(); }, 5000);
}

function approvalCard(a) {
  const note = h("input", { "aria-label": `Note for approving ${a.id}`, placeholder: "note (optional)" });
  const reason = h("input", { "aria-label": `Reason for rejecting ${a.id}`, placeholder: "reason (required to reject)" });
  const result = h("div", { "aria-live": "polite" });
  const decide = async (verb, body) => {
    result.replaceChildren();
    try {
      const answer = await api(`/approvals/${encodeURIComponent(a.id)}/${verb}`, { method: "POST", body });
      result.append(h("p", { role: "status" }, `${a.id}: ${answer.message || answer.status}`));
      setTimeout(route, 800);
    } catch (e) {
      result.append(problemView(e));
    }
  };
  const subject = a.kind === "contract" ? `${a.contract} ${a.version}` : a.kind === "tool" && a.tool_call
    ? `${a.proposer}: ${a.tool_call.agent} wants ${a.tool_call.tool}` : `${a.proposer}: ${a.contract}`;
  const details = [];
  if (a.check) {
    for (const part of a.check.parts || []) {
      for (const change of part.changes || []) {
        details.push(h("li", {}, `${part.part}: `, h("code", {}, change.code), ` ${change.path || "/"} — ${change.message}`));
      }
    }
  }
  return h("article", { class: "card", "data-approval": a.id },
    h("h3", {}, a.id, " ", badge(a.status), " ", h("span", {}, subject)),
    h("p", {}, a.message),
    details.length ? h("ul", {}, details) : "",
    a.tool_call ? h("pre", { "aria-label": `What ${a.tool_call.tool} would do` }, toolArguments(a.tool_call.arguments)) : "",
    a.repair ? h("pre", {}, JSON.stringify(a.repair, null, 2)) : "",
    a.status === "pending"
      ? h("div", { class: "row" },
          h("label", {}, "Note", note),
          h("button", { class: "primary", type: "button", onclick: () => decide("approve", { note: note.value, by: byInput.value.trim() }) }, `Approve ${a.id}`),
          h("label", {}, "Reason", reason),
          h("button", { class: "danger", type: "button", onclick: () => {
            if (!reason.value.trim()) { result.replaceChildren(h("p", { class: "problem", role: "alert" }, "Say why: the proposer is shown the reason.")); reason.focus(); return; }
            decide("reject", { reason: reason.value, by: byInput.value.trim() });
          } }, `Reject ${a.id}`))
      : h("p", { class: "muted" }, `${a.status} ${when(a.decided)} by ${a.decided_by || "?"}: ${a.decision}`),
    result);
}

// A diff reads as a diff; other arguments as indented JSON (the exact text when it is not JSON).
function toolArguments(text) {
  try {
    const value = JSON.parse(text);
    if (value && typeof value.diff === "string") return value.diff;
    return JSON.stringify(value, null, 2);
  } catch (e) {
    return text;
  }
}

async function approvalsPage(params) {
  const status = params.get("status") || "pending";
  const filter = h("select", { "aria-label": "Status", onchange: (e) => { location.hash = `#/approvals?status=${e.target.value}`; } },
    ["pending", "approved", "rejected", "all"].map((s) => h("option", { value: s, selected: s === status }, s)));
  show("Approvals", h("div", { class: "row" }, h("label", {}, "Show", filter)),
    await paged(`/approvals?status=${status}&kind=all`, approvalCard, "Nothing waits for you."));
  onFrame = (frame) => { if (/approval|proposal|repair|tool_call/.test(frame.kind)) debounce(route, 500)(); };
}

async function contractsPage() {
  show("Contracts", await paged("/contracts", (c) =>
    h("p", {}, h("a", { href: `#/contracts/${encodeURIComponent(c.name)}` }, c.name), ` ${c.newest} `,
      h("span", { class: "muted" }, `by ${c.provider}, ${c.versions} version${c.versions === 1 ? "" : "s"}`)), "No accepted contract yet."));
}

async function contractPage(name) {
  const versions = (await api(`/contracts/${encodeURIComponent(name)}/versions?limit=500`)).items;
  const head = h("thead", {}, h("tr", {}, ["version", "status", "provider", "consumers", "hash"].map((t) => h("th", { scope: "col" }, t))));
  const rows = versions.map((v) => h("tr", {},
    h("td", {}, v.version),
    h("td", {}, badge(v.status)),
    h("td", {}, v.provider),
    h("td", {}, Object.entries(v.consumers).map(([hive, range]) => `${hive} (${range})`).join(", ") || "—"),
    h("td", {}, h("code", {}, v.hash.slice(0, 19)), v.intact ? "" : h("span", { class: "problem" }, " edited by hand"))));
  const table = h("table", {}, head, h("tbody", {}, rows));
  const pick = (label, index) => h("label", {}, label, h("select", { name: label },
    versions.map((v, i) => h("option", { value: v.version, selected: i === index }, v.version))));
  const from = pick("from", Math.max(0, versions.length - 2));
  const to = pick("to", versions.length - 1);
  const out = h("div", { "data-testid": "diff" });
  const diff = async () => {
    out.replaceChildren();
    try {
      const d = await api(`/contracts/${encodeURIComponent(name)}/diff?from=${from.querySelector("select").value}&to=${to.querySelector("select").value}`);
      out.append(h("p", {}, `${d.old_version} → ${d.new_version}: `, badge(d.compatible ? "compatible" : "breaking"),
        ` needs a ${d.required_bump} bump, made a ${d.actual_bump}`));
      for (const part of d.parts) {
        out.append(h("div", { class: "card" }, h("h3", {}, part.part, " ", h("span", { class: "muted" }, part.direction), " ", badge(part.compatible ? "compatible" : "breaking")),
          h("div", { class: "side" },
            h("div", {}, h("h4", {}, "where"), h("ul", {}, (part.changes || []).map((c) => h("li", {}, h("code", {}, c.path || "/"), ` ${c.code}`)))),
            h("div", {}, h("h4", {}, "what changed"), h("ul", {}, (part.changes || []).map((c) => h("li", {}, c.message)))))));
      }
    } catch (e) { out.append(problemView(e)); }
  };
  show(`Contract ${name}`, table, h("h3", {}, "Diff"),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); diff(); } }, from, to, h("button", { type: "submit" }, "Compare")), out);
  if (versions.length > 1) await diff();
}

async function boardsPage(params) {
  const tree = await api("/hives");
  const names = [];
  const walk = (n) => { names.push(n.name); n.children.forEach(walk); };
  tree.hives.forEach(walk);
  const hive = params.get("hive") || names[0];
  const select = h("select", { "aria-label": "Hive", onchange: (e) => { location.hash = `#/boards?hive=${e.target.value}`; } },
    names.map((n) => h("option", { value: n, selected: n === hive }, n)));
  const history = h("div", { "aria-live": "polite" });
  let body = h("p", { class: "muted" }, "No hive.");
  if (hive) {
    try {
      const board = await api(`/boards/${hive}?limit=500`);
      body = h("table", {}, h("thead", {}, h("tr", {}, ["key", "value", "writer", "revision", ""].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, board.entries.items.map((e) => h("tr", {}, h("td", {}, h("code", {}, e.key)), h("td", {}, h("code", {}, JSON.stringify(e.value))),
          h("td", {}, e.writer), h("td", {}, e.revision),
          h("td", {}, h("button", { type: "button", onclick: () => showHistory(hive, e.key, history) }, `History of ${e.key}`))))));
    } catch (e) { body = problemView(e); }
  }
  show("Boards", h("div", { class: "row" }, h("label", {}, "Hive", select)), body, history);
}

async function showHistory(hive, key, into) {
  into.replaceChildren(h("h3", {}, `History of ${key}`));
  try {
    const answer = await api(`/boards/${hive}/history?key=${encodeURIComponent(key)}&limit=500`);
    const revisions = answer.revisions.items;
    into.append(
      ...revisions.map((e) => h("p", {}, `rev ${e.revision} by ${e.writer} ${when(e.time)}: `, h("code", {}, JSON.stringify(e.value)))),
      ...answer.broken.map((b) => h("p", { class: "problem" }, `rev ${b.revision}: ${b.reason} [${b.code}]`)),
      revisions.length ? "" : h("p", { class: "muted" }, "Never written."),
      answer.revisions.next_cursor ? h("p", { class: "muted" }, "Older revisions beyond the first 500 are not shown.") : "");
  } catch (e) { into.append(problemView(e)); }
}

async function deadLettersPage() {
  const detail = h("div", { "aria-live": "polite" });
  const row = (d) => h("tr", {}, h("td", {}, h("code", {}, d.id)), h("td", {}, d.subject), h("td", {}, h("code", {}, d.code), " ", d.message),
    h("td", {}, d.replayed ? `replayed ${d.replays.length}×` : "never"),
    h("td", {},
      h("button", { type: "button", onclick: async () => {
        detail.replaceChildren();
        try {
          const l = await api(`/deadletters/${encodeURIComponent(d.id)}`);
          detail.append(h("h3", {}, l.id), h("p", {}, `${l.code}: ${l.message}`), h("pre", {}, l.data_text));
        } catch (e) { detail.append(problemView(e)); }
      } }, `Show ${d.id}`), " ",
      h("button", { type: "button", onclick: async () => {
        detail.replaceChildren();
        try {
          const r = await api(`/deadletters/${encodeURIComponent(d.id)}/replay`, { method: "POST", body: { by: byInput.value.trim() } });
          detail.append(h("p", { role: "status" }, `${r.id}: ${r.result}`));
        } catch (e) { detail.append(problemView(e)); }
      } }, `Replay ${d.id}`)));
  let body;
  try {
    const first = await api("/deadletters?limit=100");
    body = h("table", {}, h("thead", {}, h("tr", {}, ["id", "subject", "why", "replays", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, first.items.map(row)));
    if (!first.items.length) body = h("p", { class: "muted" }, "No dead letters.");
  } catch (e) { body = problemView(e); }
  show("Dead letters", body, detail);
}

async function turnsPage(params) {
  const hive = params.get("hive");
  const turn = params.get("turn");
  if (hive && turn) {
    show(`Turn ${turn} of ${hive}`, await paged(`/turns/frames?hive=${encodeURIComponent(hive)}&turn=${encodeURIComponent(turn)}`, (f) =>
      h("div", { class: "card" }, h("strong", {}, `${f.data.step}. ${f.kind.replace(/^agent\./, "")}`), " ", h("span", { class: "muted" }, when(f.time)),
        h("pre", {}, JSON.stringify(f.data.data, null, 2))), "No steps."));
    return;
  }
  show("Agent turns", await paged("/turns", (t) => h("p", {},
    h("a", { href: `#/turns?hive=${encodeURIComponent(t.hive)}&turn=${encodeURIComponent(t.turn)}` }, `${t.hive} / ${t.agent} / ${t.turn}`),
    h("span", { class: "muted" }, ` ${t.steps} steps, last ${t.last_kind}, started ${when(t.started)}`)), "No agent has run a turn yet."));
}

function eventsPage() {
  const list = h("ol", { reversed: true, "data-testid": "events" });
  const item = (f) => h("li", {}, h("code", {}, `#${f.seq} ${f.kind}`), " ", h("span", { class: "muted" }, JSON.stringify(f.data)));
  list.append(...eventLog.map(item));
  show("Live events", h("p", { class: "muted" }, "Frames from now on, newest first."), list);
  onFrame = (frame) => list.prepend(item(frame));
}

// -- routing and the live stream -------------------------------------------------------------------------

const PAGES = { tree: treePage, approvals: approvalsPage, contracts: contractsPage, boards: boardsPage,
  deadletters: deadLettersPage, turns: turnsPage, events: eventsPage };

function debounce(fn, ms) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

async function route() {
  const [path, query] = (location.hash.replace(/^#\/?/, "") || "tree").split("?");
  const [name, ...rest] = path.split("/");
  const params = new URLSearchParams(query || "");
  onFrame = null;
  clearTimeout(refresh);
  for (const link of document.querySelectorAll("nav a")) {
    link.toggleAttribute("aria-current", link.getAttribute("href") === `#/${name}`);
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
  }
  try {
    if (name === "contracts" && rest.length) await contractPage(decodeURIComponent(rest.join("/")));
    else await (PAGES[name] || treePage)(params);
  } catch (e) {
    show("Something went wrong", problemView(e));
  }
}

// EventSource retries by itself after a dropped connection, but gives up for good when an answer is not a
// stream (409 frames.token_ahead: the root restarted with another history; 503 while it starts). Then the
// console asks the root where its log stands and follows from there, trying again until it answers.
const RETRY_MS = 2000;

async function connect() {
  try { lastSeq = (await api("/health")).last_seq; } catch (e) {
    live.textContent = "the root does not answer; retrying…";
    setTimeout(connect, RETRY_MS);
    return;
  }
  const source = new EventSource(`${API}/events?after=${lastSeq}`);
  source.onopen = () => { live.textContent = `live (after #${lastSeq})`; };
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) { live.textContent = "reconnecting…"; return; }
    live.textContent = "the event stream ended; following the root's log again…";
    setTimeout(connect, RETRY_MS);
  };
  source.onmessage = (message) => {
    const frame = JSON.parse(message.data);
    lastSeq = frame.seq;
    eventLog.unshift(frame);
    eventLog.length = Math.min(eventLog.length, 200);
    live.textContent = `live (#${frame.seq} ${frame.kind})`;
    if (onFrame) onFrame(frame);
  };
}

window.addEventListener("hashchange", () => { route().then(() => page.focus()); });
route();
connect();

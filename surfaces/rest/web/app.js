// The Settings → Connectors page of grantwire serve: plain DOM, no library, no external
// resource. State comes from GET /api/connectors and is reloaded whenever an event arrives
// on GET /api/connectors/events (read with fetch, so a bearer token can be sent). Every
// change goes through the REST API with the X-Grantwire-UI header; secrets are write-only.
"use strict";

const state = { connectors: [], tiers: [], flows: {}, notes: {}, health: {}, open: new Set(), layout: "", token: sessionStorage.getItem("grantwire-token") || "" };
const $ = (sel) => document.querySelector(sel);

// h builds an element: h("p", {class: "x", onclick: fn}, "text", child, …). Text is never parsed as HTML.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "checked" || k === "disabled" || k === "open" || k === "hidden") el[k] = !!v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) if (kid != null && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
  return el;
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-Grantwire-UI"] = "1";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (state.token) headers.Authorization = "Bearer " + state.token;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return null;
  const j = await res.json().catch(() => ({ error: { message: "HTTP " + res.status + " without a JSON body" } }));
  if (!res.ok) {
    if (j.error && j.error.code === "TOKEN_REQUIRED") askToken();
    throw j.error || { message: "HTTP " + res.status };
  }
  return j;
}

function askToken() {
  const f = $("#token");
  f.hidden = false;
  $("#token-input").focus();
}

// showError puts an error (message and the command that fixes it) in the page's alert, or
// under a tile when id is given.
function errorNode(err) {
  const msg = err.summary || err.message || String(err);
  return [h("span", {}, msg), err.fix ? h("span", { class: "fix" }, "Fix: ", h("code", {}, err.fix)) : null];
}
function showError(err, id) {
  if (id) { state.notes[id] = { bad: true, err }; renderTile(id); return; }
  const a = $("#alert");
  a.replaceChildren(...errorNode(err));
  a.hidden = false;
}
function note(id, text) { state.notes[id] = { bad: false, text }; renderTile(id); }

async function load() {
  try {
    const [list, flows] = await Promise.all([api("GET", "/api/connectors"), api("GET", "/api/connectors/_flows")]);
    state.connectors = list.connectors;
    // The stored health (what the last health pass recorded of a connection that is not
    // healthy) is written before its connector.health event is sent, so what the server
    // lists now is at least as new as any event the page holds: it replaces them.
    for (const c of list.connectors) if (c.health) state.health[c.id] = c.health; else delete state.health[c.id];
    state.tiers = list.tiers || [];
    state.flows = {};
    for (const f of flows.flows) state.flows[f.connector_id] = f;
    $("#alert").hidden = !list.agents_problem;
    if (list.agents_problem) $("#alert").replaceChildren(...errorNode(list.agents_problem));
    render();
  } catch (err) {
    showError(err);
  }
}

function tierOrder() {
  const seen = [...state.tiers];
  for (const c of state.connectors) if (!seen.includes(c.tier)) seen.push(c.tier);
  return seen.filter((t) => state.connectors.some((c) => c.tier === t));
}

// render lays out the tiers once (again only when the connectors or tiers change) and
// redraws every tile in place, so open panels and the keyboard focus survive live updates.
function render() {
  const root = $("#tiers");
  const layout = JSON.stringify(tierOrder().map((t) => [t, state.connectors.filter((c) => c.tier === t).map((c) => c.id)]));
  if (layout === state.layout) {
    for (const c of state.connectors) renderTile(c.id);
    return;
  }
  state.layout = layout;
  const sections = tierOrder().map((tier) =>
    h("section", { "aria-labelledby": "tier-" + tier },
      h("h2", { id: "tier-" + tier }, tier || "other"),
      h("div", { class: "grid" }, state.connectors.filter((c) => c.tier === tier).map((c) => h("div", { id: "slot-" + c.id })))));
  root.replaceChildren(...sections);
  for (const c of state.connectors) renderTile(c.id);
}

// renderTile redraws one tile, keeping which panels are open and where the focus was; a
// tile whose configure form holds typed values is left alone until it is submitted.
function renderTile(id) {
  const slot = document.getElementById("slot-" + id);
  const c = state.connectors.find((x) => x.id === id);
  if (!slot || !c) return;
  const old = slot.firstChild;
  if (old && old.querySelector("form.configure.dirty")) return;
  const open = new Set([...state.open].filter((k) => k.startsWith(id + "\n")).map((k) => k.slice(id.length + 1)));
  const focused = old && old.contains(document.activeElement) ? document.activeElement.id : null;
  slot.replaceChildren(tile(c, open));
  if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
}

function stateLine(c) {
  if (c.type === "oauth_pkce") {
    if (c.configured && c.tripwire && c.tripwire !== "ok") return ["warn", "Needs reconnecting (" + c.tripwire.replace(/_/g, " ") + ")"];
    if (c.configured) return ["ok", "Connected as " + (c.account_id || "(account unknown)")];
    if (!c.oauth_client || !c.oauth_client.configured) return ["no", "Not connected · no OAuth client yet"];
    return ["no", "Not connected"];
  }
  if (c.type === "mcp_server") {
    if (c.configured && c.missing_keys.length) return ["warn", "Configured · missing " + c.missing_keys.join(", ")];
    if (c.configured) return ["ok", "Configured"];
    return ["no", c.missing_keys.length ? "Not configured · needs " + c.missing_keys.join(", ") : "Not configured"];
  }
  return ["no", "Remote MCP server (not supported yet)"];
}

// healthLine shows the last connector.health event of a connection that is not healthy:
// what happened and the command that fixes it.
const healthText = {
  expiring: () => "Expiring: the provider forgets unused refresh tokens, and this one could not be used",
  failing: (p) => "Provider failing (" + p.failures + (p.failures === 1 ? " failure" : " failures") + ", " + p.reason + ")" +
    (p.retry_at ? "; retrying at " + new Date(p.retry_at).toLocaleTimeString() : ""),
  revoked: () => "Revoked at the provider: the connection was removed",
};
function healthLine(c) {
  const p = state.health[c.id];
  if (!p || !healthText[p.state]) return null;
  return h("p", { class: "health " + (p.state === "failing" ? "warn" : "bad"), "data-health": p.state, role: "status" },
    h("span", {}, healthText[p.state](p)), p.fix ? h("span", { class: "fix" }, "Fix: ", h("code", {}, p.fix)) : null);
}

function tile(c, open) {
  const [cls, text] = stateLine(c);
  const flow = state.flows[c.id];
  const n = state.notes[c.id];
  return h("article", { class: "tile", "aria-labelledby": "name-" + c.id, "data-connector": c.id },
    h("h3", { id: "name-" + c.id }, c.display_name, h("span", { class: "badge" }, { oauth_pkce: "OAuth", mcp_server: "MCP server", mcp_remote: "remote MCP" }[c.type] || c.type)),
    h("p", { class: "state " + cls, "data-state": "" }, text),
    healthLine(c),
    c.description ? h("p", { class: "desc" }, c.description) : null,
    c.scopes.length ? h("ul", { class: "scopes", "aria-label": "Connected scopes" }, c.scopes.map((s) => h("li", { title: s }, scopeLabel(s)))) : null,
    flow ? flowBox(c, flow) : null,
    n ? h("p", { class: "note " + (n.bad ? "bad" : "ok"), role: n.bad ? "alert" : "status" }, ...(n.bad ? errorNode(n.err) : [n.text])) : null,
    actions(c, flow),
    configurePanel(c, open.has("configure")),
    c.type !== "mcp_remote" ? grantsPanel(c, open.has("grants")) : null,
    c.type !== "oauth_pkce" ? activePanel(c, open.has("active")) : null);
}

function flowBox(c, flow) {
  if (flow.kind === "device") return deviceBox(c, flow);
  return h("div", { class: "flow", role: "status" },
    h("p", { style: "margin:0" }, "Waiting for the ", c.display_name, " sign-in in your browser…"),
    h("p", { style: "margin:.3rem 0 0" }, h("a", { href: flow.authorization_url, target: "_blank", rel: "noopener noreferrer", id: "open-" + c.id }, "Open the sign-in page"), " · ",
      h("button", { type: "button", id: "cancel-" + c.id, onclick: () => cancelFlow(c, flow) }, "Cancel")));
}

// deviceBox shows a device authorization (RFC 8628): the code to enter, where, and how
// long it still works; the outcome arrives as an event like a browser sign-in's.
function deviceBox(c, flow) {
  const link = flow.verification_uri_complete || flow.verification_uri;
  return h("div", { class: "flow device", role: "status", "data-flow": flow.flow_id },
    h("p", { style: "margin:0" }, "On any device, open ", h("a", { href: flow.verification_uri, target: "_blank", rel: "noopener noreferrer", id: "verify-" + c.id }, flow.verification_uri),
      " and enter the code:"),
    h("p", { class: "user-code", id: "code-" + c.id, tabindex: "-1" }, flow.user_code),
    flow.verification_uri_complete ? h("p", { style: "margin:0" }, h("a", { href: link, target: "_blank", rel: "noopener noreferrer", id: "open-" + c.id }, "Open the page with the code filled in")) : null,
    h("p", { style: "margin:.3rem 0 0" }, h("span", { class: "countdown", id: "countdown-" + c.id, "data-deadline": String(flowDeadline(flow)) }, countdownText(flowDeadline(flow))), " · ",
      h("button", { type: "button", id: "cancel-" + c.id, onclick: () => cancelFlow(c, flow) }, "Cancel")));
}

// flowDeadline is when a device code stops working (ms since the epoch).
function flowDeadline(flow) {
  if (flow.deadline) return flow.deadline;
  if (flow.expires_at) return Date.parse(flow.expires_at);
  return Date.now() + (flow.expires_in || 0) * 1000;
}

function countdownText(deadline) {
  const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
  if (!left) return "The code has expired";
  return "Waiting for approval · the code works for " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
}

// Every second, the countdowns of the device codes on the page (text only: focus stays).
setInterval(() => {
  for (const el of document.querySelectorAll(".countdown[data-deadline]")) el.textContent = countdownText(Number(el.dataset.deadline));
}, 1000);

function actions(c, flow) {
  const b = [];
  if (c.type === "oauth_pkce") {
    b.push(h("button", { type: "button", class: "primary", id: "connect-" + c.id, disabled: !!flow, onclick: () => connect(c) }, c.configured ? "Reconnect" : "Connect"));
    if (c.supports_device_code) b.push(h("button", { type: "button", id: "device-" + c.id, disabled: !!flow, title: "Sign in on another device with a code (for a machine without a browser)", onclick: () => connectDevice(c) }, "Use a code instead"));
  }
  b.push(h("button", { type: "button", id: "test-" + c.id, onclick: () => test(c) }, "Test"));
  if (c.configured) b.push(h("button", { type: "button", class: "danger", id: "disconnect-" + c.id, onclick: () => disconnect(c) }, "Disconnect"));
  return h("div", { class: "actions" }, b);
}

function panel(id, name, label, isOpen, ...body) {
  const d = h("details", { "data-panel": name, open: isOpen }, h("summary", { id: "panel-" + id + "-" + name }, label), ...body);
  d.addEventListener("toggle", () => { if (d.open) state.open.add(id + "\n" + name); else state.open.delete(id + "\n" + name); });
  return d;
}

function configurePanel(c, isOpen) {
  if (!c.setup_fields.length) return c.type === "mcp_server" ? panel(c.id, "configure", "Configure", isOpen, h("p", { class: "hint" }, "This server takes no keys."), h("button", { type: "button", onclick: () => configure(c, {}) }, "Save")) : null;
  const form = h("form", { class: "configure", autocomplete: "off" },
    c.setup_fields.map((f) => h("div", { class: "field" },
      h("label", { for: "cfg-" + c.id + "-" + f.key }, f.label, f.required ? " (required)" : ""),
      h("input", { id: "cfg-" + c.id + "-" + f.key, name: f.key, type: f.kind === "secret" ? "password" : "text", autocomplete: f.kind === "secret" ? "new-password" : "off",
        placeholder: f.configured ? (f.kind === "secret" ? "stored — type it again to keep it" : "stored — type it again") : "", oninput: (e) => e.target.form.classList.add("dirty") }),
      f.description ? h("p", { class: "hint" }, f.description) : null)),
    h("p", { class: "hint" }, "Values are written to the OS credential store and never shown again: saving replaces everything, so give every value."),
    h("button", { type: "submit", class: "primary" }, "Save"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const config = {};
    for (const input of form.querySelectorAll("input")) if (input.value !== "") config[input.name] = input.value;
    form.classList.remove("dirty");
    configure(c, config);
  });
  return panel(c.id, "configure", c.type === "oauth_pkce" ? "OAuth client" : "Configure", isOpen, form);
}

// scopeChoices: the scopes an agent may be granted here — what the catalog offers, what
// the agent declares and holds; "use" for an MCP server.
function scopeChoices(c, a) {
  const all = new Set([...(a.declared_scopes || []), ...(a.granted_scopes || [])]);
  if (c.type !== "oauth_pkce") all.add("use");
  for (const s of c.available_scopes) all.add(s);
  return [...all];
}

// scopeLabel shortens a URL scope to its last path segment for reading
// (https://www.googleapis.com/auth/gmail.readonly → gmail.readonly); the full scope is the
// checkbox's value and its tooltip.
function scopeLabel(s) {
  const m = /^https?:\/\/[^/]+\/(?:.*\/)?([^/]+)$/.exec(s);
  return m ? m[1] : s;
}

function grantsPanel(c, isOpen) {
  const rows = c.agents.map((a) => {
    const held = new Set(a.granted_scopes || []);
    const declared = new Set(a.declared_scopes || []);
    const slug = (c.id + "-" + a.id).replace(/[^a-zA-Z0-9_-]/g, "_");
    return h("div", { class: "agent", "data-agent": a.id },
      h("div", { class: "agent-head" }, h("strong", {}, a.name || a.id), a.granted_scopes ? h("span", { class: "badge" }, "granted") : h("span", { class: "badge" }, "no grant")),
      a.name ? h("div", { class: "agent-id" }, a.id) : null,
      a.reason ? h("p", { class: "hint" }, a.reason) : null,
      h("fieldset", { class: "checks", style: "border:0;padding:0;margin:.35rem 0" }, h("legend", { class: "hint" }, "Scopes " + (a.name || a.id) + " may use"),
        scopeChoices(c, a).map((s, i) => h("label", { title: s },
          h("input", { type: "checkbox", id: "g-" + slug + "-" + i, checked: held.has(s), "data-scope": s, "aria-label": s, onchange: (e) => setScope(c, a, s, e.target.checked) }),
          h("span", {}, scopeLabel(s), declared.has(s) ? h("span", { class: "declared" }, " (declared)") : null)))),
      a.granted_scopes ? h("button", { type: "button", class: "danger", id: "revoke-" + slug, onclick: () => revoke(c, a) }, "Revoke") : null);
  });
  const input = h("input", { type: "text", id: "add-" + c.id, placeholder: "agent id, e.g. installed:triage", "aria-label": "Another agent id" });
  const add = h("form", { class: "add" }, input, h("button", { type: "submit" }, "Add agent"));
  add.addEventListener("submit", (e) => {
    e.preventDefault();
    const id = input.value.trim();
    if (!id || c.agents.some((a) => a.id === id)) return;
    c.agents.push({ id, name: "", registered: false, declared_scopes: null, reason: "", consumes_mcp_servers: false, granted_scopes: null, active: false });
    renderTile(c.id);
  });
  return panel(c.id, "grants", "Agent access (" + Object.keys(c.grants).length + ")", isOpen,
    rows.length ? rows : h("p", { class: "hint" }, "No agent declares this connector yet."), add);
}

function activePanel(c, isOpen) {
  const rules = c.tools || {};
  const rows = c.agents.filter((a) => a.declared_scopes || a.consumes_mcp_servers || a.granted_scopes || a.active).map((a) => {
    const slug = (c.id + "-" + a.id).replace(/[^a-zA-Z0-9_-]/g, "_");
    const label = h("label", {}, h("input", { type: "checkbox", id: "act-" + slug, checked: a.active, onchange: (e) => setActive(c, a, e.target.checked) }),
      h("span", {}, a.name || a.id, a.name ? h("span", { class: "agent-id" }, " " + a.id) : null));
    return a.active ? h("div", { class: "agent-tools", "data-agent": a.id }, label, toolsForm(c, a, slug, rules[a.id])) : label;
  });
  const active = c.agents.filter((a) => a.active).length;
  return panel(c.id, "active", "Active for (" + active + ")", isOpen, h("div", { class: "active-for" },
    h("p", { class: "hint" }, "An agent sees this server's tools only while it holds a grant and the server is active for it."),
    rows.length ? rows : h("p", { class: "hint" }, "No agent declares this server or consumes MCP servers.")));
}

// toolsForm edits the agent's tool rule (docs/behaviour.md#tools): the tools it may see
// and call, comma-separated; empty is every tool.
function toolsForm(c, a, slug, rule) {
  const shown = rule ? (rule.length ? rule.join(", ") : "no tool") : "every tool";
  const input = h("input", { type: "text", id: "tools-" + slug, value: rule ? rule.join(",") : "", placeholder: "every tool",
    "aria-label": "Tools " + (a.name || a.id) + " may use (comma-separated; empty: every tool)" });
  const form = h("form", { class: "add tools" }, input, h("button", { type: "submit", id: "settools-" + slug }, "Set tools"));
  form.addEventListener("submit", (e) => { e.preventDefault(); setTools(c, a, input.value); });
  return h("div", {}, h("p", { class: "hint", id: "rule-" + slug }, "Tools: " + shown), form);
}

// --- actions ---------------------------------------------------------------------------

async function run(c, fn, done) {
  delete state.notes[c.id];
  try {
    const r = await fn();
    // What the action could not clean (a ledger left aside, with the command that moves
    // it) is said beside what it did.
    const warnings = r && Array.isArray(r.warnings) ? r.warnings : [];
    const text = [done ? done(r) : null, ...warnings].filter(Boolean).join(" ");
    if (text) note(c.id, text); else renderTile(c.id);
  } catch (err) {
    showError(err, c.id);
  }
}

async function connect(c) {
  const win = window.open("about:blank", "_blank");
  await run(c, async () => {
    const path = "/api/connectors/" + encodeURIComponent(c.id) + "/authorize";
    let f;
    try {
      f = await api("POST", path, {});
    } catch (err) {
      // Reconnecting with no scopes would drop what the connection holds or grants: the
      // policy names the scopes that keep them; reconnect with those.
      if (err.code !== "CONFIGURATION" || !Array.isArray(err.scopes)) throw err;
      f = await api("POST", path, { scopes: err.scopes });
    }
    state.flows[c.id] = f;
    if (win) { win.opener = null; win.location.href = f.authorization_url; }
    renderTile(c.id);
  });
  if (!state.flows[c.id] && win) win.close();
}

// connectDevice starts a device authorization: the tile shows the code, the link and a
// countdown until the outcome's event arrives (or Cancel).
async function connectDevice(c) {
  await run(c, async () => {
    const path = "/api/connectors/" + encodeURIComponent(c.id) + "/authorize-device";
    let f;
    try {
      f = await api("POST", path, {});
    } catch (err) {
      // As for connect: a reconnect keeps the scopes the connection holds or grants.
      if (err.code !== "CONFIGURATION" || !Array.isArray(err.scopes) || err.message.includes("device")) throw err;
      f = await api("POST", path, { scopes: err.scopes });
    }
    f.deadline = Date.now() + f.expires_in * 1000;
    state.flows[c.id] = f;
    renderTile(c.id);
    const code = document.getElementById("code-" + c.id);
    if (code) code.focus();
  });
}

async function cancelFlow(c, flow) {
  await run(c, () => api("DELETE", "/api/connectors/_flows/" + encodeURIComponent(flow.flow_id)));
}

const test = (c) => run(c, () => api("POST", "/api/connectors/" + encodeURIComponent(c.id) + "/test"), (r) => {
  if (!r.ok) throw r.error || { message: r.detail };
  return "Test passed: " + r.detail;
}).catch(() => {});

async function disconnect(c) {
  await run(c, () => api("DELETE", "/api/connectors/" + encodeURIComponent(c.id)), () => "Disconnected.");
}

async function configure(c, config) {
  await run(c, () => api("POST", "/api/connectors/" + encodeURIComponent(c.id) + "/configure", { config }), () => "Saved to the credential store.");
}

function grantPath(c, a, kind) {
  return "/api/connectors/" + encodeURIComponent(c.id) + "/" + kind + "/" + encodeURIComponent(a.id);
}

async function setScope(c, a, scope, on) {
  const held = new Set(a.granted_scopes || []);
  if (on) held.add(scope); else held.delete(scope);
  await run(c, () => held.size || on ? api("PUT", grantPath(c, a, "grants"), { scopes: [...held].sort() }) : api("DELETE", grantPath(c, a, "grants")));
}

const revoke = (c, a) => run(c, () => api("DELETE", grantPath(c, a, "grants")));

async function setActive(c, a, on) {
  await run(c, () => on ? api("PUT", grantPath(c, a, "activations"), {}) : api("DELETE", grantPath(c, a, "activations")),
    (r) => r && r.auto_granted ? "Active for " + (a.name || a.id) + "; granted " + r.scopes.join(", ") + "." : null);
}

async function setTools(c, a, text) {
  const names = text.split(/[\s,]+/).filter(Boolean);
  await run(c, () => api("PUT", grantPath(c, a, "activations"), names.length ? { tools: names } : { all_tools: true }),
    (r) => "Tools of " + (a.name || a.id) + ": " + (r.tools ? r.tools.join(", ") || "none" : "every tool") + ".");
  reloadSoon(); // a rule change emits no event: show the rule as the server now has it
}

// --- live events ------------------------------------------------------------------------

let reloadTimer = null;
function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(load, 60);
}

function onEvent(ev) {
  const p = ev.payload || {};
  if (ev.type === "connector.oauth.completed") {
    delete state.flows[p.connector_id];
    delete state.health[p.connector_id];
    state.notes[p.connector_id] = { bad: false, text: "Connected as " + (p.account_email || "(account unknown)") + "." };
  } else if (ev.type === "connector.health") {
    state.health[p.connector_id] = p;
  } else if (ev.type === "connector.oauth.error") {
    delete state.flows[p.connector_id];
    state.notes[p.connector_id] = { bad: true, err: p.error };
  }
  reloadSoon();
}

// events reads the SSE stream with fetch (EventSource cannot send a bearer token) and
// reconnects with a growing delay; a reconnect reloads the state, which may have changed.
async function events() {
  let delay = 500;
  for (;;) {
    try {
      const headers = { Accept: "text/event-stream" };
      if (state.token) headers.Authorization = "Bearer " + state.token;
      const res = await fetch("/api/connectors/events", { headers });
      if (res.status === 401) { askToken(); throw new Error("token"); }
      if (!res.ok || !res.body) throw new Error("HTTP " + res.status);
      live(true);
      delay = 500;
      load();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data) { try { onEvent(JSON.parse(data)); } catch (_) { reloadSoon(); } }
        }
      }
    } catch (_) { /* reconnect below */ }
    live(false);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

function live(on) {
  const el = $("#live");
  el.className = "live " + (on ? "on" : "off");
  el.textContent = on ? "live" : "reconnecting…";
}

document.addEventListener("DOMContentLoaded", () => {
  $("#token").addEventListener("submit", (e) => {
    e.preventDefault();
    state.token = $("#token-input").value.trim();
    sessionStorage.setItem("grantwire-token", state.token);
    $("#token").hidden = true;
    load();
  });
  load();
  events();
});

// The console's shared helpers: the credential, calls to the public /v1 API, SSE over fetch,
// and small DOM helpers. No library: fetch, ReadableStream and the DOM (specs/console.md §3).
"use strict";
const X = (() => {
  const body = document.body;
  const api = body.dataset.api || "";
  const ui = body.dataset.ui || "/ui";
  const TOKEN = "xflow.token";
  const ME = "xflow.me";

  class Problem extends Error {
    constructor(status, doc) {
      super((doc && (doc.detail || doc.title)) || `HTTP ${status}`);
      this.status = status;
      this.doc = doc || {};
      this.errors = (doc && doc.errors) || [];
    }
  }

  const token = () => sessionStorage.getItem(TOKEN);
  const signOut = () => { sessionStorage.removeItem(TOKEN); sessionStorage.removeItem(ME); };
  const toLogin = () => { signOut(); location.assign(`${ui}/login?next=${encodeURIComponent(location.pathname + location.search)}`); };

  function headers(extra) {
    const h = { Accept: "application/json", ...extra };
    if (token()) h.Authorization = `Bearer ${token()}`;
    return h;
  }

  // One call to the API; a problem document becomes a thrown Problem; 401 goes to the login page.
  async function call(method, path, { json, body, headers: more, raw, keep401 } = {}) {
    const init = { method, headers: headers(more) };
    if (json !== undefined) { init.body = JSON.stringify(json); init.headers["Content-Type"] = "application/json"; }
    else if (body !== undefined) init.body = body;
    const response = await fetch(api + path, init);
    if (response.status === 401 && !keep401) { toLogin(); throw new Problem(401, null); }
    if (raw) { if (!response.ok) throw new Problem(response.status, await response.json().catch(() => null)); return response; }
    const text = await response.text();
    const doc = text ? JSON.parse(text) : null;
    if (!response.ok) throw new Problem(response.status, doc);
    return doc;
  }

  // Server-sent events read from a fetch body (EventSource cannot send the Authorization header).
  async function sse(method, path, { json, lastEventId, onEvent, signal } = {}) {
    const more = { Accept: "text/event-stream" };
    if (lastEventId !== undefined && lastEventId !== null) more["Last-Event-ID"] = String(lastEventId);
    const init = { method, headers: headers(more), signal };
    if (json !== undefined) { init.body = JSON.stringify(json); init.headers["Content-Type"] = "application/json"; }
    const response = await fetch(api + path, init);
    if (response.status === 401) { toLogin(); return; }
    if (response.status === 204) return;
    if (!response.ok) throw new Problem(response.status, await response.json().catch(() => null));
    if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
      onEvent({ event: "json", data: await response.json() });  // e.g. 202: the reply takes longer
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "", event = {}, data = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut;
      while ((cut = buffer.search(/\r?\n/)) >= 0) {
        const line = buffer.slice(0, cut);
        buffer = buffer.slice(cut + (buffer[cut] === "\r" ? 2 : 1));
        if (line === "") {
          if (data.length) onEvent({ event: event.event || "message", id: event.id, data: JSON.parse(data.join("\n")) });
          event = {}; data = [];
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const name = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? "" : line.slice(colon + 1);
          if (val.startsWith(" ")) val = val.slice(1);
          if (name === "data") data.push(val); else event[name] = val;
        }
      }
    }
  }

  // el("li", {class: "x", "data-seq": 3}, "text", child): attributes, then children (text is escaped).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const $ = (selector) => document.querySelector(selector);
  const say = (message) => { $("#status").textContent = message; };
  function alert(error) {
    const box = $("#alert");
    box.textContent = error ? (error.message || String(error)) : "";
  }
  const pretty = (value) => (value === undefined ? "" : JSON.stringify(value, null, 2));
  const when = (v) => (v ? new Date(typeof v === "number" ? v * 1000 : v).toLocaleString() : "");
  const enc = encodeURIComponent;

  async function me() {
    const cached = sessionStorage.getItem(ME);
    if (cached) return JSON.parse(cached);
    const who = await call("GET", "/v1/me");
    sessionStorage.setItem(ME, JSON.stringify(who));
    return who;
  }

  // Every page but the login page needs a credential; show who it is and hide what the role cannot do.
  async function ready(main) {
    if (body.dataset.page !== "login") {
      if (!token()) { toLogin(); return; }
      const who = await me().catch((e) => { alert(e); return null; });
      if (!who) return;
      $("#who").textContent = `${who.user || "(no user)"} · ${who.role} · tenant ${who.tenant}`;
      $("#sign-out").addEventListener("click", () => { signOut(); location.assign(`${ui}/login`); });
      body.dataset.role = who.role;
      main(who).catch((e) => { if (e.status !== 401) alert(e); });
    } else {
      main(null).catch(alert);
    }
  }

  return { api, ui, Problem, token, call, sse, el, $, say, alert, pretty, when, enc, me, ready, TOKEN, ME };
})();

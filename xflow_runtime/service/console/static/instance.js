// One instance: summary, position on the diagram, a timeline that follows the SSE stream, data,
// operator actions (cancel, resume, send an event) and the chat with a waiting agent.
"use strict";
X.ready(async (who) => {
  const id = document.body.dataset.subject;
  const path = `/v1/instances/${X.enc(id)}`;
  const visited = new Set();
  let detail = null, graph = null, lastSeq = -1, current = null, streaming = false;
  let inFlight = null;  // the reply bubble of the message being answered (its record may come by the stream first)

  function summarize(r) {
    const u = r.usage || {};
    switch (r.event) {
      case "workflow_started": return `Workflow ${r.workflow} started`;
      case "state_entered": return `Entered ${r.state} (${r.type})`;
      case "state_exited": return `Left ${r.state}`;
      case "state_failed": return `${r.state} failed: ${(r.error && (r.error.code || r.error.message)) || "error"}${r.handled ? " (handled)" : ""}`;
      case "action_retry": return `Retry of ${r.action}, attempt ${r.attempt}`;
      case "action_skipped": return `Skipped ${r.action}`;
      case "llm_call": return `LLM call to ${r.model}: ${u.prompt_tokens ?? "?"} tokens in, ${u.completion_tokens ?? "?"} out` +
        `${typeof u.cost === "number" ? `, $${u.cost.toFixed(6)}` : ""}, ${Math.round(r.latency_ms)} ms` +
        `${r.attempts > 1 ? `, ${r.attempts} attempts` : ""}`;
      case "tool_call": return `Tool ${r.tool}(${JSON.stringify(r.arguments)}) → ` +
        ("error" in r ? `error: ${JSON.stringify(r.error)}` : JSON.stringify(r.result));
      case "memory_read": return `Memory read${r.memory_id ? ` (${r.memory_id})` : ""}: ${r.messages} messages in the window`;
      case "memory_write": return `Memory write${r.memory_id ? ` (${r.memory_id})` : ""}: ${r.messages} messages appended`;
      case "agent_reply": return `Agent replied (turn ${r.turn}): ${typeof r.reply === "string" ? r.reply : JSON.stringify(r.reply)}`;
      case "event_consumed": return `Event received: ${r.event_name}`;
      case "event_produced": return `Event sent: ${r.event_name} (${r.type})`;
      case "event_timeout": return `Waiting in ${r.state} timed out`;
      case "task_created": return `Task ${r.task_key} created (${r.task_id})`;
      case "task_completed": case "task_deleted": case "task_timedout":
        return `Task ${r.task_key} ${r.event.slice(5).replace("timedout", "timed out")}`;
      case "compensation_started": return `Compensating ${r.state} with ${r.by}`;
      case "workflow_completed": return "Workflow completed";
      case "workflow_failed": return `Workflow failed: ${(r.error && (r.error.message || r.error.code)) || ""}`;
      default: return r.event.replaceAll("_", " ");
    }
  }

  // The latest turn's memory records: which stored messages the model was given (specs/console.md).
  const memoryTurn = { read: null, write: null };

  function addRecord(r) {
    if (r.seq !== undefined && r.seq <= lastSeq) return;
    if (r.seq !== undefined) lastSeq = r.seq;
    if (r.event === "memory_read") { memoryTurn.read = r; memoryTurn.write = null; }
    if (r.event === "memory_write") { memoryTurn.write = r; loadWindow().catch(() => {}); }  // marks the new window
    if (r.event === "state_entered") { visited.add(r.state); current = r.state; X.$("#data").textContent = X.pretty(r.input); }
    if (r.event === "state_exited") X.$("#data").textContent = X.pretty(r.output);
    if (r.event === "agent_reply") {
      const text = typeof r.reply === "string" ? r.reply : JSON.stringify(r.reply);
      if (inFlight) { inFlight.dataset.seq = r.seq; inFlight.querySelector("p").textContent = text; }
      else addTurn("assistant", text, r.seq);
    }
    const kind = r.event.startsWith("workflow_failed") || r.event === "state_failed" ? "bad" : r.event === "llm_call" ? "llm" : "";
    X.$("#timeline").append(X.el("li", { "data-event": r.event, "data-seq": r.seq, class: kind },
      X.el("time", {}, X.when(r.at)), " ", X.el("span", { class: "what" }, summarize(r)),
      X.el("details", {}, X.el("summary", {}, "record"), X.el("pre", {}, X.pretty(r)))));
  }

  function addTurn(role, text, seq) {
    if (seq !== undefined && X.$(`#conversation li[data-seq="${seq}"]`)) return;
    const item = X.el("li", { class: `turn ${role}`, "data-seq": seq }, X.el("span", { class: "who" }, role === "user" ? "You" : "Agent"), X.el("p", {}, text));
    X.$("#conversation").append(item);
    return item;
  }

  function drawDiagram() {
    if (graph) Diagram.render(X.$("#diagram"), graph, { current: detail && ["running", "waiting"].includes(detail.status) ? (detail.current_state || current) : null, visited });
  }

  async function refresh() {
    detail = await X.call("GET", path);
    const fields = [["Workflow", X.el("a", { href: `${X.ui}/workflows/${X.enc(detail.workflow)}` }, detail.workflow)],
      ["Status", X.el("span", { class: `status ${detail.status}`, id: "instance-status" }, detail.status + (detail.waiting_for ? ` (for a ${detail.waiting_for})` : ""))],
      ["Current state", detail.current_state || "—"], ["User", detail.user || "—"],
      ["Started", X.when(detail.created_at)], ["Updated", X.when(detail.updated_at)],
      ["Error", detail.error ? JSON.stringify(detail.error) : "—"]];
    X.$("#summary").replaceChildren(...fields.flatMap(([k, v]) => [X.el("dt", {}, k), X.el("dd", {}, v)]));
    X.$("#input").textContent = X.pretty(detail.input);
    X.$("#output").textContent = X.pretty(detail.output);
    X.$("#cancel").hidden = !["running", "waiting"].includes(detail.status);
    X.$("#resume").hidden = !["cancelled", "failed"].includes(detail.status);
    X.$("#chat").hidden = !(detail.status === "waiting" && detail.waiting_for === "message");
    drawDiagram();
    if (!X.$("#chat").hidden) loadWindow().catch(() => {});
  }

  async function loadHistory() {
    let after = -1;
    for (;;) {
      const page = await X.call("GET", `${path}/history?after=${after}&limit=1000`);
      page.items.forEach(addRecord);
      if (page.next_after === null || page.next_after === undefined) break;
      after = page.next_after;
    }
  }

  // Follow the stream from the last record shown; reconnect (from there) if it drops while the instance lives.
  async function follow() {
    if (streaming) return;
    streaming = true;
    X.$("#live").textContent = "live";
    let ended = false;
    try {
      await X.sse("GET", `${path}/stream`, { lastEventId: lastSeq, onEvent: (e) => {
        if (e.event === "record") { addRecord(e.data); drawDiagram(); }
        else if (e.event === "status" ) refresh().catch(X.alert);
        else if (e.event === "end") ended = true;
      } });
      ended = true;
    } catch (error) {
      if (error.status) { X.alert(error); ended = true; }
    } finally {
      streaming = false;
    }
    await refresh();
    if (!ended && ["running", "waiting"].includes(detail.status)) setTimeout(follow, 1000);
    else X.$("#live").textContent = "ended";
  }

  // The chat memory the model is given: the chat stored for this instance (memoryId defaults to it).
  async function loadWindow() {
    const query = new URLSearchParams({ limit: "200" });
    if (who.role === "service" && detail.user) query.set("user", detail.user);
    const { items } = await X.call("GET", `/v1/chats?${query}`);
    // memoryId absent: the instance's own chat ("instance:<id>"); else the agent's chat of this user, latest first
    const node = graph && graph.nodes.find((n) => n.id === (detail.current_state || current));
    const settings = node && node.memory;
    X.$("#window-settings").textContent = settings ? `Window of agent ${node.agent}: ` + [
      settings.max_messages !== null && `the newest ${settings.max_messages} messages`,
      settings.max_tokens !== null && `at most ${settings.max_tokens} tokens`].filter(Boolean).join(", ") +
      `; history kept per ${settings.scope === "user" ? "user" : "conversation"}` +
      (settings.memory_id ? ` (memoryId ${settings.memory_id})` : "") : "";
    const chat = items.find((c) => (c.memory_id || "").includes(id)) ||
      items.filter((c) => node && c.agent === node.agent).sort((a, b) => (a.updated_at < b.updated_at ? 1 : -1))[0];
    if (!chat) { X.$("#memory-window").replaceChildren(X.el("li", {}, "No chat memory stored for this instance yet.")); return; }
    const full = await X.call("GET", `/v1/chats/${X.enc(chat.id)}`);
    // The turn appended `write.messages` after reading `read.messages`: those it read are just before.
    const { read, write } = memoryTurn;
    const end = full.messages.length - (write && read && write.turn === read.turn ? write.messages : 0);
    const start = read ? end - read.messages : end;
    X.$("#memory-window").replaceChildren(...full.messages.map((m, i) => {
      const seen = read && i >= start && i < end;
      return X.el("li", { class: `turn ${m.role}${seen ? " in-window" : ""}`, "data-in-window": seen ? "true" : "false" },
        X.el("span", { class: "who" }, m.role + (seen ? " · given to the model this turn" : "")),
        X.el("p", {}, typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
    }));
  }

  X.$("#chat-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = X.$("#chat-text").value.trim();
    if (!text) return;
    X.$("#chat-text").value = "";
    addTurn("user", text);
    const bubble = inFlight = addTurn("assistant", "");
    bubble.classList.add("streaming");
    bubble.setAttribute("aria-busy", "true");
    const out = bubble.querySelector("p");
    let deltas = 0;
    try {
      await X.sse("POST", `${path}/messages`, { json: { text }, onEvent: (e) => {
        if (e.event === "reply.delta") { deltas += 1; out.textContent += e.data.delta ?? e.data.text ?? ""; bubble.dataset.deltas = deltas; }
        else if (e.event === "reply.snapshot") out.textContent = e.data.text ?? e.data.reply ?? out.textContent;
        else if (e.event === "record" && e.data.event === "agent_reply") {
          out.textContent = typeof e.data.reply === "string" ? e.data.reply : JSON.stringify(e.data.reply);
          bubble.dataset.seq = e.data.seq;
        } else if (e.event === "json") out.textContent = e.data.reply ?? "(the reply is taking long; it will appear in the timeline)";
      } });
    } catch (error) {
      out.textContent = `Not sent: ${error.message}`;
    }
    inFlight = null;
    bubble.classList.remove("streaming");
    bubble.removeAttribute("aria-busy");
    X.say("Reply received");
    await refresh();
    // The turn reaches the chat memory as the instance goes on waiting: look again a few times.
    for (let i = 0; i < 20 && !X.$("#memory-window").textContent.includes(text); i += 1) {
      await new Promise((done) => setTimeout(done, 500));
      await loadWindow().catch(() => {});
    }
  });

  X.$("#cancel").addEventListener("click", async () => {
    try { await X.call("POST", `${path}/cancel`); X.say("Cancelled"); } catch (e) { X.alert(e); }
    await refresh();
  });
  X.$("#resume").addEventListener("click", async () => {
    try { await X.call("POST", `${path}/resume`); X.say("Resumed"); } catch (e) { X.alert(e); }
    await refresh();
    follow();
  });
  X.$("#event-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = X.$("#event-error");
    error.textContent = "";
    let attributes, data;
    try { attributes = JSON.parse(X.$("#event-attributes").value || "{}"); data = JSON.parse(X.$("#event-data").value || "null"); }
    catch (e) { error.textContent = `Not JSON: ${e.message}`; return; }
    const ce = { specversion: "1.0", id: crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`,
      type: X.$("#event-type").value, source: X.$("#event-source").value, datacontenttype: "application/json", ...attributes, data };
    try {
      const sent = await X.call("POST", "/v1/events", { body: JSON.stringify(ce), headers: { "Content-Type": "application/cloudevents+json" } });
      X.say(`Event ${ce.id} delivered to ${sent.delivered_to} instance(s)`);
    } catch (e) {
      error.textContent = [e.message, ...e.errors.map((x) => `${x.pointer}: ${x.detail}`)].join(" — ");
    }
  });

  await refresh();
  graph = await X.call("GET", `/v1/workflows/${X.enc(detail.workflow)}/graph`).catch(() => null);
  await loadHistory();
  drawDiagram();
  follow();
});

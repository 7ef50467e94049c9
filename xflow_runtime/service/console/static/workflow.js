"use strict";
X.ready(async () => {
  const id = document.body.dataset.subject;
  const graph = await X.call("GET", `/v1/workflows/${X.enc(id)}/graph`);
  Diagram.render(X.$("#diagram"), graph);
  Diagram.list(X.$("#transitions"), graph);
  // The source, one list item a line, each warning shown under its line.
  const byLine = {};
  for (const w of graph.warnings) (byLine[w.line] = byLine[w.line] || []).push(w);
  const lines = graph.source.replace(/\n$/, "").split("\n");
  X.$("#source").replaceChildren(...lines.map((text, i) => {
    const found = byLine[i + 1] || [];
    return X.el("li", { class: found.length ? "has-warning" : null, id: `line-${i + 1}` },
      X.el("code", {}, text || " "),
      found.map((w) => X.el("span", { class: "warning" }, `warning ${w.code}: ${w.message}`)));
  }));
  const unplaced = graph.warnings.filter((w) => !(w.line >= 1 && w.line <= lines.length));
  X.$("#warning-count").replaceChildren(`${graph.warnings.length} lint warning(s)`,
    ...unplaced.map((w) => X.el("span", { class: "warning" }, ` ${w.code} at ${w.pointer}: ${w.message}`)));
  X.say(`${graph.nodes.length} states, ${graph.edges.length} transitions`);

  // A state chosen on the diagram (click, Enter or Space) shows its definition in the source.
  const statesFrom = Math.max(0, lines.findIndex((text) => /^states:\s*$/.test(text)));  // YAML; else no match
  const definedAt = (name) => {
    const pattern = new RegExp(`^\\s*(- )?name:\\s*['"]?${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}['"]?\\s*$`);
    const at = lines.slice(statesFrom).findIndex((text) => pattern.test(text));
    return at < 0 ? -1 : at + statesFrom;
  };
  function choose(node) {
    const at = definedAt(node.dataset.state);
    X.$("#source").querySelectorAll(".chosen").forEach((li) => li.classList.remove("chosen"));
    if (at < 0) return;
    const line = X.$(`#line-${at + 1}`);
    line.classList.add("chosen");
    line.scrollIntoView({ block: "center" });
    X.say(`State ${node.dataset.state} is defined at line ${at + 1}`);
  }
  X.$("#diagram").addEventListener("click", (e) => { const node = e.target.closest(".node"); if (node) choose(node); });
  X.$("#diagram").addEventListener("keydown", (e) => {
    const node = e.target.closest(".node");
    if (node && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); choose(node); }
  });

  X.$("#start-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = X.$("#start-error");
    error.textContent = "";
    let input;
    try { input = JSON.parse(X.$("#start-input").value || "{}"); } catch (e) { error.textContent = `Not JSON: ${e.message}`; return; }
    try {
      const started = await X.call("POST", `/v1/workflows/${X.enc(id)}/instances`, { json: input });
      location.assign(`${X.ui}/instances/${X.enc(started.id)}`);
    } catch (e) {
      error.textContent = [e.message, ...e.errors.map((x) => `${x.pointer}: ${x.detail}`)].join(" — ");
    }
  });
});

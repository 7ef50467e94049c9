// The state diagram: an SVG drawn from GET /v1/workflows/{id}/graph, whose boxes the service has
// already laid out (xflow_runtime/plan/layout.py). Back edges (loops) bend out to the right.
"use strict";
const Diagram = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const LOOP_ROOM = 140;  // room on the right for loops (back edges bend out there)
  const s = (tag, attrs, ...children) => {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, v);
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  };
  const short = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

  function describe(node) {
    const bits = [`state ${node.id}`, `type ${node.type}`];
    if (node.start) bits.push("start");
    if (node.end) bits.push(node.terminate ? "terminates" : "ends");
    if (node.waits) bits.push(`waits for ${node.waits}`);
    if (node.compensation) bits.push("compensation");
    if (node.subflows.length) bits.push(`starts ${node.subflows.join(", ")}`);
    return bits.join(", ");
  }

  // render(container, graph, {current, visited}) → the <svg>; every node of the graph is drawn.
  function render(container, graph, { current = null, visited = new Set() } = {}) {
    const w = graph.node_width, h = graph.node_height;
    const byId = Object.fromEntries(graph.nodes.map((n) => [n.id, n]));
    const byLayer = (e) => byId[e.from] && byId[e.to] && (e.back || byId[e.from].layer >= byId[e.to].layer);
    const width = graph.width + (graph.edges.some(byLayer) ? LOOP_ROOM : 0);
    const svg = s("svg", { viewBox: `0 0 ${width} ${graph.height}`, width, height: graph.height,
      role: "group", "aria-label": `Diagram of ${graph.id}: ${graph.nodes.length} states`, class: "graph" });
    svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))));
    const edges = s("g", { class: "edges", "aria-hidden": "true" });
    const fan = {};
    for (const edge of graph.edges) {
      const a = byId[edge.from], b = byId[edge.to];
      if (!a || !b) continue;
      const k = `${edge.from}>${edge.to}`;
      const nth = (fan[k] = (fan[k] || 0) + 1) - 1;  // several edges between one pair spread apart
      let d, lx, ly;
      if (edge.back || a.layer >= b.layer) {
        const x1 = a.x + w, y1 = a.y + h / 2, x2 = b.x + w, y2 = b.y + h / 2;
        const out = Math.max(x1, x2) + 40 + nth * 24;
        d = `M${x1},${y1} C${out},${y1} ${out},${y2} ${x2 + 2},${y2}`;
        lx = out - 10; ly = (y1 + y2) / 2;
      } else {
        const x1 = a.x + w / 2 + nth * 14, y1 = a.y + h, x2 = b.x + w / 2 + nth * 14, y2 = b.y;
        const bend = (y2 - y1) / 2;
        d = `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2 - 2}`;
        lx = (x1 + x2) / 2 + 4; ly = (y1 + y2) / 2;
      }
      edges.append(s("path", { d, class: `edge kind-${edge.kind}${edge.compensate ? " compensate" : ""}`, "marker-end": "url(#arrow)",
        "data-from": edge.from, "data-to": edge.to }));
      if (edge.label) edges.append(s("text", { x: lx, y: ly, class: `edge-label kind-${edge.kind}` }, short(edge.label, 28)));
    }
    svg.append(edges);
    const nodes = s("g", { class: "nodes" });
    for (const node of graph.nodes) {
      const classes = ["node", `type-${node.type}`];
      if (node.start) classes.push("start");
      if (node.end) classes.push("end");
      if (node.compensation) classes.push("compensation");
      if (visited.has(node.id)) classes.push("visited");
      if (node.id === current) classes.push("current");
      const label = describe(node) + (node.id === current ? ", current position" : visited.has(node.id) ? ", visited" : "");
      const g = s("g", { class: classes.join(" "), "data-state": node.id, tabindex: 0, role: "img", "aria-label": label },
        s("title", {}, label),
        s("rect", { x: node.x, y: node.y, width: w, height: h, rx: node.end ? 20 : 6 }),
        s("text", { x: node.x + 10, y: node.y + 21, class: "name" }, short(node.id, 24)),
        s("text", { x: node.x + 10, y: node.y + 40, class: "kind" },
          short([node.type, node.waits && `waits: ${node.waits}`, node.subflows.length && `→ ${node.subflows.join(",")}`]
            .filter(Boolean).join(" · "), 30)));
      nodes.append(g);
    }
    svg.append(nodes);
    container.replaceChildren(svg);
    return svg;
  }

  // The same graph as a list (for screen readers and for reading).
  function list(target, graph) {
    target.replaceChildren(...graph.nodes.map((node) => {
      const out = graph.edges.filter((e) => e.from === node.id);
      return X.el("li", {}, X.el("strong", {}, node.id), ` (${node.type}${node.end ? ", end" : ""})`,
        out.length ? X.el("ul", {}, out.map((e) => X.el("li", {}, `${e.kind}${e.label ? ` “${e.label}”` : ""} → ${e.to}`))) : null);
    }));
  }

  return { render, list };
})();

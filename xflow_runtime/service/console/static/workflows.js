"use strict";
X.ready(async () => {
  const { items, errors } = await X.call("GET", "/v1/workflows");
  const failing = new Set(errors.map((e) => e.file));
  X.$("#workflows tbody").replaceChildren(...items.map((w) => X.el("tr", {},
    X.el("th", { scope: "row" }, X.el("a", { href: `${X.ui}/workflows/${X.enc(w.id)}` }, w.id)),
    X.el("td", {}, w.version || ""), X.el("td", {}, w.name || ""), X.el("td", {}, w.revision),
    X.el("td", {}, w.file),
    X.el("td", {}, failing.has(w.file) ? "no: the file changed and no longer compiles (last good revision served)" : "yes"))));
  X.$("#workflow-errors").replaceChildren(...(errors.length ? errors.map((e) => X.el("li", {}, X.el("strong", {}, e.file), `: ${e.detail}`))
    : [X.el("li", {}, "none")]));
  X.say(`${items.length} workflow(s) loaded`);
});

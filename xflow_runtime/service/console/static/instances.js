"use strict";
X.ready(async () => {
  const form = X.$("#filters");
  const params = new URLSearchParams(location.search);
  const { items: workflows } = await X.call("GET", "/v1/workflows");
  X.$("#filter-workflow").append(...workflows.map((w) => X.el("option", { value: w.id }, w.id)));
  const FIELDS = ["workflow", "status", "user", "started_after", "started_before", "limit"];
  // datetime-local has no zone: the browser's own, sent as an ISO 8601 instant
  const value = (name) => {
    const v = form.elements[name].value;
    return v && name.startsWith("started_") ? new Date(v).toISOString() : v;
  };
  for (const name of FIELDS) if (params.get(name) && !name.startsWith("started_")) form.elements[name].value = params.get(name);
  let next = null;

  async function load(cursor) {
    const query = new URLSearchParams();
    for (const name of FIELDS) if (form.elements[name].value) query.set(name, value(name));
    if (cursor) query.set("cursor", cursor);
    const page = await X.call("GET", `/v1/instances?${query}`);
    next = page.next_cursor;
    X.$("#next-page").disabled = !next;
    X.$("#instances tbody").replaceChildren(...page.items.map((i) => X.el("tr", {},
      X.el("th", { scope: "row" }, X.el("a", { href: `${X.ui}/instances/${X.enc(i.id)}` }, i.id)),
      X.el("td", {}, i.workflow), X.el("td", {}, X.el("span", { class: `status ${i.status}` }, i.status)),
      X.el("td", {}, X.when(i.created_at)), X.el("td", {}, i.user || ""))));
    X.say(`${page.items.length} instance(s) on this page`);
  }
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const query = new URLSearchParams();
    for (const name of FIELDS) if (form.elements[name].value) query.set(name, value(name));
    history.replaceState(null, "", `?${query}`);
    load(null).catch(X.alert);
  });
  X.$("#next-page").addEventListener("click", () => load(next).catch(X.alert));
  X.$("#first-page").addEventListener("click", () => load(null).catch(X.alert));
  await load(null);
});

// A form generated from a JSON Schema (the task's formSchema): objects become fieldsets, strings
// text inputs (enum: a select; format date/date-time/email: the matching input), numbers number
// inputs, booleans a yes/no radio pair (so "not answered" stays possible), anything else a JSON
// text area. The API checks the data; its errors (JSON Pointers under #/data) are shown in place.
"use strict";
const SchemaForm = (() => {
  let counter = 0;
  const INPUT = { date: "date", "date-time": "datetime-local", email: "email", uri: "url" };

  function build(schema, prefix) {
    const root = X.el("div", { class: "schema-form" });
    const read = field(root, schema || {}, "", "Data", prefix || `f${++counter}`, true);
    return { element: root, read, showErrors: (errors) => showErrors(root, errors), clear: () => clear(root) };
  }

  // Adds the control for `schema` at JSON Pointer `pointer` to `parent`; returns a reader of its value.
  function field(parent, schema, pointer, label, id, required) {
    const title = schema.title || label;
    if (schema.type === "object" && schema.properties) {
      const set = X.el("fieldset", { "data-pointer": pointer }, X.el("legend", {}, title));
      if (schema.description) set.append(X.el("p", { class: "help" }, schema.description));
      const need = new Set(schema.required || []);
      const readers = Object.entries(schema.properties).map(([name, sub]) =>
        [name, field(set, sub || {}, `${pointer}/${name}`, name, `${id}-${name}`, need.has(name))]);
      set.append(message(pointer, id));
      parent.append(set);
      return () => {
        const out = {};
        for (const [name, reader] of readers) { const v = reader(); if (v !== undefined) out[name] = v; }
        return Object.keys(out).length || pointer === "" ? out : undefined;  // an untouched inner object is left out
      };
    }
    const wrap = X.el("div", { class: "field", "data-pointer": pointer });
    const msg = message(pointer, id);
    const mark = required ? " (required)" : "";
    const help = schema.description ? X.el("p", { class: "help", id: `${id}-help` }, schema.description) : null;
    const described = [help && `${id}-help`, `${id}-error`].filter(Boolean).join(" ");
    let reader;
    if (schema.type === "boolean") {
      const yes = X.el("input", { type: "radio", name: id, id: `${id}-yes`, value: "true" });
      const no = X.el("input", { type: "radio", name: id, id: `${id}-no`, value: "false" });
      wrap.append(X.el("fieldset", { "aria-describedby": described }, X.el("legend", {}, title + mark),
        yes, X.el("label", { for: `${id}-yes` }, "Yes"), no, X.el("label", { for: `${id}-no` }, "No")), ...[help, msg].filter(Boolean));
      reader = () => (yes.checked ? true : no.checked ? false : undefined);
    } else if (Array.isArray(schema.enum)) {
      const select = X.el("select", { id, "aria-describedby": described }, X.el("option", { value: "" }, "—"),
        schema.enum.map((v, i) => X.el("option", { value: String(i) }, JSON.stringify(v).replace(/^"|"$/g, ""))));
      wrap.append(X.el("label", { for: id }, title + mark), select, ...[help, msg].filter(Boolean));
      reader = () => (select.value === "" ? undefined : schema.enum[Number(select.value)]);
    } else if (["string", "number", "integer"].includes(schema.type)) {
      const numeric = schema.type !== "string";
      const input = X.el("input", { id, type: numeric ? "number" : INPUT[schema.format] || "text",
        step: schema.type === "integer" ? "1" : numeric ? "any" : null, "aria-describedby": described });
      wrap.append(X.el("label", { for: id }, title + mark), input, ...[help, msg].filter(Boolean));
      reader = () => (input.value === "" ? undefined : numeric ? Number(input.value) : input.value);
    } else {
      const area = X.el("textarea", { id, rows: 3, "aria-describedby": described });
      wrap.append(X.el("label", { for: id }, `${title} (JSON)${mark}`), area, ...[help, msg].filter(Boolean));
      reader = () => { if (area.value.trim() === "") return undefined; try { return JSON.parse(area.value); } catch { return area.value; } };
    }
    parent.append(wrap);
    return reader;
  }

  const message = (pointer, id) => X.el("p", { class: "error", id: `${id}-error`, "data-error-for": pointer });

  function clear(root) {
    root.querySelectorAll("[data-error-for]").forEach((p) => { p.textContent = ""; });
    root.querySelectorAll("[aria-invalid]").forEach((c) => c.removeAttribute("aria-invalid"));
  }

  // errors: [{pointer: "#/data/amount", detail}] → each message under its field (or the nearest parent).
  function showErrors(root, errors) {
    clear(root);
    let first = null;
    for (const error of errors) {
      let pointer = (error.pointer || "").replace(/^#\/data/, "").replace(/^#/, "");
      const missing = /^'([^']+)' is a required property/.exec(error.detail || "");  // jsonschema points at the object
      if (missing && root.querySelector(`[data-error-for="${CSS.escape(`${pointer}/${missing[1]}`)}"]`)) pointer = `${pointer}/${missing[1]}`;
      let target = null;
      while (!(target = root.querySelector(`[data-error-for="${CSS.escape(pointer)}"]`)) && pointer) pointer = pointer.replace(/\/[^/]*$/, "");
      if (!target) continue;
      target.textContent = (target.textContent ? target.textContent + " " : "") + error.detail;
      const control = target.closest("[data-pointer]").querySelector("input, select, textarea");
      if (control) { control.setAttribute("aria-invalid", "true"); first = first || control; }
    }
    if (first) first.focus();
  }

  return { build };
})();

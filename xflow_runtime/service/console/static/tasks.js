// The task inbox: my tasks (assigned to me or claimed by me) and my groups' (and open) tasks;
// claim, unclaim, complete through a form generated from the task's JSON Schema.
"use strict";
X.ready(async (who) => {
  const overdue = (task) => task.dueDate && ["open", "claimed"].includes(task.status) && new Date(task.dueDate) < new Date();

  function card(task) {
    const id = `task-${task.id}`;
    const late = overdue(task);
    const item = X.el("li", { class: `task card${late ? " overdue" : ""}`, id, "data-task": task.id, "data-status": task.status },
      X.el("h3", {}, task.taskKey, " ", X.el("span", { class: `status ${task.status}` }, task.status)),
      X.el("dl", { class: "summary" },
        X.el("dt", {}, "Workflow"), X.el("dd", {}, task.workflowId),
        X.el("dt", {}, "Instance"), X.el("dd", {}, X.el("a", { href: `${X.ui}/instances/${X.enc(task.instanceId)}` }, task.instanceId)),
        X.el("dt", {}, "Due"), X.el("dd", {}, task.dueDate ? X.when(task.dueDate) : "—", late ? X.el("strong", { class: "late" }, " Overdue") : null),
        X.el("dt", {}, "Candidates"), X.el("dd", {}, [task.assignee, ...task.candidateUsers, ...task.candidateGroups.map((g) => `group ${g}`)].filter(Boolean).join(", ") || "anyone"),
        X.el("dt", {}, "Claimed by"), X.el("dd", {}, task.claimedBy || "—")),
      X.el("details", {}, X.el("summary", {}, "Task input"), X.el("pre", {}, X.pretty(task.input))));
    const actions = X.el("div", { class: "actions" });
    const act = async (verb) => {
      try { await X.call("POST", `/v1/tasks/${X.enc(task.id)}/${verb}`); X.say(`Task ${task.taskKey}: ${verb}ed`); }
      catch (e) { X.alert(e); }
      await load();
    };
    if (task.status === "open") actions.append(X.el("button", { type: "button", onclick: () => act("claim") }, "Claim"));
    if (task.status === "claimed" && (task.claimedBy === who.user || who.role === "service"))
      actions.append(X.el("button", { type: "button", onclick: () => act("unclaim") }, "Unclaim"));
    item.append(actions);
    if (["open", "claimed"].includes(task.status) && (task.status === "open" || task.claimedBy === who.user)) {
      const form = SchemaForm.build(task.formSchema, `form-${task.id}`);
      const submit = X.el("form", { class: "complete", "aria-label": `Complete ${task.taskKey}` }, form.element,
        X.el("p", { class: "error", role: "alert" }), X.el("button", { type: "submit" }, "Complete"));
      submit.addEventListener("submit", async (event) => {
        event.preventDefault();
        submit.querySelector(":scope > .error").textContent = "";
        form.clear();
        try {
          await X.call("POST", `/v1/tasks/${X.enc(task.id)}/complete`, { json: { data: form.read() } });
          X.say(`Task ${task.taskKey} completed`);
          await load();
        } catch (e) {
          if (e.status === 422 && e.errors.length) form.showErrors(e.errors);
          submit.querySelector(":scope > .error").textContent = e.message;
        }
      });
      item.append(submit);
    } else if (task.status === "completed") {
      item.append(X.el("p", {}, `Completed by ${task.completedBy}: `, X.el("code", {}, JSON.stringify(task.data))));
    }
    return item;
  }

  async function load() {
    const status = X.$("#show-done").checked ? "open,claimed,completed" : "open,claimed";
    const { items } = await X.call("GET", `/v1/tasks?status=${status}`);
    const mine = items.filter((t) => t.assignee === who.user || t.claimedBy === who.user || t.completedBy === who.user);
    const others = items.filter((t) => !mine.includes(t));
    X.$("#tasks-mine").replaceChildren(...(mine.length ? mine.map(card) : [X.el("li", {}, "No tasks.")]));
    X.$("#tasks-groups").replaceChildren(...(others.length ? others.map(card) : [X.el("li", {}, "No tasks.")]));
  }

  X.$("#task-filter").addEventListener("submit", (e) => { e.preventDefault(); load().catch(X.alert); });
  await load();
});

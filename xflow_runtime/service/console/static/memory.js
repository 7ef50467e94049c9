// A user's memory (an operator with a service credential picks the user; an end user sees
// themself): chats, memories and facts per agent, consent, export download, erasure with receipt.
"use strict";
X.ready(async (who) => {
  const form = X.$("#user-form");
  if (who.role !== "service") {
    X.$("#user-id").value = who.user || "";
    X.$("#user-id").readOnly = true;
  }
  let user = null;

  async function show(keepReceipt = false) {
    user = X.$("#user-id").value.trim();
    if (!user) return;
    const u = X.enc(user);
    const q = who.role === "service" ? `user=${u}&` : "";
    X.$("#user-view").hidden = false;
    if (!keepReceipt) X.$("#receipt-box").hidden = true;
    const consent = await X.call("GET", `/v1/users/${u}/consent`);
    X.$("#consent-now").textContent = consent.consent;
    for (const radio of document.querySelectorAll('input[name="consent"]')) radio.checked = radio.value === consent.consent;
    const chats = (await X.call("GET", `/v1/chats?${q}limit=200`)).items;
    X.$("#chats").replaceChildren(...(chats.length ? chats.map((c) => X.el("li", {},
      X.el("strong", {}, c.title || c.id), ` — agent ${c.agent}, ${c.message_count} message(s), updated ${X.when(c.updated_at)}`))
      : [X.el("li", {}, "No chats.")]));
    const agents = [...new Set(chats.map((c) => c.agent).filter(Boolean))];
    const memories = [], facts = [];
    for (const agent of agents) {
      const a = X.enc(agent);
      (await X.call("GET", `/v1/agents/${a}/memories?${q}limit=200`)).items.forEach((m) => memories.push([agent, m]));
      (await X.call("GET", `/v1/agents/${a}/facts?${q}limit=200`)).items.forEach((f) => facts.push([agent, f]));
    }
    X.$("#memories").replaceChildren(...(memories.length ? memories.map(([agent, m]) => X.el("li", {},
      X.el("strong", {}, m.title), ` (${agent}) ${m.content}`)) : [X.el("li", {}, "No memories.")]));
    X.$("#facts").replaceChildren(...(facts.length ? facts.map(([agent, f]) => X.el("li", {},
      `${f.content} (${agent}${f.category ? `, ${f.category}` : ""})`)) : [X.el("li", {}, "No facts.")]));
    X.say(`${chats.length} chat(s), ${memories.length} memory(ies), ${facts.length} fact(s) for ${user}`);
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); show(false).catch(X.alert); });
  X.$("#consent-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const chosen = document.querySelector('input[name="consent"]:checked');
    if (!chosen) { X.alert("Choose allowed or refused."); return; }
    try {
      const saved = await X.call("PUT", `/v1/users/${X.enc(user)}/consent`, { json: { consent: chosen.value } });
      X.$("#consent-now").textContent = saved.consent;
      X.say(`Consent saved: ${saved.consent}`);
    } catch (error) { X.alert(error); }
  });
  X.$("#export").addEventListener("click", async () => {
    try {
      const response = await X.call("GET", `/v1/users/${X.enc(user)}/export`, { raw: true });
      const url = URL.createObjectURL(new Blob([await response.text()], { type: "application/json" }));
      const link = X.el("a", { href: url, download: `xflow-export-${user}.json` });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      X.say("Export downloaded");
    } catch (error) { X.alert(error); }
  });
  X.$("#erase-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (X.$("#erase-confirm").value.trim() !== user) { X.alert(`Type ${user} to confirm.`); X.$("#erase-confirm").focus(); return; }
    try {
      const receipt = await X.call("DELETE", `/v1/users/${X.enc(user)}`);
      const rows = (store) => Object.values((store && store.deleted) || {}).reduce((a, b) => a + b, 0);
      X.$("#receipt-summary").textContent = `Erased ${receipt.user} of tenant ${receipt.tenant}: ` +
        `${rows(receipt.stores.memory)} memory row(s), ${rows(receipt.stores.durable)} durable row(s), ` +
        `${(receipt.cancelled_instances || []).length} instance(s) cancelled (erasure epoch ${receipt.erasure_epoch}).`;
      X.$("#receipt").textContent = X.pretty(receipt);
      X.$("#receipt-box").hidden = false;
      X.$("#erase-confirm").value = "";
      await show(true);  // what is left of the user now (nothing)
      X.say("User erased; receipt shown");
    } catch (error) { X.alert(error); }
  });
  if (who.role !== "service") await show(false);
});

// medgate's page: ask a question and watch the gate work; work the clinician queue.
// Plain JS, no build step. Everything from the server is inserted with textContent, never as HTML.
// The ask side runs with a client key, so the server sends it only what the person asking may
// see (no drafts, no held-back answer); the queue runs with a clinician key and sees everything.
"use strict";

const $ = (id) => document.getElementById(id);
const SEVERITY_ORDER = ["critical", "high", "medium", "low", "info"];

// -- tabs ---------------------------------------------------------------------------------
for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    for (const other of document.querySelectorAll(".tab")) other.classList.remove("active");
    for (const view of document.querySelectorAll(".view")) view.hidden = true;
    tab.classList.add("active");
    $(tab.dataset.view).hidden = false;
  });
}

// Keys are kept for this browser tab only.
for (const id of ["client-key", "clinician-key"]) {
  const input = $(id);
  input.value = sessionStorage.getItem(id) || "";
  input.addEventListener("change", () => sessionStorage.setItem(id, input.value.trim()));
}

function authHeaders(keyInputId) {
  return {
    "Authorization": "Bearer " + $(keyInputId).value.trim(),
    "Content-Type": "application/json",
  };
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) {
      return body.detail.map((d) => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
    }
  } catch (_) { /* not JSON */ }
  return `${response.status} ${response.statusText}`;
}

// -- ask ----------------------------------------------------------------------------------
$("ask-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = $("ask");
  button.disabled = true;
  $("ask-error").hidden = true;
  $("events").replaceChildren();
  $("result").hidden = true;
  $("safety").hidden = true;
  const body = { question: $("question").value, context: $("context").value };
  // Labels are sent only when chosen: a question without them is an open one, triaged first.
  if ($("labels").value) body.labels = $("labels").value;
  try {
    const response = await fetch("/v1/ask/stream", {
      method: "POST",
      headers: authHeaders("client-key"),
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(await errorText(response));
    for await (const item of readEvents(response)) {
      showEvent(item);
      if (item.kind === "decision") showDecision(item.data);
    }
  } catch (err) {
    $("ask-error").textContent = String(err.message || err);
    $("ask-error").hidden = false;
  } finally {
    button.disabled = false;
  }
});

// Server-Sent Events over fetch (EventSource cannot POST or send headers).
async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trim()).join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

function showEvent(item) {
  const li = document.createElement("li");
  li.className = "event event-" + item.kind;
  const kind = document.createElement("span");
  kind.className = "kind";
  kind.textContent = item.kind;
  li.append(kind, ` · ${item.stage}`);
  if (item.iteration !== null && item.iteration !== undefined) li.append(` · round ${item.iteration}`);
  const summary = summarise(item);
  if (summary) {
    const span = document.createElement("span");
    // The answer event is the model's draft, before the gate has decided: never shown as final.
    span.className = item.kind === "answer" ? "draft" : "";
    span.textContent = " — " + summary;
    li.append(span);
  }
  $("events").append(li);
}

const ROUTES = {
  hrs: "HRS gate (closed research question)",
  careguard: "CareGuard gate (question about health or care, triaged first)",
};

function summarise(item) {
  const d = item.data || {};
  switch (item.kind) {
    case "route": return `to the ${ROUTES[d.route] || d.route}`;
    case "answer": return "draft answer, being checked";
    case "signals":
      return Object.entries(d).filter(([, s]) => s && typeof s.value === "number")
        .map(([name, s]) => `${name} ${s.value.toFixed(3)}`).join(", ");
    case "safety": {
      const scores = Object.entries(d.assessments || {})
        .map(([name, a]) => `${name.toUpperCase()} ${a && a.ran ? a.score : "off"}`);
      return `${scores.join(", ")}: ${d.passed ? "passed" : "not passed"}`;
    }
    case "claims":
      return `${d.flag_count || 0} claim flags (${d.high_severity_count || 0} high)`;
    case "decision": return d.status;
    case "error": return d.error || "error";
    case "triage": return d.category || "";
    default: return "";
  }
}

function showDecision(d) {
  $("result").hidden = false;
  const status = $("status");
  status.textContent = d.status;
  status.className = "badge status-" + d.status;
  $("route").textContent = d.route ? "Answered by the " + (ROUTES[d.route] || d.route) : "";
  $("route").hidden = !d.route;
  $("reason").textContent = d.reason || "";
  const answer = $("answer");
  $("escalation-block").hidden = true;
  $("review").hidden = true;
  answer.textContent = "";
  if (d.status === "released" || d.status === "refined") {
    answer.textContent = d.answer || "";
    showSafety(d.safety);
  } else if (d.status === "escalated") {
    answer.textContent = "This question has been passed to a clinician, who will answer it.";
    if (d.escalation_id) {
      $("escalation").textContent = "Escalation " + d.escalation_id;
      $("check-review").dataset.verdictId = d.verdict_id;
      $("escalation-block").hidden = false;
    }
  } else if (d.status === "needs_context") {
    answer.textContent = d.answer || "More information is needed before this can be answered.";
  } else {
    answer.textContent = d.answer || "This question cannot be answered here. Please ask a clinician.";
  }
}

// Once a clinician has resolved the escalation, show what they decided.
$("check-review").addEventListener("click", async () => {
  const id = $("check-review").dataset.verdictId;
  const review = $("review");
  review.hidden = false;
  const response = await fetch(`/v1/verdicts/${encodeURIComponent(id)}`,
    { headers: authHeaders("client-key") });
  if (!response.ok) {
    review.textContent = await errorText(response);
    return;
  }
  const v = await response.json();
  if (v.escalation_state !== "resolved") {
    review.textContent = "Not answered yet: a clinician has "
      + (v.escalation_state === "claimed" ? "taken the case." : "not taken the case yet.");
  } else if (v.resolution === "answer") {
    review.textContent = "Clinician's answer: " + v.released_answer;
  } else if (v.resolution === "approve") {
    review.textContent = "A clinician approved the model's answer: " + v.released_answer;
  } else {
    review.textContent = "A clinician reviewed this question and did not release an answer. "
      + "Please speak to your care team.";
  }
});

function showSafety(data) {
  if (!data) return;
  // Flags of the released answer only (the server drops any about other drafts).
  const flags = (data.flags || []).map((f) => ({
    severity: String(f.severity || "info").toLowerCase(),
    text: f.suggestion ? `${f.sentence} — ${f.suggestion}` : f.sentence,
  }));
  const groups = $("flags");
  groups.replaceChildren();
  const severities = [...SEVERITY_ORDER, ...new Set(flags.map((f) => f.severity))]
    .filter((s, i, all) => all.indexOf(s) === i);
  for (const severity of severities) {
    const items = flags.filter((f) => f.severity === severity);
    if (!items.length) continue;
    const group = document.createElement("div");
    group.className = "flag-group sev-" + severity;
    const title = document.createElement("h4");
    title.textContent = `${severity} (${items.length})`;
    const list = document.createElement("ul");
    for (const f of items) {
      const li = document.createElement("li");
      li.textContent = f.text;
      list.append(li);
    }
    group.append(title, list);
    groups.append(group);
  }
  const warnings = data.warnings || [];
  $("warnings").replaceChildren(...warnings.map((w) => {
    const li = document.createElement("li");
    li.textContent = String(w);
    return li;
  }));
  $("warnings-block").hidden = warnings.length === 0;
  $("disclaimer").textContent = data.disclaimer || "";
  $("safety").hidden = false;
}

// -- clinician queue ----------------------------------------------------------------------
$("queue-form").addEventListener("submit", (event) => {
  event.preventDefault();
  loadQueue();
});

async function loadQueue(message) {
  const state = $("queue-state").value;
  const url = "/v1/escalations" + (state ? "?state=" + encodeURIComponent(state) : "");
  const headers = { headers: authHeaders("clinician-key") };
  const [response, people] = await Promise.all([fetch(url, headers), fetch("/v1/clinicians", headers)]);
  if (!response.ok) {
    $("queue-message").textContent = await errorText(response);
    return;
  }
  const body = await response.json();
  const colleagues = people.ok ? await people.json() : [];
  $("queue").replaceChildren(...body.items.map((esc) => renderCase(esc, colleagues)));
  $("queue-message").textContent = message
    || (body.items.length ? `${body.items.length} case(s)` : "No cases.");
}

function renderCase(esc, colleagues) {
  const node = $("case-template").content.firstElementChild.cloneNode(true);
  node.dataset.id = esc.id;
  const q = (sel) => node.querySelector(sel);
  q(".state").textContent = esc.state;
  q(".state").classList.add("state-" + esc.state);
  q(".when").textContent = new Date(esc.created_at).toLocaleString();
  q(".question").textContent = esc.verdict.case.question;
  if (esc.verdict.case.context) q(".context").textContent = esc.verdict.case.context;
  else q(".context-block").hidden = true;
  const errors = esc.verdict.trace.errors || [];
  q(".why").textContent = "Held because: " + esc.verdict.reason
    + (errors.length ? " (" + errors.join("; ") + ")" : "");
  const route = (esc.verdict.trace.stages.route || {}).route;
  q(".route").textContent = route ? "Route: " + (ROUTES[route] || route) : "";
  const held = esc.verdict.held_back;
  q(".model-answer").textContent = held
    ? `Model's answer (held back, ${held.source}): ${held.answer}`
    : "No model answer was kept.";
  if (held && held.reasoning) {
    q(".reasoning").textContent = held.reasoning;
    q(".reasoning-block").hidden = false;
  }
  q(".holder").textContent = esc.claimed_by ? "Held by key " + esc.claimed_by : "";
  if (esc.state === "resolved") {
    q(".outcome").textContent = `Resolved (${esc.resolution}): ${esc.note}`
      + (esc.answer ? ` — released: ${esc.answer}` : "");
  }
  const claim = q(".claim");
  claim.hidden = esc.state !== "open";
  claim.addEventListener("click", () => act(esc.id, "claim", null));
  const handover = q(".handover");
  handover.hidden = esc.state !== "claimed";
  q(".release").addEventListener("click", () => act(esc.id, "release", null));
  const colleague = q(".colleague");
  colleague.replaceChildren(...colleagues.filter((c) => c.id !== esc.claimed_by).map((c) => {
    const option = document.createElement("option");
    option.value = c.id;
    option.textContent = `${c.name} (${c.id})`;
    return option;
  }));
  q(".reassign").disabled = colleague.options.length === 0;
  q(".reassign").addEventListener("click", () => act(esc.id, "reassign", { to: colleague.value }));
  const form = q(".resolve");
  form.hidden = esc.state !== "claimed";
  const action = q(".action");
  // Nothing to approve when the gate kept no answer.
  action.querySelector('option[value="approve"]').disabled = !held;
  const syncAnswerField = () => { q(".answer-field").hidden = action.value !== "answer"; };
  action.addEventListener("change", syncAnswerField);
  syncAnswerField();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const body = { action: action.value, note: q(".clinician-note").value };
    if (action.value === "answer") body.answer = q(".clinician-answer").value;
    act(esc.id, "resolve", body);
  });
  return node;
}

async function act(id, verb, body) {
  const response = await fetch(`/v1/escalations/${encodeURIComponent(id)}/${verb}`, {
    method: "POST",
    headers: authHeaders("clinician-key"),
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!response.ok) {
    $("queue-message").textContent = `Could not ${verb}: ` + await errorText(response);
    return;
  }
  const esc = await response.json();
  if (verb === "claim") {
    // Show the case just claimed with its resolve form, whatever the filter was.
    $("queue-state").value = "claimed";
    await loadQueue("Claimed. Resolve it below.");
  } else if (verb === "release") {
    $("queue-state").value = "open";
    await loadQueue("Released to the queue.");
  } else if (verb === "reassign") {
    $("queue-state").value = "claimed";
    await loadQueue(`Reassigned to ${esc.claimed_by}.`);
  } else {
    $("queue-state").value = "resolved";
    await loadQueue(`Resolved (${esc.resolution}).`);
  }
}

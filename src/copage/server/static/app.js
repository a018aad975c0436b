// copage inspector: reads /ui/api/* with the tenant's key (kept in sessionStorage).
"use strict";
const $ = (id) => document.getElementById(id);
const KEY = "copage.key";

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

async function api(path) {
  const key = sessionStorage.getItem(KEY) || "";
  const r = await fetch("/ui/api/" + path, { headers: { Authorization: "Bearer " + key } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((body.error && body.error.message) || ("HTTP " + r.status));
  return body;
}

function showLogin(message) {
  $("login").hidden = false; $("main").hidden = true; $("logout").hidden = true;
  $("who").textContent = ""; $("login-error").textContent = message || "";
}

// quiet: a first look without a key (a proxy with no keys answers it); a refusal
// then shows the login box without an error.
async function loadList(quiet) {
  let data;
  try { data = await api("conversations"); }
  catch (e) { showLogin(quiet ? "" : e.message); return; }
  $("login").hidden = true; $("main").hidden = false;
  $("logout").hidden = !sessionStorage.getItem(KEY);
  $("who").textContent = "tenant: " + data.tenant;
  const list = $("conversations");
  list.replaceChildren();
  $("no-conversations").hidden = data.conversations.length > 0;
  for (const c of data.conversations) {
    const when = new Date(c.updated_at * 1000).toLocaleString();
    const li = el("li", { className: "conv" }, c.first_message || c.id,
      el("small", {}, `${when}; ${c.turns} turns, ${c.pages} pages; ${c.id}`));
    li.dataset.id = c.id;
    li.onclick = () => openConversation(c.id);
    list.append(li);
  }
  const wanted = new URLSearchParams(location.search).get("c");
  if (wanted) openConversation(wanted);
}

async function openConversation(id) {
  for (const li of document.querySelectorAll("#conversations li"))
    li.classList.toggle("active", li.dataset.id === id);
  let c;
  try { c = await api("conversations/" + encodeURIComponent(id)); }
  catch (e) { $("pick").textContent = e.message; $("pick").hidden = false;
    $("conversation").hidden = true; return; }
  $("pick").hidden = true; $("conversation").hidden = false;
  $("conv-title").textContent = c.id;
  const s = c.stats, n = c.counts;
  $("conv-summary").textContent = `${s.turns} turns, ${s.pages} pages (${s.resident.length} ` +
    `resident, ${s.evicted} evicted), ${n.faults} faults, ${s.hits} hits, ${n.recalls} recalls, ` +
    `${n.fills} fills (${n.fill_pages} pages); ` +
    `latest request ${s.prompt_tokens} tokens as sent (whole conversation ${s.full_tokens}); ` +
    `${c.config.boundary} / ` +
    `${c.config.policy} / k=${c.config.resident_pages ?? "tokens"}`;
  const pc = s.prompt_cache;
  const cost = pc && pc.cost_usd && pc.cost_usd["gpt-4o-mini"];
  $("conv-cache").textContent = pc && pc.requests && cost
    ? `Prompt cache: ${pc.requests} requests, median ${Math.round(pc.prefix_share_median * 100)}% ` +
      `of a prompt repeats the previous one; input with caching (gpt-4o-mini) ` +
      `$${cost.paged_cached.toFixed(6)}, full context $${cost.full_cached.toFixed(6)}`
    : "Prompt cache: no request metered";
  // Has paging paid for itself? Each model's input cost of the requests as sent against
  // the whole conversation sent each time, both with prompt caching priced.
  const saved = Object.values(s.savings || {});
  $("conv-savings").textContent = saved.length
    ? "Paging so far, caching priced: " + saved.map((v) =>
      `${v.model} ${v.saved ? "saved" : "cost"} $${Math.abs(v.saved_usd).toFixed(6)}` +
      `${v.saved ? "" : " more"} (sent $${v.paged_usd.toFixed(6)}, ` +
      `whole conversation $${v.full_usd.toFixed(6)})`).join("; ")
    : "Paging so far: no request sent";
  const body = document.querySelector("#pages tbody");
  body.replaceChildren();
  for (const p of c.pages) {
    const turns = el("details", {}, el("summary", {}, `${p.first_turn}–${p.last_turn} (${p.n_turns})`),
      ...p.turns.map((t) => el("div", { className: "turn" }, `${t.role}: ${t.text}`,
        t.trace_id ? el("small", { className: "trace" }, ` trace ${t.trace_id}`) : "")));
    const row = el("tr", { className: "page " + p.state },
      el("td", { className: "id" }, p.id), el("td", { className: "turns" }, turns),
      el("td", { className: "bookmark" }, p.bookmark || ""),
      el("td", { className: "state" }, p.state), el("td", { className: "accesses" }, p.accesses),
      el("td", { className: "last" }, p.last_access_turn ?? "—"),
      el("td", { className: "faults" }, p.faults));
    row.dataset.page = p.id;
    body.append(row);
  }
  const recalls = $("recalls");
  recalls.replaceChildren();
  for (const group of c.recalls_by_turn) {
    const items = group.recalls.map((r) => {
      const d = r.detail || {};
      if (r.kind === "speculative") return `fill ${(d.paged_in || []).join(", ")}`;
      return `${r.page || "?"} ${d.status || ""}${d.message ? " (" + d.message + ")" : ""}`;
    });
    const li = el("li", { className: "recall-turn" }, `turn ${group.turn}: ${items.join("; ")}`);
    recalls.append(li);
  }
  if (!c.recalls_by_turn.length) recalls.append(el("li", { className: "hint" }, "no recalls or fills yet"));
  const tl = $("timeline");
  tl.replaceChildren();
  for (const e of c.events) {
    const [label, empty] = eventLabel(e);
    const tag = el("span", { className: "event " + e.kind + (empty ? " empty" : ""),
      title: JSON.stringify(e.detail) }, label);
    tl.append(tag);
  }
}

// A speculative event names the best-matching evicted page even when nothing was
// shown (its score below the threshold): label it with the pages the fill showed.
function eventLabel(e) {
  if (e.kind === "speculative") {
    const shown = (e.detail && e.detail.paged_in) || [];
    return shown.length ? [`t${e.turn} speculative ${shown.join(", ")}`, false]
                        : [`t${e.turn} speculative: none shown`, true];
  }
  return [`t${e.turn} ${e.kind}${e.page ? " " + e.page : ""}`, false];
}

$("login-form").onsubmit = (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(KEY, $("key").value.trim());
  $("key").value = "";
  loadList();
};
$("logout").onclick = () => { sessionStorage.removeItem(KEY); loadList(true); };
// A proxy without keys (one local tenant) opens on the list; with keys, on the login.
loadList(sessionStorage.getItem(KEY) === null);

"use strict";
// The page: sign-in, the conversation list, one conversation, sending,
// and the update loop (sync; the live channel wakes it when the server
// has one).
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };

const state = {
  api: null, store: null, me: "", convs: new Map(), listNext: "", open: null,
  syncing: false, again: false, online: false, live: null, pollMs: 3000,
  receipts: new Map(), // conv → the newest receipt frame of the live channel
  rejectionDue: 0, // ms until an accepted message is due to be asked about (0: none)
};

// ---- sign-in ----------------------------------------------------------

// The protocol is the client module's (clients/js, served as
// /static/offlinebox.js); storage and drawing are the page's.
const claimsOf = (token) => Offlinebox.claimsOf(token);

function deviceFor(claims) {
  if (claims.dev) return { id: claims.dev, own: false };
  let id = localStorage.getItem("offlinebox.device");
  if (!id) { id = "web-" + crypto.randomUUID().slice(0, 8); localStorage.setItem("offlinebox.device", id); }
  return { id, own: true };
}

// The token is kept for this tab only (sessionStorage: gone when the tab
// closes) unless the user asked to stay signed in on this device
// (localStorage). keepToken keeps it in one place and never both.
const TOKEN_KEY = "offlinebox.token";
function keepToken(token, stay) {
  (stay ? sessionStorage : localStorage).removeItem(TOKEN_KEY);
  (stay ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
}
function forgetToken() { sessionStorage.removeItem(TOKEN_KEY); localStorage.removeItem(TOKEN_KEY); }

async function signIn(token, stay) {
  const claims = claimsOf(token);
  if (!claims.sub) throw new Error("the token names no user (sub)");
  const device = deviceFor(claims);
  state.api = new Api(token, device);
  state.me = claims.sub;
  state.store = await LocalStore.open(`offlinebox:${claims.sub}:${device.id}`);
  await state.api.conversations(1); // the token works
  keepToken(token, stay);
  $("signin").hidden = true;
  $("loading").hidden = true;
  $("app").hidden = false;
  $("me-name").textContent = claims.sub;
  paintAvatar($("me-avatar"), claims.sub);
  for (const c of await state.store.cachedConvs()) state.convs.set(c.conv_id, c);
  renderList();
  await loadList();
  startUpdates();
}

function showSignIn(msg) {
  $("loading").hidden = true;
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = msg || "";
}

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try { await signIn($("token").value.trim(), $("stay-signed-in").checked); } catch (err) { showSignIn(err.message); }
});
$("signout").addEventListener("click", () => { forgetToken(); location.hash = ""; location.reload(); });

// ---- conversation list --------------------------------------------------

function displayName(c) {
  if (c.kind === "group" || c.conv_id.startsWith("g-")) return "# " + c.conv_id.replace(/^g-/, "");
  const peer = c.conv_id.replace(/^d-/, "").split("-").find((p) => p && p !== state.me);
  return peer || c.conv_id;
}

function paintAvatar(e, name) {
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.codePointAt(0)) % 360;
  e.style.background = `hsl(${h} 55% 50%)`;
  e.textContent = name.replace(/^[#\s]+/, "").slice(0, 1);
}

function timeOf(ms) {
  if (!ms) return "";
  const d = new Date(ms), now = new Date();
  return d.toDateString() === now.toDateString() ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], { month: "short", day: "numeric" });
}

async function loadList(more) {
  const t0 = performance.now();
  const page = await Api.retry(() => state.api.conversations(50, more ? state.listNext : ""));
  const ms = performance.now() - t0;
  if (!more) state.convs.clear();
  for (const c of page.conversations || []) state.convs.set(c.conv_id, c);
  if (typeof keepStarted === "function") keepStarted();
  state.listNext = page.next || "";
  $("list-timing").textContent = `${state.convs.size} conversations · list in ${ms.toFixed(0)} ms`;
  await state.store.keepConvs(page.conversations || []);
  renderList();
}
$("more-convs").addEventListener("click", () => loadList(true));

function renderList() {
  const ul = $("convs");
  ul.replaceChildren();
  const list = [...state.convs.values()].sort((a, b) => (b.last_active_ms || 0) - (a.last_active_ms || 0));
  for (const c of list) {
    const li = el("li");
    li.dataset.conv = c.conv_id;
    if (state.open && state.open.conv_id === c.conv_id) li.classList.add("active");
    const name = displayName(c);
    const av = el("span", "avatar");
    paintAvatar(av, name);
    const body = el("div", "conv-body");
    const top = el("div", "conv-top");
    top.append(el("span", "conv-name", name), el("span", "conv-time", timeOf(c.preview ? c.preview.ts : c.last_active_ms)));
    const bottom = el("div", "conv-bottom");
    const p = c.preview;
    bottom.append(el("span", "conv-preview", p ? `${p.sender === state.me ? "You" : p.sender}: ${p.text || "…"}` : ""));
    const badges = el("span", "badges");
    if (c.mentions > 0) badges.append(el("span", "badge mention", "@"));
    if (c.unread > 0) badges.append(el("span", "badge unread", c.unread > 999 ? "999+" : String(c.unread)));
    bottom.append(badges);
    body.append(top, bottom);
    li.append(av, body);
    li.addEventListener("click", () => openConv(c.conv_id));
    ul.append(li);
  }
  $("more-convs").hidden = !state.listNext;
}

// ---- one conversation ---------------------------------------------------

// open: { conv_id, oldest (seq of the oldest shown), incompleteAt, start }
async function openConv(conv) {
  state.open = { conv_id: conv, oldest: 0, incompleteAt: 0, start: false, fromHistory: false };
  const c = state.convs.get(conv) || { conv_id: conv };
  $("conv-empty").hidden = true;
  $("conv-inner").hidden = false;
  $("conv-title").textContent = displayName(c);
  $("conv-sub").textContent = c.kind === "group" ? "group" : "direct";
  if (typeof showMembers === "function") showMembers(c);
  renderList();
  let shown = await state.store.messages(conv, Number.MAX_SAFE_INTEGER, 50);
  const top = shown.length ? shown[shown.length - 1].seq : 0;
  // Pull the newest page only when the device does not hold it already.
  if (!c.started && (shown.length < 50 && !(shown.length && shown[0].seq <= 1) || top < (c.last_seq || 0))) {
    try {
      const page = await Api.retry(() => state.api.newest(conv, 50));
      await state.store.storeMessages(page.messages || []);
      if (page.incomplete) state.open.incompleteAt = (page.messages || [])[0] ? page.messages[0].seq : page.first_seq;
      shown = await state.store.messages(conv, Number.MAX_SAFE_INTEGER, 50);
    } catch (e) { setStatus(false, e.message); }
  }
  await renderMessages(true);
  markRead();
}

async function renderMessages(toBottom) {
  const o = state.open;
  if (!o) return;
  const box = $("messages");
  const nearBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const limit = Math.max(50, o.count || 0);
  const msgs = await state.store.messages(o.conv_id, Number.MAX_SAFE_INTEGER, limit);
  o.count = msgs.length;
  o.oldest = msgs.length ? msgs[0].seq : 0;
  o.start = o.start || (msgs.length > 0 && msgs[0].seq <= 1);
  const ol = $("message-list");
  ol.replaceChildren();
  if (o.start) ol.append(el("li", "notice", "Start of the conversation"));
  let prev = 0;
  for (const m of msgs) {
    if (o.incompleteAt && m.seq === o.incompleteAt && !o.start) {
      ol.append(el("li", "divider", "Incomplete: older messages left the recent window; “Load older” reads them from history"));
    } else if (prev && m.seq > prev + 1) {
      ol.append(el("li", "divider", `${m.seq - prev - 1} messages not loaded here`));
    }
    prev = m.seq;
    ol.append(messageItem(m, false));
  }
  const held = new Set(msgs.map((m) => m.client_msg_id));
  for (const p of await state.store.pending(o.conv_id)) if (!held.has(p.client_msg_id)) ol.append(messageItem(p, true));
  $("load-more").hidden = o.start;
  if (toBottom || nearBottom) box.scrollTop = box.scrollHeight;
}

function messageItem(m, pending) {
  if (m.kind === "member_join" || m.kind === "member_leave") {
    const who = (m.recipients || []).join(", ");
    return el("li", "notice", m.kind === "member_join" ? `${m.sender} added ${who}` : `${who} left`);
  }
  const mine = m.sender === state.me || pending;
  const rejected = pending && m.rejected;
  const li = el("li", "msg" + (mine ? " mine" : "") + (pending ? " pending" : "") + (rejected ? " rejected" : ""));
  if ((m.mentions || []).includes(state.me) || m.mention_all) li.classList.add("mentioned");
  li.dataset.cmid = m.client_msg_id;
  if (!pending) li.dataset.seq = String(m.seq);
  li.append(el("div", "who", m.sender || ""), el("div", "text", m.text || ""));
  const meta = el("div", "meta");
  meta.append(el("span", "", timeOf(m.write_time_ms || m.created_ms)));
  if (rejected) {
    // Refused by the pipeline: never sent again; the user dismisses it.
    // Why is said inside the bubble, wrapped, in the server's one plain
    // sentence (its code on the element for styling and tests).
    const why = el("div", "refusal", m.rejected.reason || "The message could not be sent.");
    if (m.rejected.code) why.dataset.code = m.rejected.code;
    li.append(why);
    meta.append(el("span", "tick rejected", " · not sent"));
    const dismiss = el("button", "dismiss", "dismiss");
    dismiss.type = "button";
    dismiss.addEventListener("click", async () => { await state.store.dropSending(m.client_msg_id); renderMessages(false); });
    meta.append(dismiss);
  } else if (mine) {
    const t = pending ? { text: "sending…", cls: "" } : tickOf(m);
    meta.append(el("span", "tick " + t.cls, " · " + t.text));
  }
  li.append(meta);
  return li;
}

// tickOf is the state of one of my messages: sent (it has its seq),
// pushed (written to a live connection of a recipient, not yet acked),
// delivered (a device of the peer stored it) or read; in a group, how many
// of the other members got that far. A state the page does not know is
// shown as sent.
function tickOf(m) {
  const c = state.convs.get(m.conv_id) || {};
  const r = state.receipts.get(m.conv_id);
  if (c.kind !== "group") {
    const read = Math.max(c.peer_read_seq || 0, (r && r.peer_read_seq) || 0);
    const delivered = Math.max(read, c.peer_delivered_seq || 0, (r && r.peer_delivered_seq) || 0);
    if (read >= m.seq) return { text: "✓✓ read", cls: "read" };
    if (delivered >= m.seq) return { text: "✓✓ delivered", cls: "delivered" };
    if (r && r.seq >= m.seq && r.pushed > 0) return { text: "✓ pushed", cls: "pushed" };
    return { text: "✓ sent", cls: "" };
  }
  if (r && r.seq >= m.seq && r.members > 0) {
    if (r.read > 0) return { text: `✓✓ read by ${r.read} of ${r.members}`, cls: "read" };
    if (r.delivered > 0) return { text: `✓✓ delivered to ${r.delivered} of ${r.members}`, cls: "delivered" };
    if (r.pushed > 0) return { text: `✓ pushed to ${r.pushed} of ${r.members}`, cls: "pushed" };
  }
  return { text: "✓ sent", cls: "" };
}

$("load-more").addEventListener("click", loadOlder);

// loadOlder reads older messages: from the device first, then the Redis
// window, then history once the window ended. A hole among what is shown
// (a sync gave the newest messages and named a gap below them) is filled
// first, from its top.
async function loadOlder() {
  const o = state.open;
  if (!o || o.start) return;
  const shown = await state.store.messages(o.conv_id, Number.MAX_SAFE_INTEGER, Math.max(50, o.count || 0));
  let below = o.oldest;
  for (let i = shown.length - 1; i > 0; i--) {
    if (shown[i - 1].seq !== shown[i].seq - 1) { below = shown[i].seq; break; }
  }
  const filling = below !== o.oldest;
  const held = filling ? [] : await state.store.messages(o.conv_id, o.oldest || Number.MAX_SAFE_INTEGER, 50);
  const contiguous = held.length > 0 && held[held.length - 1].seq === o.oldest - 1;
  if (!contiguous && below > 1) {
    try {
      let page = o.fromHistory && !filling ? { messages: [] } : await Api.retry(() => state.api.before(o.conv_id, below, 50));
      if ((page.messages || []).length === 0) {
        if (!o.fromHistory) o.incompleteAt = below;
        o.fromHistory = true;
        page = await Api.retry(() => state.api.history(o.conv_id, below, 50));
      } else if (page.incomplete && page.messages[0].seq > 1) {
        o.incompleteAt = page.messages[0].seq;
      }
      if ((page.messages || []).length === 0 && !filling) o.start = true;
      await state.store.storeMessages(page.messages || []);
    } catch (e) {
      if (e.status === 501) { o.start = true; } else { setStatus(false, e.message); }
    }
  }
  o.count = (o.count || 0) + 50;
  const box = $("messages"), before = box.scrollHeight;
  await renderMessages(false);
  box.scrollTop += box.scrollHeight - before;
}

function markRead() {
  const o = state.open;
  const c = o && state.convs.get(o.conv_id);
  if (!c || !c.last_seq || c.read_seq >= c.last_seq) return;
  const epoch = c.epoch || undefined;
  state.api.read([{ conv_id: c.conv_id, seq: c.last_seq, ...(epoch ? { epoch } : {}) }]).then(() => {
    c.unread = 0; c.mentions = 0; c.read_seq = c.last_seq;
    renderList();
  }).catch((e) => setStatus(false, e.message));
}

// ---- sending ------------------------------------------------------------

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const o = state.open;
  const text = $("compose").value.trim();
  if (!o || !text) return;
  $("compose").value = "";
  const c = state.convs.get(o.conv_id) || {};
  const group = c.kind === "group" || o.conv_id.startsWith("g-");
  const m = Offlinebox.textMessage({ convId: o.conv_id, convType: group ? "group" : "direct", text, to: group ? "" : await peerOf(o.conv_id) });
  await state.store.keepSending({ ...m, sender: state.me, text, created_ms: Date.now() });
  await renderMessages(true);
  await flush();
  wake();
});

async function peerOf(conv) {
  const c = state.convs.get(conv);
  if (c && c.peer) return c.peer;
  const msgs = await state.store.messages(conv, Number.MAX_SAFE_INTEGER, 50);
  for (const m of msgs) {
    if (m.sender && m.sender !== state.me) return m.sender;
    for (const r of m.recipients || []) if (r !== state.me) return r;
  }
  return displayName({ conv_id: conv });
}

// flush sends what waits, oldest first, each with its own client_msg_id
// (a resend gets the same seq); it stops at the first that fails.
async function flush() {
  for (const p of await state.store.pending()) {
    if (p.accepted) continue;
    const { sender, text, created_ms, accepted, ...m } = p;
    try {
      await state.api.send(m);
      await state.store.markAccepted(p.client_msg_id);
    } catch (e) {
      if (e.retryable) { setStatus(false, e.message); return; }
      await state.store.dropSending(p.client_msg_id);
      setStatus(true, `not sent: ${e.message}`);
    }
  }
}

// checkRejections asks whether the pipeline refused the messages the
// server accepted that have not come back with their seq: a page closed
// when the refusal happened missed the live frame. A message is first
// asked about REJECTION_CHECK_MS after it was accepted, then on later
// rounds at most once per REJECTION_CHECK_MS. What is named is marked not
// sent, with the reason. It returns how soon the loop should come back for
// a message not due yet (0: none). A failure is only shown: the check is
// a side job, and the next round asks again.
const REJECTION_CHECK_MS = 3000;
const REJECTION_LOOK_BACK_MS = 10 * 60 * 1000; // a server clock behind the page's
let rejectionsAsked = 0, rejectionsCheckedUpTo = 0;
async function checkRejections() {
  const now = Date.now();
  const waiting = (await state.store.pending()).filter((p) => p.accepted && !p.rejected);
  if (!waiting.length) return 0;
  const unchecked = waiting.filter((p) => (p.accepted_ms || 0) > rejectionsCheckedUpTo);
  if (unchecked.length) {
    const due = Math.min(...unchecked.map((p) => p.accepted_ms)) + REJECTION_CHECK_MS;
    if (now < due) return due - now;
  } else if (now - rejectionsAsked < REJECTION_CHECK_MS) {
    return 0;
  }
  rejectionsAsked = now;
  rejectionsCheckedUpTo = now - REJECTION_CHECK_MS;
  const ids = new Set(waiting.map((p) => p.client_msg_id));
  const oldest = Math.min(...waiting.map((p) => p.created_ms || now));
  try {
    const resp = await state.api.rejections(oldest - REJECTION_LOOK_BACK_MS);
    for (const r of resp.rejections || []) {
      if (!ids.has(r.client_msg_id)) continue;
      await state.store.markRejected(r.client_msg_id, r.code, r.reason, r.at_ms);
      setStatus(true, `not sent: ${r.reason}`);
    }
  } catch (e) {
    setStatus(true, `could not ask which messages were refused (${e.message})`);
  }
  return 0;
}

// ---- updates ------------------------------------------------------------

function setStatus(online, note) {
  state.online = online;
  const s = $("status");
  s.className = "status " + (online ? "online" : "offline");
  s.textContent = note || (online ? (state.live && state.live.open ? "online · live" : "online · polling") : "offline");
}

let timer = 0;
function wake(ms = 0) { clearTimeout(timer); timer = setTimeout(updateLoop, ms); }

// updateLoop: flush, then sync-store-ack until the server has nothing
// new, then refresh the list and the open conversation.
async function updateLoop() {
  if (state.syncing) { state.again = true; return; }
  state.syncing = true;
  let failures = 0;
  try {
    for (;;) {
      try {
        await flush();
        const redo = await state.store.unacked();
        if (redo.length) { await state.api.ack(redo); await state.store.markAcked(redo); }
        const { news } = await state.api.catchUp({
          cursors: () => state.store.cursors(), apply: (resp) => state.store.applySync(resp), acked: (acks) => state.store.markAcked(acks),
        });
        await loadList();
        setStatus(true);
        state.rejectionDue = await checkRejections();
        if (state.open) { await renderMessages(false); if (news) markRead(); }
        break;
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) { showSignIn("The token was refused: sign in again."); return; }
        setStatus(false, `offline · retrying (${e.message})`);
        await sleep(Api.backoff(failures++, e));
      }
    }
  } finally {
    state.syncing = false;
    const again = state.again;
    state.again = false;
    const next = state.live && state.live.open ? 30000 : state.pollMs;
    wake(again ? 0 : (state.rejectionDue > 0 ? Math.min(next, state.rejectionDue) : next));
  }
}

// startUpdates syncs now and then on a timer; the live channel, where
// the server has one, wakes the loop as soon as there is news.
function startUpdates() {
  if (window.OfflineboxLive) {
    let redraw = 0;
    const later = () => { clearTimeout(redraw); redraw = setTimeout(async () => { await loadList(); await renderMessages(false); markRead(); }, 100); };
    state.live = window.OfflineboxLive.connect(state.api, {
      onNews: () => wake(0),
      onPush: async (m) => { const r = await state.store.applyPush(m); later(); return r.ack; },
      onReceipt: (f) => { state.receipts.set(f.conv_id, f); if (state.open && state.open.conv_id === f.conv_id) renderMessages(false); },
      onRejected: async (f) => {
        if (await state.store.markRejected(f.client_msg_id, f.code, f.reason, f.at_ms)) renderMessages(false);
      },
      onState: () => setStatus(true),
    });
  }
  wake(0);
}

// ---- start --------------------------------------------------------------

(async () => {
  const hash = new URLSearchParams(location.hash.slice(1));
  // A link's token is this tab's; one kept for staying signed in stays so.
  const stayed = localStorage.getItem(TOKEN_KEY);
  const token = hash.get("token") || sessionStorage.getItem(TOKEN_KEY) || stayed;
  if (hash.get("token")) history.replaceState(null, "", location.pathname);
  if (!token) { showSignIn(); return; }
  try { await signIn(token, !hash.get("token") && token === stayed); } catch (e) { showSignIn(e.message); }
})();

// offlinebox's JavaScript client: the HTTP API (api/openapi.yaml) and the
// live channel (api/asyncapi.yaml) as the web page uses them. An ES module
// with no dependencies; it keeps nothing itself: the caller stores what
// sync brings and says what to ack. It runs in browsers and in Node 20+
// (the live channel needs a global WebSocket or one passed in).
//
// The web page serves this file at /static/offlinebox.js (package
// jsclient embeds it).

/** An answer that was not 2xx, or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(status, code, field, message, retryAfterMs) {
    super(field ? `${field}: ${message}` : message);
    this.name = "ApiError";
    this.status = status; this.code = code; this.field = field; this.retryAfterMs = retryAfterMs;
  }
  get retryable() { return this.status === 0 || this.status === 429 || (this.status >= 500 && this.status !== 501); }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The claims of a bearer token, read without checking its signature
 * (the server checks it); a token that is not a JWT is a readable error. */
export function claimsOf(token) {
  const parts = String(token || "").trim().split(".");
  if (parts.length !== 3 || !parts[1]) throw new Error("this is not a token: a token has three parts separated by dots");
  let json;
  try {
    const p = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    json = new TextDecoder().decode(Uint8Array.from(atob(p.padEnd(Math.ceil(p.length / 4) * 4, "=")), (c) => c.charCodeAt(0)));
  } catch {
    throw new Error("this is not a token: its middle part is not base64url");
  }
  let claims;
  try { claims = JSON.parse(json); } catch { throw new Error("this is not a token: its claims are not JSON"); }
  if (!claims || typeof claims !== "object") throw new Error("this is not a token: its claims are not an object");
  return claims;
}

/** The id of the direct conversation of two users, as the project names
 * them: "d-" and the two ids in byte order, joined by "-". */
export function directConvId(a, b) {
  if (!a || !b) throw new Error("a direct conversation needs two users");
  if (a === b) throw new Error("a direct conversation is with someone else");
  return "d-" + [a, b].sort().join("-");
}

const b64 = (text) => {
  let s = "";
  for (const byte of new TextEncoder().encode(text)) s += String.fromCharCode(byte);
  return btoa(s);
};

/** A text message ready for send(): mentions are the @names in text
 * (@all in a group mentions everyone). */
export function textMessage({ convId, convType, text, to, clientMsgId }) {
  const group = convType === "group";
  const mentions = [...text.matchAll(/@([A-Za-z0-9_.-]+)/g)].map((m) => m[1]).filter((u) => u !== "all");
  const m = {
    client_msg_id: clientMsgId || crypto.randomUUID(), conv_id: convId, conv_type: group ? "group" : "direct",
    content_type: "text/plain", body: b64(text),
    ...(mentions.length ? { mentions } : {}), ...(/@all\b/.test(text) && group ? { mention_all: true } : {}),
  };
  if (!group) m.recipients = [to];
  return m;
}

/** The record that founds a group (or adds members): a member_join naming
 * them; the sender, who owns a new group, is among them. */
export function groupFounding({ convId, sender, members, clientMsgId }) {
  const all = [...new Set([sender, ...members].filter(Boolean))];
  if (all.length < 2) throw new Error("a group needs someone besides you");
  return { client_msg_id: clientMsgId || crypto.randomUUID(), conv_id: convId, conv_type: "group", kind: "member_join", recipients: all };
}

/** The HTTP API for one token and device. */
export class Api {
  constructor(token, device, opts = {}) {
    this.token = token; this.device = device;
    this.baseUrl = (opts.baseUrl || "").replace(/\/$/, "");
    this.fetch = opts.fetch || ((...a) => fetch(...a));
  }

  async call(method, path, body) {
    let resp;
    try {
      resp = await this.fetch(this.baseUrl + path, {
        method, headers: { Authorization: `Bearer ${this.token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    } catch (e) {
      throw new ApiError(0, "offline", "", `the server did not answer (${e.message})`, 0);
    }
    const text = await resp.text();
    if (!resp.ok) {
      let e = {};
      try { e = JSON.parse(text).error || {}; } catch { /* not the API's format */ }
      const ra = parseInt(resp.headers.get("Retry-After") || "", 10);
      throw new ApiError(resp.status, e.code || "http_" + resp.status, e.field || "", e.message || text.slice(0, 200),
        Number.isFinite(ra) ? ra * 1000 : 0);
    }
    return text ? Api.fillSlices(JSON.parse(text)) : {};
  }

  // fillSlices gives each message of a conversation slice (a sync
  // answer's conversations, a page) the conv_id, epoch and conv_type its
  // slice says once.
  static fillSlices(a) {
    const fill = (list, conv, epoch, convType) => {
      for (const m of list || []) {
        if (m.conv_id === undefined) m.conv_id = conv;
        if (m.epoch === undefined) m.epoch = epoch;
        if (m.conv_type === undefined && convType) m.conv_type = convType;
      }
    };
    if (a && Array.isArray(a.messages) && a.conv_id) fill(a.messages, a.conv_id, a.epoch, a.conv_type);
    for (const c of (a && a.conversations) || []) if (Array.isArray(c.messages)) fill(c.messages, c.conv_id, c.epoch, c.kind);
    return a;
  }

  // retry runs fn until it succeeds or fails for good.
  static async retry(fn, attempts = 5) {
    for (let i = 0; ; i++) {
      try { return await fn(); } catch (e) {
        if (!(e instanceof ApiError) || !e.retryable || i + 1 >= attempts) throw e;
        await sleep(Api.backoff(i, e));
      }
    }
  }

  // backoff is a full-jitter wait, at least the answer's Retry-After.
  static backoff(attempt, err) {
    const ceil = Math.min(30000, 250 * 2 ** attempt);
    return Math.max(Math.random() * ceil, (err && err.retryAfterMs) || 0);
  }

  get deviceField() { return this.device && this.device.own ? { device_id: this.device.id } : {}; }

  conversations(limit, cursor) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (cursor) q.set("cursor", cursor);
    if (this.device && this.device.own) q.set("device_id", this.device.id);
    return this.call("GET", `/v1/conversations?${q}`);
  }
  // mentionsAfter continues the mention lane (the mentions_next of the
  // answer before, while it said mentions_more).
  sync(cursors, mentionsAfter, limit = 200) {
    return this.call("POST", "/v1/sync", { ...this.deviceField, cursors, limit,
      ...(mentionsAfter ? { mentions_after: mentionsAfter } : {}) });
  }
  ack(acks) { return this.call("POST", "/v1/ack", { ...this.deviceField, acks }); }
  read(receipts) { return this.call("POST", "/v1/read", { receipts }); }
  send(m) { return this.call("POST", "/v1/messages", m); }
  receipts(conv, seq) { return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/receipts?seq=${seq}`); }
  members(conv) { return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/members`); }
  rejections(sinceMs) { return this.call("GET", `/v1/rejections?since_ms=${Math.max(0, Math.floor(sinceMs))}`); }
  newest(conv, limit) { return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/messages?limit=${limit}`); }
  before(conv, before, limit) {
    return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/messages?before=${before}&limit=${limit}`);
  }
  history(conv, before, limit) {
    return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/history?before=${before}&limit=${limit}`);
  }

  // catchUp syncs until the server has nothing new: each answer is handed
  // to apply, which stores it and returns { stored, acks }; the acks are
  // sent only then (and passed to acked), and the mention lane is paged
  // with mentions_after while the answer says mentions_more.
  async catchUp({ cursors, apply, acked = async () => {}, rounds = 50 }) {
    let news = false, after = "", messages = 0;
    for (let round = 0; round < rounds; round++) {
      const resp = await this.sync(await cursors(), after);
      const convs = resp.conversations || [];
      const done = !convs.length && !(resp.summaries || []).length && !resp.omitted && !resp.mentions_more;
      const r = await apply(resp);
      news = news || r.stored > 0;
      messages += r.stored || 0;
      if (done) return { news, messages, rounds: round + 1 };
      if (r.acks && r.acks.length) { await this.ack(r.acks); await acked(r.acks); }
      after = resp.mentions_more ? resp.mentions_next : "";
    }
    return { news, messages, rounds };
  }
}

// connectLive keeps the live channel (GET /v1/live) open until stop().
// The pull path stays the source of truth: a push the caller cannot place
// (not the next seq it holds) only wakes a sync, and while the socket is
// down the caller polls. hooks: onNews() asks for a sync, onPush(m) stores
// a pushed message and returns the ack to send (or null), onReceipt(frame),
// onRejected(frame), onState(open), onFrame(frame) sees every frame.
export function connectLive(api, hooks, opts = {}) {
  const WS = opts.WebSocket || globalThis.WebSocket;
  const live = { open: false, stopped: false, ws: null, failures: 0 };
  const on = { onNews() {}, async onPush() { return null; }, onReceipt() {}, onRejected() {}, onState() {}, onFrame() {}, ...hooks };
  const url = () => {
    const base = api.baseUrl || (globalThis.location && globalThis.location.href);
    const u = new URL("/v1/live", base);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    if (api.device && api.device.own) u.searchParams.set("device_id", api.device.id);
    return u.toString();
  };
  const send = (frame) => { if (live.ws && live.ws.readyState === 1) live.ws.send(JSON.stringify(frame)); };
  live.send = send;
  let acks = new Map(), ackTimer = 0;
  // Acks are cumulative per conversation and batched.
  const queueAck = (a) => {
    const prev = acks.get(a.conv_id);
    if (!prev || prev.epoch !== a.epoch || prev.seq < a.seq) acks.set(a.conv_id, a);
    clearTimeout(ackTimer);
    ackTimer = setTimeout(() => { if (acks.size) { send({ type: "ack", acks: [...acks.values()] }); acks = new Map(); } }, 50);
  };
  const setOpen = (open) => { live.open = open; on.onState(open); };

  const dial = () => {
    if (live.stopped) return;
    let ws;
    try { ws = new WS(url(), ["offlinebox.v1", "bearer." + api.token]); } catch { retry(); return; }
    live.ws = ws;
    ws.onmessage = async (ev) => {
      let f;
      try { f = JSON.parse(ev.data); } catch { return; }
      on.onFrame(f);
      switch (f.type) {
        case "hello": live.failures = 0; setOpen(true); break;
        case "notice": if ((f.conversations || []).length || f.resync || f.truncated) on.onNews(); break;
        case "message": {
          const a = await on.onPush(f.message);
          if (a) queueAck(a); else on.onNews();
          break;
        }
        case "receipt": on.onReceipt(f); break;
        case "rejected": on.onRejected(f); break;
        case "ping": send({ type: "pong" }); break;
        default: break; // acked, ephemeral, pong, error: nothing to do here
      }
    };
    ws.onclose = (ev) => {
      live.ws = null;
      if (live.open) setOpen(false);
      if (ev.code === 4001 || ev.code === 4004) { live.stopped = true; return; } // replaced, or refused: poll
      if (ev.code === 4002) on.onNews(); // slow consumer: pull, then reconnect
      retry();
    };
  };
  let retryTimer = 0;
  const retry = () => {
    if (live.stopped) return;
    const wait = Math.min(60000, 500 * 2 ** live.failures++) * Math.random();
    retryTimer = setTimeout(dial, wait);
  };
  live.stop = () => {
    live.stopped = true;
    clearTimeout(retryTimer); clearTimeout(ackTimer);
    if (live.ws) live.ws.close(1000);
  };
  dial();
  return live;
}

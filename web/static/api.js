"use strict";
// The HTTP API as the page uses it: typed errors, Retry-After honoured,
// full-jitter backoff.
class ApiError extends Error {
  constructor(status, code, field, message, retryAfterMs) {
    super(field ? `${field}: ${message}` : message);
    this.status = status; this.code = code; this.field = field; this.retryAfterMs = retryAfterMs;
  }
  get retryable() { return this.status === 0 || this.status === 429 || (this.status >= 500 && this.status !== 501); }
}

class Api {
  constructor(token, device) { this.token = token; this.device = device; }

  async call(method, path, body) {
    let resp;
    try {
      resp = await fetch(path, {
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
  // slice says once. The browser undoes the answer's Content-Encoding.
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

  conversations(limit, cursor) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (cursor) q.set("cursor", cursor);
    if (this.device.own) q.set("device_id", this.device.id);
    return this.call("GET", `/v1/conversations?${q}`);
  }
  // mentionsAfter continues the mention lane (the mentions_next of the
  // answer before, while it said mentions_more).
  sync(cursors, mentionsAfter) {
    return this.call("POST", "/v1/sync", { ...(this.device.own ? { device_id: this.device.id } : {}), cursors, limit: 200,
      ...(mentionsAfter ? { mentions_after: mentionsAfter } : {}) });
  }
  ack(acks) { return this.call("POST", "/v1/ack", { ...(this.device.own ? { device_id: this.device.id } : {}), acks }); }
  read(receipts) { return this.call("POST", "/v1/read", { receipts }); }
  send(m) { return this.call("POST", "/v1/messages", m); }
  rejections(sinceMs) { return this.call("GET", `/v1/rejections?since_ms=${Math.max(0, Math.floor(sinceMs))}`); }
  newest(conv, limit) { return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/messages?limit=${limit}`); }
  before(conv, before, limit) {
    return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/messages?before=${before}&limit=${limit}`);
  }
  history(conv, before, limit) {
    return this.call("GET", `/v1/conversations/${encodeURIComponent(conv)}/history?before=${before}&limit=${limit}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

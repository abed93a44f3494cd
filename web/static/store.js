"use strict";
// The page's local database, in IndexedDB: one per user and device.
// Messages are keyed by (conv_id, epoch, seq) and indexed uniquely by
// (conv_id, client_msg_id), as in the Go SDK; a sync answer is stored in
// one transaction and acked only after it completed.
const LocalStore = (() => {
  const req = (r) => new Promise((ok, fail) => { r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
  const done = (tx) => new Promise((ok, fail) => {
    tx.oncomplete = () => ok();
    tx.onerror = () => fail(tx.error);
    tx.onabort = () => fail(tx.error || new Error("transaction aborted"));
  });

  // addOnce adds m unless a message of the same position or id is held:
  // the unique keys decide, and a duplicate does not abort the transaction.
  function addOnce(store, m, counts) {
    const r = store.add(m);
    r.onsuccess = () => { counts.stored++; };
    r.onerror = (e) => { e.preventDefault(); e.stopPropagation(); counts.redelivered++; };
  }

  // A message as kept: the API's JSON, its text as sent or its base64
  // body decoded to text.
  function local(m) {
    let text = typeof m.text === "string" ? m.text : "";
    if (typeof m.text !== "string" && m.body) {
      try { text = new TextDecoder().decode(Uint8Array.from(atob(m.body), (c) => c.charCodeAt(0))); } catch { text = ""; }
    }
    return {
      conv_id: m.conv_id, epoch: m.epoch || 0, seq: m.seq, client_msg_id: m.client_msg_id || `${m.conv_id}:${m.epoch}:${m.seq}`,
      sender: m.sender, kind: m.kind, conv_type: m.conv_type, recipients: m.recipients || [], mentions: m.mentions || [],
      mention_all: !!m.mention_all, content_type: m.content_type || (typeof m.text === "string" ? "text/plain" : ""), text, write_time_ms: m.write_time_ms || 0,
    };
  }

  class Store {
    constructor(db) { this.db = db; }

    static async open(name) {
      const r = indexedDB.open(name, 1);
      r.onupgradeneeded = () => {
        const db = r.result;
        const m = db.createObjectStore("messages", { keyPath: ["conv_id", "epoch", "seq"] });
        m.createIndex("by_client_msg_id", ["conv_id", "client_msg_id"], { unique: true });
        m.createIndex("by_conv_seq", ["conv_id", "seq"]);
        db.createObjectStore("cursors", { keyPath: "conv_id" });
        db.createObjectStore("sending", { keyPath: "client_msg_id" });
        db.createObjectStore("convs", { keyPath: "conv_id" });
      };
      return new Store(await req(r));
    }

    async cursors() {
      const all = await req(this.db.transaction("cursors").objectStore("cursors").getAll());
      const out = {};
      for (const c of all) if (c.seq > 0) out[c.conv_id] = { seq: c.seq, epoch: c.epoch };
      return out;
    }

    async unacked() {
      const all = await req(this.db.transaction("cursors").objectStore("cursors").getAll());
      return all.filter((c) => c.seq > (c.acked || 0)).map((c) => ({ conv_id: c.conv_id, seq: c.seq, epoch: c.epoch }));
    }

    // applySync stores one sync answer and returns the cursors to ack.
    async applySync(resp) {
      const tx = this.db.transaction(["messages", "cursors", "sending"], "readwrite");
      const msgs = tx.objectStore("messages"), curs = tx.objectStore("cursors"), sending = tx.objectStore("sending");
      const counts = { stored: 0, redelivered: 0 };
      const put = (m) => { const l = local(m); addOnce(msgs, l, counts); sending.delete(l.client_msg_id); };
      for (const mn of resp.mentions || []) put(mn.message);
      const acks = [];
      for (const sc of resp.conversations || []) {
        const held = (await req(curs.get(sc.conv_id))) || { conv_id: sc.conv_id, epoch: 0, seq: 0, acked: 0 };
        const kept = (held.epoch === 0 || held.epoch === sc.epoch) &&
          !(sc.rebase && (sc.rebase_reason === "epoch" || sc.rebase_reason === "ahead"));
        let cursor = kept ? held.seq : 0;
        if (sc.rebase && (sc.messages || []).length === 0) cursor = kept ? Math.max(cursor, sc.max_seq) : sc.max_seq;
        for (const m of sc.messages || []) { put(m); cursor = Math.max(cursor, m.seq); }
        const acked = held.epoch === sc.epoch ? held.acked || 0 : 0;
        curs.put({ conv_id: sc.conv_id, epoch: sc.epoch, seq: cursor, acked, gap: sc.gap || null, incomplete: !!sc.incomplete });
        if (cursor > 0) acks.push({ conv_id: sc.conv_id, seq: cursor, epoch: sc.epoch });
      }
      await done(tx);
      return { acks, ...counts };
    }

    // applyPush stores a message pushed on the live channel. When it is
    // the next seq of the cursor (or one held already) the cursor moves in
    // the same transaction and the ack to send is returned; otherwise it
    // is kept and null says a sync must fill what lies below it.
    async applyPush(m) {
      const tx = this.db.transaction(["messages", "cursors", "sending"], "readwrite");
      const curs = tx.objectStore("cursors");
      const counts = { stored: 0, redelivered: 0 };
      const l = local(m);
      addOnce(tx.objectStore("messages"), l, counts);
      tx.objectStore("sending").delete(l.client_msg_id);
      const c = await req(curs.get(m.conv_id));
      let ack = null;
      if (c && c.epoch === m.epoch && m.seq <= c.seq + 1) {
        c.seq = Math.max(c.seq, m.seq);
        c.acked = c.seq; // acked on the socket right after this commits
        curs.put(c);
        ack = { conv_id: c.conv_id, seq: c.seq, epoch: c.epoch };
      }
      await done(tx);
      return { ack, ...counts };
    }

    async markAcked(acks) {
      const tx = this.db.transaction("cursors", "readwrite");
      const curs = tx.objectStore("cursors");
      for (const a of acks) {
        const c = await req(curs.get(a.conv_id));
        if (c && c.epoch === a.epoch) { c.acked = Math.max(c.acked || 0, a.seq); curs.put(c); }
      }
      await done(tx);
    }

    // storeMessages keeps a page read while scrolling (below the cursor).
    async storeMessages(list) {
      const tx = this.db.transaction(["messages", "sending"], "readwrite");
      const counts = { stored: 0, redelivered: 0 };
      for (const m of list) { const l = local(m); addOnce(tx.objectStore("messages"), l, counts); tx.objectStore("sending").delete(l.client_msg_id); }
      await done(tx);
      return counts;
    }

    // messages are up to limit messages of conv below before, oldest first.
    async messages(conv, before, limit) {
      const idx = this.db.transaction("messages").objectStore("messages").index("by_conv_seq");
      const range = IDBKeyRange.bound([conv, 0], [conv, before], false, true);
      const out = [];
      await new Promise((ok, fail) => {
        const r = idx.openCursor(range, "prev");
        r.onerror = () => fail(r.error);
        r.onsuccess = () => {
          const c = r.result;
          if (!c || out.length >= limit) { ok(); return; }
          out.push(c.value);
          c.continue();
        };
      });
      return out.reverse();
    }

    async pending(conv) {
      const all = await req(this.db.transaction("sending").objectStore("sending").getAll());
      return all.filter((p) => !conv || p.conv_id === conv).sort((a, b) => a.created_ms - b.created_ms);
    }

    async keepSending(p) {
      const tx = this.db.transaction("sending", "readwrite");
      tx.objectStore("sending").put(p);
      await done(tx);
    }

    // markAccepted records that the server took a message, unless it came
    // back with its seq meanwhile (a push can beat the answer to the send).
    async markAccepted(id) {
      const tx = this.db.transaction("sending", "readwrite");
      const s = tx.objectStore("sending");
      const p = await req(s.get(id));
      if (p) { p.accepted = true; p.accepted_ms = Date.now(); s.put(p); }
      await done(tx);
    }

    // markRejected keeps a message the pipeline refused, with why: it is
    // shown as not sent (and never sent again) until the user dismisses it.
    async markRejected(id, code, reason, atMs) {
      const tx = this.db.transaction("sending", "readwrite");
      const s = tx.objectStore("sending");
      const p = await req(s.get(id));
      if (p) { p.rejected = { code: code || "", reason, at_ms: atMs || Date.now() }; s.put(p); }
      await done(tx);
      return !!p;
    }

    async dropSending(id) {
      const tx = this.db.transaction("sending", "readwrite");
      tx.objectStore("sending").delete(id);
      await done(tx);
    }

    async keepConvs(list) {
      const tx = this.db.transaction("convs", "readwrite");
      for (const c of list) tx.objectStore("convs").put(c);
      await done(tx);
    }

    async cachedConvs() {
      const all = await req(this.db.transaction("convs").objectStore("convs").getAll());
      return all.sort((a, b) => (b.last_active_ms || 0) - (a.last_active_ms || 0));
    }
  }
  return Store;
})();

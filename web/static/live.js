"use strict";
// The live channel (GET /v1/live, api/asyncapi.yaml): a WebSocket that
// pushes stored messages and receipts. The pull path stays the source of
// truth: a push the page cannot place (not the next seq it holds) only
// wakes a sync, and while the socket is down the page polls.
window.OfflineboxLive = {
  // connect keeps a socket open until stop(); hooks: onNews() asks for a
  // sync, onPush(m) stores a pushed message and returns the ack to send
  // (or null), onReceipt(frame), onRejected(frame), onState(open).
  connect(api, hooks) {
    const live = { open: false, stopped: false, ws: null, failures: 0 };
    const url = () => {
      const u = new URL("/v1/live", location.href);
      u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
      if (api.device.own) u.searchParams.set("device_id", api.device.id);
      return u.toString();
    };
    const send = (frame) => { if (live.ws && live.ws.readyState === WebSocket.OPEN) live.ws.send(JSON.stringify(frame)); };
    let acks = new Map(), ackTimer = 0;
    // Acks are cumulative per conversation and batched.
    const queueAck = (a) => {
      const prev = acks.get(a.conv_id);
      if (!prev || prev.epoch !== a.epoch || prev.seq < a.seq) acks.set(a.conv_id, a);
      clearTimeout(ackTimer);
      ackTimer = setTimeout(() => { if (acks.size) { send({ type: "ack", acks: [...acks.values()] }); acks = new Map(); } }, 50);
    };
    const setOpen = (open) => { live.open = open; hooks.onState(open); };

    const dial = () => {
      if (live.stopped) return;
      let ws;
      try { ws = new WebSocket(url(), ["offlinebox.v1", "bearer." + api.token]); } catch { retry(); return; }
      live.ws = ws;
      ws.onmessage = async (ev) => {
        let f;
        try { f = JSON.parse(ev.data); } catch { return; }
        switch (f.type) {
          case "hello": live.failures = 0; setOpen(true); break;
          case "notice": if ((f.conversations || []).length || f.resync || f.truncated) hooks.onNews(); break;
          case "message": {
            const a = await hooks.onPush(f.message);
            if (a) queueAck(a); else hooks.onNews();
            break;
          }
          case "receipt": hooks.onReceipt(f); break;
          case "rejected": hooks.onRejected(f); break;
          case "ping": send({ type: "pong" }); break;
          default: break; // acked, ephemeral, pong, error: nothing to do here
        }
      };
      ws.onclose = (ev) => {
        live.ws = null;
        if (live.open) setOpen(false);
        if (ev.code === 4001 || ev.code === 4004) { live.stopped = true; return; } // replaced, or refused: poll
        if (ev.code === 4002) hooks.onNews(); // slow consumer: pull, then reconnect
        retry();
      };
    };
    const retry = () => {
      if (live.stopped) return;
      const wait = Math.min(60000, 500 * 2 ** live.failures++) * Math.random();
      setTimeout(dial, wait);
    };
    live.stop = () => { live.stopped = true; if (live.ws) live.ws.close(1000); };
    dial();
    return live;
  },
};

// node --test for the client module: its pure helpers always, and the
// HTTP API and live channel against a real server when
// OFFLINEBOX_URL and the tokens are given (cmd/offlinebox's
// TestNodeClient... starts the pipeline and runs this with them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Api, ApiError, claimsOf, connectLive, directConvId, groupFounding, textMessage } from "./index.js";

const env = process.env;
const server = env.OFFLINEBOX_URL ? { skip: false } : { skip: "OFFLINEBOX_URL not set (cmd/offlinebox's TestNodeClient sets it)" };

test("directConvId names a pair in byte order, whoever asks", () => {
  assert.equal(directConvId("bob", "alice"), "d-alice-bob");
  assert.equal(directConvId("alice", "bob"), "d-alice-bob");
  assert.throws(() => directConvId("alice", "alice"), /someone else/);
});

test("claimsOf reads a token's claims and names what is wrong with one that is not a token", () => {
  const part = Buffer.from(JSON.stringify({ sub: "alice", dev: "web" })).toString("base64url");
  assert.deepEqual(claimsOf(`h.${part}.s`), { sub: "alice", dev: "web" });
  for (const bad of ["", "abc", "a.b", "a.%%%.c", `a.${Buffer.from("{not json").toString("base64url")}.c`]) {
    assert.throws(() => claimsOf(bad), /this is not a token/, bad);
  }
});

test("textMessage carries mentions, @all only in groups, and the peer of a direct message", () => {
  const d = textMessage({ convId: "d-a-b", convType: "direct", text: "hi @b @all", to: "b", clientMsgId: "x" });
  assert.deepEqual(d.recipients, ["b"]);
  assert.deepEqual(d.mentions, ["b"]);
  assert.equal(d.mention_all, undefined);
  assert.equal(Buffer.from(d.body, "base64").toString(), "hi @b @all");
  const g = textMessage({ convId: "g-x", convType: "group", text: "ünïcode @all", clientMsgId: "y" });
  assert.equal(g.mention_all, true);
  assert.equal(g.recipients, undefined);
  assert.equal(Buffer.from(g.body, "base64").toString(), "ünïcode @all");
  assert.deepEqual(groupFounding({ convId: "g-x", sender: "a", members: ["b", "a"], clientMsgId: "z" }).recipients, ["a", "b"]);
  assert.throws(() => groupFounding({ convId: "g-x", sender: "a", members: ["a"] }), /besides you/);
});

// A device's store in memory, as the page keeps one in IndexedDB.
class Memory {
  constructor() { this.cursors = {}; this.msgs = new Map(); }
  apply(resp) {
    let stored = 0;
    const keep = (m) => { const k = `${m.conv_id}/${m.epoch}/${m.seq}`; if (!this.msgs.has(k)) { this.msgs.set(k, m); stored++; } };
    for (const mn of resp.mentions || []) keep(mn.message);
    const acks = [];
    for (const sc of resp.conversations || []) {
      const held = this.cursors[sc.conv_id];
      let seq = held && held.epoch === sc.epoch ? held.seq : 0;
      if (sc.rebase && !(sc.messages || []).length) seq = Math.max(seq, sc.max_seq);
      for (const m of sc.messages || []) { keep(m); seq = Math.max(seq, m.seq); }
      this.cursors[sc.conv_id] = { seq, epoch: sc.epoch };
      if (seq > 0) acks.push({ conv_id: sc.conv_id, seq, epoch: sc.epoch });
    }
    return { stored, acks };
  }
  find(pred) { return [...this.msgs.values()].find(pred); }
}

const api = (token) => new Api(token, { id: claimsOf(token).dev, own: false }, { baseUrl: env.OFFLINEBOX_URL });

// eventually polls fn (the pipeline sequences asynchronously) for up to 30 s.
async function eventually(what, fn) {
  const end = Date.now() + 30000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`not within 30 s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("against the API: a direct message is sent, caught up, acked, and its receipts say delivered", server, async () => {
  const alice = api(env.OFFLINEBOX_TOKEN_ALICE), bob = api(env.OFFLINEBOX_TOKEN_BOB);
  const conv = directConvId("alice", "bob");
  const m = textMessage({ convId: conv, convType: "direct", text: "hello from node", to: "bob" });
  await alice.send(m);
  const box = new Memory();
  const got = await eventually("bob holds the message", async () => {
    await bob.catchUp({ cursors: () => box.cursors, apply: (r) => box.apply(r) });
    return box.find((x) => x.client_msg_id === m.client_msg_id);
  });
  assert.equal(got.text, "hello from node");
  assert.equal(got.conv_id, conv, "a slice's conv_id is filled into its messages");
  assert.equal(got.sender, "alice");
  const again = await bob.catchUp({ cursors: () => box.cursors, apply: (r) => box.apply(r) });
  assert.equal(again.messages, 0, "a catch-up from acked cursors brings nothing again");
  const r = await eventually("alice's receipts say delivered", async () => {
    const rc = await alice.receipts(conv, got.seq);
    return (rc.delivered || 0) >= 1 || (rc.peer_delivered_seq || 0) >= got.seq ? rc : null;
  });
  assert.ok(r);
  const list = await bob.conversations(10);
  assert.ok((list.conversations || []).some((c) => c.conv_id === conv), "bob's list has the conversation");
});

test("against the API: a bad request is an ApiError naming the field, not retryable", server, async () => {
  const alice = api(env.OFFLINEBOX_TOKEN_ALICE);
  const err = await alice.send({ client_msg_id: "bad-1", conv_id: "d-alice-bob", conv_type: "sideways", body: "" }).catch((e) => e);
  assert.ok(err instanceof ApiError, String(err));
  assert.equal(err.status, 400);
  assert.equal(err.field, "conv_type");
  assert.equal(err.retryable, false);
  const refused = await new Api("not-a-token", { id: "x", own: true }, { baseUrl: env.OFFLINEBOX_URL }).conversations(1).catch((e) => e);
  assert.equal(refused.status, 401);
});

test("against the API: a founded group reaches its members, and a member who may not add others is refused with a reason", server, async () => {
  const alice = api(env.OFFLINEBOX_TOKEN_ALICE), bob = api(env.OFFLINEBOX_TOKEN_BOB);
  const conv = "g-node-" + Date.now();
  const since = Date.now() - 60000;
  await alice.send(groupFounding({ convId: conv, sender: "alice", members: ["bob", "carol"] }));
  const box = new Memory();
  const join = await eventually("bob holds the founding", async () => {
    await bob.catchUp({ cursors: () => box.cursors, apply: (r) => box.apply(r) });
    return box.find((x) => x.conv_id === conv && x.kind === "member_join");
  });
  assert.deepEqual([...join.recipients].sort(), ["alice", "bob", "carol"]);
  assert.deepEqual(await alice.members(conv), { conv_id: conv, count: 3, members: ["alice", "bob", "carol"], truncated: false });
  const add = groupFounding({ convId: conv, sender: "bob", members: ["zed"] });
  await bob.send(add); // accepted; sequencing refuses it (bob is a plain member)
  const rej = await eventually("bob's rejections name it", async () =>
    ((await bob.rejections(since)).rejections || []).find((x) => x.client_msg_id === add.client_msg_id));
  assert.ok(rej.reason, "a refusal has a reason");
});

test("against the API: the live channel says hello, pushes a message, and takes its ack", server, async (t) => {
  if (typeof WebSocket !== "function") { t.skip("this node has no global WebSocket (node --experimental-websocket)"); return; }
  // A device of its own: it has acked nothing yet, so its catch-up holds the cursor a push continues.
  const alice = api(env.OFFLINEBOX_TOKEN_ALICE), bob = api(env.OFFLINEBOX_TOKEN_BOB_LIVE);
  const conv = directConvId("alice", "bob");
  const box = new Memory();
  await bob.catchUp({ cursors: () => box.cursors, apply: (r) => box.apply(r) });
  const frames = [];
  let opened, pushed;
  const isOpen = new Promise((r) => { opened = r; });
  const got = new Promise((r) => { pushed = r; });
  const live = connectLive(bob, {
    onState: (open) => { if (open) opened(); },
    onPush: (m) => {
      const c = box.cursors[m.conv_id];
      if (m.text === "pushed to node") pushed(m);
      if (c && c.epoch === m.epoch && m.seq <= c.seq + 1) { c.seq = Math.max(c.seq, m.seq); return { conv_id: m.conv_id, seq: c.seq, epoch: c.epoch }; }
      return null;
    },
    onFrame: (f) => frames.push(f.type),
  });
  try {
    await isOpen;
    await alice.send(textMessage({ convId: conv, convType: "direct", text: "pushed to node", to: "bob" }));
    let timer;
    const m = await Promise.race([got, new Promise((_, no) => { timer = setTimeout(() => no(new Error(`no push in 30 s; frames ${frames}`)), 30000); })])
      .finally(() => clearTimeout(timer));
    assert.equal(m.sender, "alice");
    let seen;
    await eventually("the device's acked seq reaches the pushed message", async () =>
      ((seen = await bob.conversations(50)).conversations || []).some((c) => c.conv_id === conv && c.acked_seq >= m.seq)).catch((e) => {
      throw new Error(`${e.message}: pushed ${JSON.stringify(m)}, cursor ${JSON.stringify(box.cursors[conv])}, list ${JSON.stringify(seen)}, frames ${frames}`);
    });
    assert.equal(frames[0], "hello");
  } finally {
    live.stop();
  }
});

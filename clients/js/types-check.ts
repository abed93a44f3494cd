// Type-checked only (tsc --noEmit, see README): the declarations describe
// the module as a TypeScript program uses it.
import { Api, ApiError, connectLive, directConvId, groupFounding, textMessage, type Ack, type SyncResponse } from "./index.js";

export async function example(token: string): Promise<number> {
  const api = new Api(token, { id: "laptop", own: false }, { baseUrl: "http://127.0.0.1:8080" });
  const cursors: Record<string, { seq: number; epoch: number }> = {};
  await api.send(textMessage({ convId: directConvId("alice", "bob"), convType: "direct", text: "hi", to: "bob" }));
  await api.send(groupFounding({ convId: "g-launch", sender: "alice", members: ["bob"] }));
  const apply = (resp: SyncResponse) => {
    const acks: Ack[] = [];
    for (const c of resp.conversations || []) for (const m of c.messages || []) acks.push({ conv_id: m.conv_id, seq: m.seq, epoch: c.epoch });
    return { stored: acks.length, acks };
  };
  const r = await api.catchUp({ cursors: () => cursors, apply });
  const members = await api.members("g-launch");
  const live = connectLive(api, { onPush: (m) => ({ conv_id: m.conv_id, seq: m.seq, epoch: m.epoch ?? 0 }), onState: (open) => void open });
  live.stop();
  try { await api.rejections(0); } catch (e) { if (e instanceof ApiError && e.retryable) return -1; }
  return r.messages + members.count;
}

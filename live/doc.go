// Package live is offlinebox's live channel: the bus between the push
// stage and the API nodes that hold devices' connections, and GET
// /v1/live on those nodes (the WebSocket), which package api mounts
// through Handler (NewHandler, Serve, Close).
//
// Who owns what. The bus (bus.go), its envelopes (envelope*.go) and the
// checked publish (publish_unchanged.go) are what the push stage and the
// nodes exchange. The rest is a node's side: the hub (hub.go: the bus
// reader, one subscription per conversation, re-push, heartbeats), a
// device's connection (conn.go, connwrite.go, hijack.go: a byte-bounded
// queue written one syscall per batch), the catch-up after a
// subscription took (catchup.go; resubscribe.go again after the bus
// resubscribed, relist.go after the node's own channel came back),
// receipts and cursors raised (receipts.go, raises.go, pushed.go,
// markflush.go, acks.go), the bounds (admission.go, budget.go, token.go) and the
// frames (frames.go; asyncapi.yaml in package api documents them). What
// the channel shares with the HTTP API sits below both in package edge
// (errors, ack application and readers, the message JSON); what stays
// the API's (the keyring and revocation log, the strict JSON decoder,
// the body opener) is lent through Deps, so live never imports api.
//
// Acks on the socket are answered at once and held for a flush
// (Config.AckFlush, 100 ms, at most 1 s: acks.go, ackflush.go): every
// device that acked within it in one pipelined call per store, its acks
// coalesced; the members' delivered cursors rise after the flush. A clean
// shutdown flushes them all before Close returns; a crash loses at most
// one interval, whose messages are pushed again and dropped by the
// devices as duplicates. What only the write learns (a resync) comes in
// an acked frame after it.
//
// Every lock is documented where it is declared, with what it guards;
// the hub's field comment names their order (index, a connection's,
// the pending set), and every other lock is taken alone.
//
// Every API node subscribes to its own sharded channel (Keys.NodeChannel)
// and, once, to the channel of each conversation its connections are in
// (Keys.ConvChannel). The push stage publishes a conversation's records
// once on its channel, whatever the member count; only when a membership
// is new to it does it look the members up in the presence registry
// (redisstore.PresenceOf) and send the nodes holding them envelopes by
// name, which make those connections listen. Pub/sub keeps nothing for a
// subscriber not there yet, so Subscription.Add returns only once the
// server confirmed the subscription, and a node that starts listening
// reads from the store what the channel carried before (the catch-up).
//
// One policy for a full catch-up queue. Catch-ups run on a few workers
// behind a bounded queue; a reconnect storm or a resubscription of every
// channel may fill it. Whichever way a catch-up came (a join or a
// conversation's first message followed, a relist, a resubscription),
// one that does not fit is left to the pull the same way: the connection
// keeps listening to the conversation, and the device is told of it by
// name, with its counters, in one notice with the connection's others,
// read off the dispatcher once the channels' subscriptions are
// confirmed; what the channel carries after is pushed. So no
// conversation is silently missed (never a bare "sync everything" for
// want of room: that notice is only for a read that failed or a
// catch-up that overflowed what it holds), and memory stays bounded: a
// connection's conversations left to the pull are a set within those it
// may listen to. Each counts as a catch_up_full fallback.
//
// A batch travels as JSON or binary (Format); readers take both, and a
// Bus publishes in the one it was made with, JSON unless told otherwise,
// because API nodes of the release before the binary form read only JSON.
//
// The bus only makes delivery early. Everything on it is already stored
// (or, for QoS 0, never will be); a publish that reaches nobody costs
// latency, never a message: the device pulls with sync.
package live

// Package push is the stage that makes delivery early: it consumes
// im.sequenced (what fanout stored) and rings the API nodes holding the
// recipients' live connections, so an online device gets a message without
// polling. The pull path stays the source of truth: a push lost anywhere
// costs latency, never a message. The one thing it stores is a refusal,
// in its sender's list (redisstore.AddRejections), before it pushes it:
// a sender away at the time reads it from GET /v1/rejections.
//
// Per round (the batches of the partitions of one poll, taken together by
// a goroutine that outlives them): one publish per conversation on its
// channel, which the nodes with a member connection listen to: no
// per-member Redis work, whatever the size. A conversation resolved before
// costs one round trip: a script publishes its batch only while its large
// flag and membership version are those the stage resolved it at. The
// others (and those that changed) are resolved first: large flag and
// membership version (one pipelined read), members for the small ones
// (cached by version). A record's conversation, seq and kind are read from
// its wire form; the record itself is what the nodes are sent.
//
// A membership this stage has not seen (a join, a new direct
// conversation, a restart) has the record that carries it pushed by name
// to the nodes of the members not told yet, from one pipelined presence
// read, so that they start listening; what follows goes on the channel
// alone, and a node that subscribed late reads what it missed from the
// store.
//
// It also consumes im.messages for the QoS 0 records fanout drops (typing,
// presence): pushed once to online members, never stored; and
// im.deadletter, to tell a sender whose record the pipeline refused. Each
// of the three is a group of its own (topology.Push, PushEphemeral,
// PushRejected), one Pusher handling them all: im.messages is mostly
// stored records that this stage skips, so it is fetched tens of
// milliseconds at a time, while im.sequenced is fetched as it comes.
package push

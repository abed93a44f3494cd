// Package redisstore owns offlinebox's Redis data model: the conversation
// timelines, the per-user inboxes, mention lanes and device cursors, and the
// Lua scripts that change them. The layout is documented in
// schemas/redis-keys.md.
//
// Every change of state is one Lua script that changes the state and its
// guard (a high-water mark or a dedupe entry) together, so that running it
// twice changes nothing the second time. Every script touches keys of one
// hash slot only, so the store runs unchanged on Redis Cluster.
//
// The core stays here: every key name, the entry encoding, sequencing and
// dedupe, the inboxes and their indexes, read receipts, acks, receipts,
// expiry, the router of users' keys and the checks verify runs. What a
// stage built on the store needs of it is exported (Keys, Client,
// EncodeEntry, RestoreDedupe, TypeCode, OnUser, EvalPiped, ReplyUint,
// Bounded, …) so that the stages live in packages of their own over this
// core: the read path (sync, timeline pages, the conversation list and
// the caches they keep) in redisstore/readpath, the rebuild from history
// in redisstore/rebuild. The store's own caches (sequencing's member
// lists and predicted positions) stay in the Store handle.
//
// The package knows nothing of Kafka or HTTP.
package redisstore

// Package checker is the end-to-end check of "slow is acceptable, missing
// is not": a load generator that produces a known set of records to
// im.messages (direct, group and large-group messages, mentions, resends
// of the same client_msg_id, QoS 0 records, joins and leaves, poison
// records), and simulated devices that use the HTTP API as a real client
// would (cursors per conversation, a local store, ack after storing,
// sometimes a crash before storing or before acking, offline pauses,
// messages sent and resent through the API, read receipts).
//
// At the end every device catches up once more and the checker compares
// what each one stored with what it is owed. What it is owed is derived
// from im.messages itself, read back from the start: the log is what the
// producers sent, and its order within a partition fixes every seq (a
// resend takes the seq of its first copy) and every membership change.
// A device is owed each seq of a conversation above its user's join seq,
// for as long as the user is a member; what it received before leaving
// is allowed but not owed, since a non-member cannot sync.
//
// The report counts, per device and in total: expected, delivered, lost,
// duplicates (one client_msg_id stored under two seqs), out of order (a
// message under another seq than the log gives it, or a slice not
// ascending and contiguous), unexpected (anything the user is not
// entitled to) and redelivered (received again before an ack: allowed).
//
// The package runs no servers: bench/chaos brings up the system, breaks
// it while a Run is in flight, and calls Finish.
package checker

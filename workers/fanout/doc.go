// Package fanout is the worker that turns im.messages into sequenced
// conversation timelines and per-user inboxes in Redis (package
// redisstore), and passes every sequenced record on to im.sequenced. It is
// a stream.Handler: the stream runner polls, retries and commits.
//
// # One batch of one partition
//
// Handle decodes the records (invalid ones, those over schemas.Limits
// among them, become dead letters with the schemas.InvalidError text
// before anything is sequenced; at-most-once messages are dropped, never
// stored), groups them by conversation keeping offset order, and works on
// different conversations in parallel on a shared pond pool. Within a
// conversation, records go in merge batches of at most Config.MergeSize:
//
//  1. one sequencing script call per merge batch: dedupe by client_msg_id,
//     seq allocation, timeline append and membership changes together, so
//     a seq never exists without its body, and a resend or replay gets its
//     original seq and entry back;
//  2. one inbox update per recipient per merge batch (unread, last seq,
//     read seq for the sender, join seq, conversation order, mention lane),
//     each atomic and guarded by the user's high-water marks so a replay
//     changes nothing. Recipients are cut into chunks of
//     Config.RecipientChunk, one pipelined round trip each, whose updates
//     go many to a script call (all of them on a standalone Redis, those of
//     one hash slot on a Cluster: redisstore.ApplyInboxes), run by at most
//     Config.TasksPerConversation tasks of the conversation at once (a pond
//     sub-pool of the shared chunk pool);
//  3. after every conversation is done, the sequenced records (new and
//     replayed ones) are produced to im.sequenced, key = conv_id, and
//     Handle waits for the broker's acks before it returns nil.
//
// A Redis or broker failure that a later try can pass (a server down,
// slow, loading, out of memory, failing over: redisstore.Permanent tells)
// fails Handle; the runner retries the same records and every step above
// is a no-op where it was already done. A crash between steps 1 and 2 is
// therefore repaired by the replay: the sequencing call answers
// "duplicate" with the stored entry, and the inbox calls apply what is
// missing. An inbox update that can never succeed (a key of the wrong
// type, a script error) fails alone: the record keeps its seq, reaches
// every other recipient and im.sequenced, and is dead-lettered naming the
// users it did not reach and the error, so one broken inbox never stops
// the partition. A conversation whose sequencing can never succeed (one of
// its keys of the wrong type; the script checks them all before writing,
// so nothing changed) has its records dead-lettered unsequenced, and so on
// for the calls after it: see store_dead.go.
//
// # One owner per conversation
//
// Before anything is sequenced, each stored record's conv_id is hashed
// (stream.KeyPartition, murmur2) against the partition it was read from; a
// record that does not belong there (a producer with another partitioner,
// no key, or a key other than its conv_id) is forwarded, unchanged but for
// a forwarded-from header, to its conversation's partition, and the batch
// returns only after the broker acknowledged it (forward.go).
//
// # Membership in the stream
//
// Join and leave records are timeline entries with a seq. The record of
// seq s reaches the members whose membership seq is below s: a joiner at J
// sees from J+1 on; a leaver receives nothing from the leave on. A leave
// always starts a merge batch, so the messages before it have reached the
// leaver before the sequencing script removes them.
//
// # Large groups
//
// Above the large-group threshold (redisstore.Config) a group gets no
// per-member unread writes: unread and order are derived at read time from
// the group's seq and the member's read seq. Only the sender (its read
// seq), explicitly mentioned members, joiners and leavers are written; @all
// is one reference on the conversation. The batch that makes a group large
// switches every member over once (meta lgc marks it done).
//
// # Receive-only and hot accounts
//
// Receive-only accounts (profile flag ro) get no inbox writes. Inbox
// writes per user are measured over a sliding window (Config.HotWindow);
// a user above HotFactor times the mean and HotMinWrites is reported
// (offlinebox_fanout_hot_users, a log line) and, with Config.HotRoute and
// Config.HotRedis, moved to the hot Redis: every inbox write goes through
// redisstore.InboxRouter, as every API read and ack does.
//
// # Redis losing its last writes
//
// Redis is a state store whose changelog is im.sequenced (restore.go).
// Every script of the sequencing path runs only on server instances
// (run_ids) the worker verified, and refuses on any other
// (redisstore.ErrFenced). The first batch of a process, and the batch
// after a refusal, hold every other batch of the process while the worker
// replays im.sequenced, from the "applied up to" fence each server keeps
// (raised after every batch's produce, before its commit), through the
// same sequencing and inbox path with each record's own write time: the
// lost records get back their seqs and epoch, and no seq is handed out
// twice. A restore commits nothing and runs at most Config.RestoreTimeout
// per attempt, continuing from its fence in the next.
// A server that may evict keys (its maxmemory-policy is not noeviction)
// is refused at verification and waited for; a batch reads the verified
// servers' policy again every Config.EvictionRecheck (eviction.go), so a
// policy changed at runtime is refused within that bound.
//
// # Metrics
//
// offlinebox_fanout_merge_size{stage}, _inbox_writes_total and
// _inbox_write_failures_total{user_bucket,conv_bucket} (attempts and
// failures by hash bucket: their ratio per bucket finds a hot shard),
// _hot_users, _messages_sequenced_total, _duplicates_total,
// _invalid_records_total, _sequenced_refused_total (sequenced, then refused
// by the broker for good: a hole in history to look at), _qos0_dropped_total,
// _receive_only_skipped_total, _inbox_dead_lettered_total (inbox updates
// given up on for good: an operator repairs the users' keys and produces
// the dead letters again), _store_dead_lettered_total{call} (records given
// up on because a store call they need can never succeed),
// _inbox_replayed_total, _hot_moves_total{result}, _restores_total{result},
// _restore_records_total, _restore_conflicts_total, _restore_held_total
// (conversations held for a rebuild), _restore_unapplied_records_total{call}
// and _restore_unapplied_inbox_updates_total (what a restore could not
// re-apply for good: logged, never dead-lettered, so not in the
// dead-letter series), and _forwarded_total (records read from a partition
// their conversation does not hash to, forwarded to the one it does).
package fanout

// Package stream is the Kafka worker runtime every offlinebox worker runs on:
// a consumer-group member (franz-go) that feeds a Handler, commits only what
// the Handler finished, and parks what it can never finish in a dead-letter
// topic. It knows nothing of Redis or ClickHouse.
//
// # The model
//
// A Runner is one member of a consumer group. Partitions are the unit of
// order and of scale: Run polls a batch (at most Config.MaxPollRecords
// records), splits it by partition and calls Handler.Handle once per
// partition, each partition in a goroutine of its own (so at most as many
// goroutines as partitions in the batch), with that partition's records in
// offset order. The next batch is polled when every partition of this one is
// done, so one partition's records are never handled concurrently or out of
// order. It also means that a partition whose Handle keeps failing holds up
// the member's other partitions: a store that is down stops the worker,
// which is what it should do, since nothing may be skipped.
//
// Rebalances are blocked while a batch is in flight (kgo.BlockRebalanceOnPoll,
// released with AllowRebalance after the batch): a partition never changes
// owner in the middle of a Handle call, and the offsets committed after a
// batch are of partitions this member still owns.
//
// # Commits
//
// Autocommit is off. A partition's offset becomes pending when Handle
// returned nil for its records and their dead letters were produced and
// acknowledged by the broker. Pending offsets are committed synchronously
// every Config.CommitInterval (also when idle), in OnPartitionsRevoked before
// a partition goes to another member, and on shutdown. Nothing is committed
// for a batch whose Handle failed: it is retried with exponential backoff
// (Config.RetryMin to RetryMax, jittered), the same records, until it
// succeeds or the runner stops; it is never skipped. A crash therefore
// repeats at most the records since the last commit, which is why every
// handler's effects must be idempotent.
//
// # Why nothing is committed after a revoke or a loss
//
// Kafka's classic group protocol checks an offset commit against the
// member's id and generation, not against who owns the partition. Once a
// partition is revoked, its next owner resumes from the committed offset and
// goes on. A commit this member sent later (for instance after rejoining in
// a new generation, or from processing that was still in flight when the
// partition left) would overwrite the new owner's position: backwards, its
// records are handled again; forwards, past records that nobody finished
// (work that was in flight at the revoke and then dropped), those records are
// never handled: data loss. Committing from a stale checkpoint after a
// partition came back in a later assignment is the same race.
//
// The runner rules this out by construction: the revoke callback cannot run
// while a batch is in flight, it commits what is finished while the member
// still owns the partition, and then forgets everything about that
// partition, so no later commit can carry it. OnPartitionsLost (session
// expired, member fenced) commits nothing at all and drops the partition's
// pending offsets: another member may already own it.
//
// # Retries and rebalances
//
// Blocking rebalances while a store is down would hold the whole group until
// the rebalance timeout expels this member. When franz-go signals that a
// rebalance waits (OnPartitionsCallbackBlocked), retry loops stop at their
// next backoff wait (a Handle call that is running is never interrupted),
// their partitions are rewound to the first record of the batch
// (Client.SetOffsets before AllowRebalance), and the rebalance proceeds. If
// the partition stays with this member, the same records come back in the
// next poll and the backoff continues where it was; if it moves, the new
// owner starts from the last commit.
//
// # Dead letters
//
// Handle returns the records it gives up on (undecodable, invalid) as
// DeadLetters. They are produced to Config.DeadLetterTopic with the original
// key, value and headers plus schemas.HeaderDeadReason, HeaderDeadTopic,
// HeaderDeadPartition and HeaderDeadOffset, and the runner waits for the
// broker's ack before the batch may be committed. A failed produce is
// retried like a failed Handle; a dead letter is never dropped, and one
// the dead-letter topic refuses for good (too large) goes again without its
// value (schemas.HeaderDeadValueOmitted), so that it never blocks. The
// partition moves on past it. PermanentProduceError tells the errors that
// no retry can fix from those worth waiting out. Like every effect, a dead letter is delivered
// at least once: a batch interrupted after some of its dead letters were
// acknowledged produces them again when it is handled again.
//
// # Shutdown
//
// When Run's ctx is cancelled (or Close is called), the poll loop stops: the
// Handle calls running finish (their context is not cancelled), failed ones
// are not retried, what finished is committed, and the client leaves the
// group. Run then returns nil. Close is idempotent.
//
// # Metrics
//
// With Config.Metrics set, the runner registers (const label group):
// offlinebox_stream_records_handled_total, _dead_letters_total,
// _handler_retries_total, _commit_failures_total,
// _handle_duration_seconds, _batch_records and _consumer_lag: the log end
// offset minus the group's committed offset, per topic and partition this
// member owns, measured with kadm every LagInterval. Being measured from
// the commits, it grows while a batch stalls on a store that is down.
// Config.ClientMetrics adds franz-go's kprom client metrics
// (offlinebox_kafka_*).
//
// EnsureTopics creates topics (tolerating existing ones) and NewProducer
// returns an idempotent, acks=all producer client for synchronous use.
package stream

// Package history is the worker that sinks im.sequenced into ClickHouse
// (package chstore): the full history behind the Redis window, for roaming
// and analysts. It is a stream.Handler; the stream runner polls, retries and
// commits.
//
// # One INSERT per Handle call, not a buffer across calls
//
// ClickHouse wants few large inserts. The obvious way to get them, keeping
// records in memory across Handle calls until a batch is full, is wrong under
// the stream contract: returning nil lets the runner commit those offsets, so
// records still in the buffer would be lost by a crash. Holding them without
// returning nil is not possible either (an error makes the runner hand the
// same records back). So each Handle call inserts exactly its records, cut
// into chunks of at most Config.MaxBatchRows rows and Config.MaxBatchBytes
// bytes, and returns nil only after ClickHouse accepted every chunk.
//
// Batch size therefore comes from the poll. Run this worker with
// stream.Config.MaxPollRecords = RecommendedMaxPollRecords and a fetch that
// waits to fill up: topology.History declares both (a megabyte or a second
// per fetch); the runner calls Handle once per partition per poll, so fewer
// partitions per process mean larger inserts.
// offlinebox_history_insert_batch_rows shows what a deployment gets.
//
// # Failure
//
// If an INSERT fails (ClickHouse down, slow, refusing), Handle returns the
// error and the runner retries the same records with backoff: consumer lag
// grows, nothing is committed, nothing is skipped. Chunks that did succeed
// before the failure are inserted again on retry; chstore's reads collapse
// such copies, as they collapse every Kafka replay.
//
// A record that can never be stored (it does not decode, or has a value the
// table cannot hold) is returned as a dead letter with the reason and does not
// hold up the records behind it.
//
// # Metrics
//
// offlinebox_history_rows_inserted_total, _insert_failures_total,
// _insert_duration_seconds and _insert_batch_rows.
package history

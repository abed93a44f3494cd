// Package chstore is offlinebox's ClickHouse history: every sequenced
// message of every conversation, kept for a year or more, for roaming
// (scrolling back past the Redis window) and for analysts.
//
// The table is messages (DDL in schemas/clickhouse, applied by Migrate): one
// row per (conv_id, seq), ordered by that key and partitioned by month of
// write time. Writes are at-least-once: workers/history re-inserts whatever
// Kafka replays. The table's ReplacingMergeTree folds such copies only when
// it merges parts of one partition, sometime later, so every read here
// collapses them itself with LIMIT 1 BY seq; callers never see a message
// twice, and replays never inflate a count.
//
// Retention drops whole months (DropPartitionsBefore) and never a month that
// still holds rows younger than the cutoff.
//
// Analysts get Query: one read-only statement, checked here and run with
// readonly=1 on the server; schemas/clickhouse/README.md has examples.
//
// Compatibility: the DDL and every statement here run on ClickHouse 18.16
// (Debian's package, used by the tests) and on current releases, over the
// native protocol only. Hence DateTime (seconds) plus an Int64 of
// milliseconds instead of DateTime64, no LowCardinality, no TTL clause.
//
// Every call is bounded by a timeout from Config. Open does not wait for the
// server; a call made while ClickHouse is down fails, and the caller retries.
// The package knows nothing of Kafka or HTTP.
package chstore

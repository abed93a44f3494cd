// Package chstore is offlinebox's ClickHouse history: every sequenced
// message of every conversation, kept for a year or more, for roaming
// (scrolling back past the Redis window) and for analysts.
//
// The table is history (DDL in schemas/clickhouse, applied by Migrate; the
// older messages is a view of it): one row per (conv_id, epoch, seq),
// ordered by that key and partitioned by month of write time. Writes are
// at-least-once: workers/history re-inserts whatever Kafka replays. The
// table's ReplacingMergeTree folds such copies only when it merges parts of
// one partition, sometime later, so every read here collapses them itself
// with LIMIT 1 BY seq within one epoch's view; callers never see a message
// twice, and replays never inflate a count.
//
// Reads name an epoch (epochs.go): a rebuild of the Redis timeline starts a
// new epoch from a parent's history at a base counter and records it in the
// epochs table, and the epoch's view takes seqs up to base from the parent
// and the rest from its own rows. So an old epoch's rows that arrive after
// the rebuild stay readable under the old epoch and never show in the new.
//
// Retention drops whole months (DropPartitionsBefore) and never a month that
// still holds rows younger than the cutoff. Inside younger months, the
// retention policies' row groups (OldRowGroups: conversation, kind, content
// type) past their own retention go by ALTER TABLE ... DELETE mutations
// (DeleteRows; PendingMutations says when they are done). A conversation's
// tag, which policies select by, is kept in conversation_tags (ConvTags),
// written with the rows that carry one.
//
// A user reads the history of a conversation only from when they joined,
// and a former member only the spans they belonged to (MemberHistory, over
// History and SharedSeq): the rule the Redis read path keeps in its
// scripts, kept here for the history, so the API applies neither.
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

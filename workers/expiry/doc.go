// Package expiry is the retention worker. Data leaves offlinebox only here,
// and only by write time: never because a device acked (another device may
// still need it).
//
// One sweep cycle scans every key of the Redis store, node by node, in
// bounded SCAN steps (COUNT ScanCount), and applies the rule of each key's
// part of the data model, each a bounded, idempotent redisstore step:
//
//   - conversation meta: pop timeline entries past their window from the
//     head (raising the retention floor `first`), drop large groups' @all
//     references past the window;
//   - dedupe buckets: delete a day once sequencing no longer consults it;
//   - mention lanes: drop references past their conversation type's window;
//   - device sets: evict devices unused for longer than the inbox window and,
//     beyond the most allowed, the least recently used, with their cursors.
//
// The windows come from the retention policy in force (Config.Policies, a
// retention.Source: a policy file reloaded on SIGHUP or a change, or the
// built-in Retention and HistoryRetention), read afresh for every key, so a
// reload takes effect in the next step. A conversation's window is chosen
// by its id, type and tag (its meta) and each entry's kind and content type.
//
// Separately, ClickHouse history is trimmed: months past the longest
// retention any policy gives are dropped whole (every Interval), and, every
// HistoryTrimInterval, the groups of rows (conversation, kind, content
// type) past their own policy are deleted by one mutation per distinct
// retention, none started while an earlier one still runs.
//
// Why SCAN and not an index of active conversations: an index would have to
// be written by the fanout on every message (one more write on the hot path,
// in another slot than the conversation's, so not atomic with it), and a
// conversation that missed it would never expire. SCAN needs nothing from
// the write path and visits every key, including those left by older
// versions; its cost is a full pass over the keyspace per cycle, spread in
// small steps (each step is O(ScanCount) on the server), which is cheap next
// to the data it keeps in bounds. On Redis Cluster each master is scanned on
// its own.
//
// Several expiry processes may run at once. Each node's scan cursor is kept
// in Redis with a lease: one process at a time advances a node's cycle, and
// when it dies the lease lapses and another continues from the same cursor.
// A cycle starts at most once per Interval across all processes. Even when
// two processes overlap (a lease lapsed under a slow step), every step is
// guarded by the state it was planned on, so nothing is removed twice and
// nothing within its window is removed at all.
//
// A hot store (users moved there from the main store) has keys of its
// own and is swept by a Worker of its own, without a history store.
//
// All time comes from Config.Clock, so tests move a fake clock instead of
// waiting.
package expiry

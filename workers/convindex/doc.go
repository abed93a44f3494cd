// Package convindex is the conversation-index worker. It consumes two
// topics:
//
//   - im.sequenced: keeps each member's preview of every small conversation
//     at its newest message (large groups show the group's own summary, so
//     they cost no per-member writes; the list order of small
//     conversations is written by fanout with the inbox);
//   - im.receipts: applies read receipts: the user's read seq rises, unread
//     is recomputed and the mentions read leave the lane, so every device
//     of the user sees the new unread.
//
// Both effects are idempotent scripts of package redisstore, so a batch
// retried after a failure changes nothing twice. The Indexer implements
// stream.Handler.
package convindex

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
// retried after a failure changes nothing twice. A preview or receipt that
// can never be written (a key of the wrong type: redisstore.Permanent) is
// dead-lettered with its reason and the rest of the batch applied; a
// store that is down fails the batch, to be retried. The Indexer
// implements stream.Handler.
package convindex

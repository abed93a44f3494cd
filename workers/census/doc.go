// Package census is the device census: the gauges the design keeps beside
// pull latency and sizes, users who have not pulled for 30 days (a
// reconnect storm waiting to happen) and the share of users whose devices
// drifted apart.
//
// Neither can be seen on the request path: a user who does not pull sends
// no request, and a user's drift needs every device's cursor while an ack
// touches one. So a census scans the users' keys in paced steps (SCAN of
// the inbox keys, one read-only script per user: at most 5 devices and
// their cursors, redisstore.CensusStep) over every node of every store
// that holds users' keys, and publishes the counts only when a pass over
// all of them is complete: a store that is down is waited for, never
// published as a partial count.
//
// Run it in one process; the gauges describe the whole store. The binary
// runs it beside the retention worker: both are paced, bounded scans.
package census

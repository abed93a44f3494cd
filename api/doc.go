// Package api is offlinebox's HTTP pull API: the conversation list, the
// sliced catch-up sync, paging inside the Redis window, device acks, read
// receipts, sending messages, and history (roaming) through a pluggable
// reader. The routes and their JSON are documented in openapi.yaml beside
// this file; a test keeps the two in step.
//
// Every request but /healthz carries a bearer token (package auth); a user
// reads only their own inbox and the conversations they are a member of.
// A request is admitted in an order that lets no slow client hold what
// others need: the token, a place among the user's own requests (429
// beyond Config.MaxPerUser), the body read whole under a deadline (408),
// and only then a slot among the requests worked on (503 with Retry-After
// beyond MaxInFlight). Every JSON body passes one strict check before it
// is decoded (strict_json.go): invalid UTF-8, keys given twice and field
// names in another case are 400s naming the field, never rewritten or
// guessed. Messages are held to schemas.Limits, as fanout holds producers.
// Bodies of messages and tokens are never logged.
//
// Sync fills its answer in the design's order (the whole mention lane,
// then conversations with pending mentions, direct ones, then by
// activity) in two passes, so that the byte budget is shared fairly. In
// the first pass a group's slice is capped at a sixteenth of the budget
// (8 KB of the default 128 KB; at least its newest message): its mentions
// are already in the lane, so its slice is context, and in the founding
// scenario the noisy group's newest 200 messages would otherwise take the
// budget before any direct conversation. Direct conversations are not
// capped. Conversations estimated not to fit are passed over, and looked
// at again once the sizes measured so far say they fit. In the second
// pass what is left extends the capped slices, in priority order, towards
// the limit; a slice is always the newest messages of its news, with the
// gap named. Summaries of what did not fit are kept room for first.
//
// Metrics: pull latency and response size histograms per route and sync
// answer shapes. The users who have not pulled and the devices that
// drifted apart are not visible on the request path; the device census
// (workers/census) counts them.
//
// The handlers are thin: reads go to package redisstore through an
// InboxRouter (users' keys may live on a hot store), writes that belong to
// the pipeline (messages, read receipts) are produced to Kafka.
package api

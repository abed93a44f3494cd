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
// activity) within a byte budget shared in two passes: how is written
// once, in redisstore/readpath/sync_budget.go. The API's part is the sizer
// (sync_sizer.go), which measures each part of the answer as it will be encoded.
//
// Answers are compressed as Accept-Encoding asks (encoding.go: zstd or
// gzip by q-value, identity for small answers and clients that ask
// nothing, 406 when nothing is acceptable); budgets count the JSON before
// the coding. Messages inside a conversation slice leave out what the
// slice says once, and text bodies are JSON strings (message_json.go).
//
// Metrics: pull latency and response size histograms per route and sync
// answer shapes. The users who have not pulled and the devices that
// drifted apart are not visible on the request path; the device census
// (workers/census) counts them.
//
// The live channel (GET /v1/live, the WebSocket) is package live's: the
// server mounts live.Handler and lends it what every request shares (the
// token check against the keyring and the revocation log, the strict
// JSON decoder, the body opener, edge.Acker, which POST /v1/ack applies
// acks through too); asyncapi.yaml beside this file documents its
// frames. What the two edges share otherwise (errors, ack readers, the
// message JSON) is package edge's, below both.
//
// The handlers are thin: reads and acks go to package redisstore, those of
// users' keys through the InboxRouter's operations (users' keys may live
// on a hot store), writes that belong to
// the pipeline (messages, read receipts) are produced to Kafka.
package api

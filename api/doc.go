// Package api is offlinebox's HTTP pull API: the conversation list, the
// sliced catch-up sync, paging inside the Redis window, device acks, read
// receipts, sending messages, and history (roaming) through a pluggable
// reader. The routes and their JSON are documented in openapi.yaml beside
// this file; a test keeps the two in step.
//
// Every request but /healthz carries a bearer token (package auth); a user
// reads only their own inbox and the conversations they are a member of.
// The server bounds the requests it works on at once (503 with Retry-After
// beyond), the size of request bodies, and the time of every store call.
// Bodies of messages and tokens are never logged.
//
// The handlers are thin: reads go to package redisstore through an
// InboxRouter (users' keys may live on a hot store), writes that belong to
// the pipeline (messages, read receipts) are produced to Kafka.
package api

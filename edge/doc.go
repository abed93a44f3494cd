// Package edge holds what the two edges of the server, the HTTP API
// (package api) and the live channel (package live), share: the error an
// edge answers (Error and its constructors, written as wire.ErrorBody;
// WriteError, Classify), the token refusals, the list limits, the checks
// of a batch of (conversation, seq, epoch) items before anything is
// written, ack application (Acker: POST /v1/ack and an ack frame apply
// acks the one same way), the ack frame and ack body readers, a message's
// JSON (message_json.go) and its state for the sender. It sits below
// both, so neither imports the other for these.
package edge

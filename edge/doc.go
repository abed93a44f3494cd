// Package edge holds what the two edges of the server, the HTTP API
// (package api) and the live channel, share: the error an edge answers
// (Error and its constructors, written as wire.ErrorBody), the list
// limits, and the checks of a batch of (conversation, seq, epoch) items
// before anything is written. It sits below both, so neither imports the
// other for these.
package edge

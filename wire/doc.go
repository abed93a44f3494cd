// Package wire holds the JSON shapes of offlinebox's public contract, the
// ones the server writes and the Go SDK, the checker and the benches
// decode: one definition per shape, so that a field renamed on one side
// cannot drift from the other. It imports the standard library only, as
// the SDK (package client) must not pull in the server's dependencies.
// Its shapes follow api/openapi.yaml.
package wire

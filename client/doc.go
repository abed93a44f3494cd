// Package client is a Go client of the offlinebox HTTP API, and the
// catch-up loop a device runs when it comes back: sync with its cursors,
// store what arrives, ack after storing, page through the gaps it was told
// of, until it holds everything. The demo, the benchmarks and the fault
// suite drive the system through it, as a real device would.
package client

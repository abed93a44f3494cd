// Command offlinebox runs the offline-message pipeline: every worker and the
// HTTP API as subcommands of one binary, so an operator can run them as
// separate processes, and `demo`, which runs all of them in one process on
// an embedded stack (kfake, redis-server, clickhouse-server children).
//
// This is the only package that wires stores, workers and the API together.
package main

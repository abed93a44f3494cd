// Package harness is what the benchmark programs under bench/ share: the
// common flags (--scale, --json, store addresses), an embedded stack started
// in a temporary folder when no address is given (redis-server,
// clickhouse-server and kfake, all on 127.0.0.1, stopped on exit), the
// pipeline stages run in-process (fanout, history, the HTTP API), realistic
// message bodies, a Redis call counter, the memory census of a key space,
// percentiles, the stderr table and the one-line JSON result.
//
// A benchmark is a program, not a timed test: it prints progress and a
// table on stderr and, with --json, exactly one JSON object on the last line
// of stdout. Absolute times depend on a noisy shared machine; each program
// therefore measures its baseline in the same run, and ratios are what
// compare across runs.
package harness

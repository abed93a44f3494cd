// Package testenv gives integration tests the real servers they talk to: a
// redis-server, a 3-master Redis Cluster, a clickhouse-server and franz-go's
// in-process kfake broker.
//
// `make test` starts one redis-server and one clickhouse-server for the whole
// run and names them in OFFLINEBOX_TEST_REDIS and OFFLINEBOX_TEST_CLICKHOUSE
// (OFFLINEBOX_TEST_REDIS_CLUSTER may name cluster nodes, comma-separated).
// Without those variables a test binary starts the servers it needs itself,
// through package embedded, once per binary; they are stopped by Main (use
// it as TestMain) and, should the binary die first, killed by the kernel
// with it. Every test gets its own key prefix or database, so tests never
// see each other's data. With OFFLINEBOX_REQUIRE_SERVERS=1 (set by `make
// test`) a missing server fails the test instead of skipping it. History
// gives a test the history store over its own database, migrated, which
// most integration tests beside Redis want.
package testenv

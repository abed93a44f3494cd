// Package schemas defines the records offlinebox moves between its stages
// (protobuf, generated from offlinebox.proto), the rules a record must meet
// before any stage acts on it, the topic names, and the ClickHouse DDL.
//
// The Redis key layout is documented in redis-keys.md beside this file; the
// code that owns it is package redisstore.
//
// This package imports no other package of offlinebox.
package schemas

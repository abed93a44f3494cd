// Package luacheck is test support for the packages that run Lua scripts
// on Redis (redisstore, redisstore/rebuild, live): the keys guard that runs
// each script with redisstore/testdata/keys_guard.lua in front of it, so
// that a script fails the moment it touches a key it was not given (on
// Redis Cluster such a key may live on another node), and the readers of
// the conventions every script keeps (KEYS and ARGV named at its top, its
// status codes and refusal words as upper-case locals). It imports none
// of those packages, so that their own tests can use it.
package luacheck

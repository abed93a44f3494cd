// Package storetest is test support for the Redis store's packages
// (redisstore and redisstore/rebuild): the fixed clock retention is
// measured against, the records they seed, and reads of what the scripts
// wrote. It does not import redisstore, so that redisstore's own
// in-package tests can use it; helpers that name redisstore's types (a
// sync sizer, a store's list indexes) cannot live here for that reason.
package storetest

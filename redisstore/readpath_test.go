package redisstore

import "context"

// ReadPathForTests is the read path (redisstore/readpath) as this
// package's tests look through it: readpath imports this package, so its
// calls are set by readpath_external_test.go, an external test of this
// package, before any test runs.
var ReadPathForTests struct {
	// List reads the first page of user's conversation list, limit
	// conversations.
	List func(ctx context.Context, s *Store, user string, limit int) ([]ListedForTests, error)
	// PageLen reads a page of conv as user (limit messages) and counts its
	// messages.
	PageLen func(ctx context.Context, s *Store, user, conv string, limit int) (int, error)
}

// ListedForTests is one row of the list as the tests compare it.
type ListedForTests struct {
	Conv     string
	Mentions int
}

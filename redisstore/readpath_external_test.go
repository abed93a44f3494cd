package redisstore_test

import (
	"context"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/redisstore/readpath"
)

func init() {
	reads := func(s *redisstore.Store) *readpath.Reader { return readpath.New(redisstore.NewInboxRouter(s, nil, 0)) }
	redisstore.ReadPathForTests.List = func(ctx context.Context, s *redisstore.Store, user string, limit int) ([]redisstore.ListedForTests, error) {
		l, err := reads(s).ListConversations(ctx, user, "", readpath.ListCursor{}, limit)
		out := make([]redisstore.ListedForTests, len(l.Items))
		for i, it := range l.Items {
			out[i] = redisstore.ListedForTests{Conv: it.Conv, Mentions: it.Mentions}
		}
		return out, err
	}
	redisstore.ReadPathForTests.PageLen = func(ctx context.Context, s *redisstore.Store, user, conv string, limit int) (int, error) {
		p, err := reads(s).ReadPage(ctx, user, conv, readpath.PageQuery{Limit: limit})
		return len(p.Messages), err
	}
}

package readpath

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/offlinebox/offlinebox/redisstore"
)

// The test helpers redisstore's own tests use (lua_keys_test.go,
// conversations_index_test.go), copied here: that package's test files
// cannot be imported.

// commandHook is a go-redis hook that shows fn every command a client
// sends, alone or in a pipeline, before it goes.
type commandHook func(redis.Cmder)

func (h commandHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h commandHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd)
		return next(ctx, cmd)
	}
}

func (h commandHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h(c)
		}
		return next(ctx, cmds)
	}
}

// forgetListIndexes makes user's inbox one that predates the list
// indexes, as redisstore's conversations_index_test.go does.
func forgetListIndexes(t *testing.T, s *rig, user string) {
	t.Helper()
	ctx := context.Background()
	if err := s.rdb.Del(ctx, s.keys.MentionIndex(user)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.HDel(ctx, s.keys.Inbox(user), redisstore.InboxLargeGroups, redisstore.InboxIndexed, ":ixh", ":ixz").Err(); err != nil {
		t.Fatal(err)
	}
}

package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/list_index_build.lua
	listIndexBuildLua    string
	listIndexBuildScript = redis.NewScript(listIndexBuildLua)
)

// listIndexStepCount is the SCAN COUNT of one build step: about that many
// inbox fields and lane members a step, well under a millisecond of Redis
// time each.
const listIndexStepCount = 256

// BuildListIndex completes the user's list indexes (the large-group list
// and the mention index, schemas/redis-keys.md) for an inbox written before
// they existed: one bounded script step per round trip, so that Redis
// serves others between steps however large the inbox. Inboxes created
// since have them from their first write; for those, and once built, it is
// one cheap call. The list builds on demand; an operator may also run it
// ahead for a user, e.g. right after an upgrade.
func (s *Store) BuildListIndex(ctx context.Context, user string) error {
	k := s.keys
	keys := []string{k.Inbox(user), k.Mentions(user), k.MentionIndex(user), k.Profile(user)}
	for steps := 0; ; steps++ {
		callCtx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		done, err := listIndexBuildScript.Run(callCtx, s.rdb, keys, listIndexStepCount).Int()
		cancel()
		if err != nil {
			return fmt.Errorf("build list index of %s (step %d): %w", user, steps, AsUserMoved(err))
		}
		if done == 1 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("build list index of %s (step %d): %w", user, steps, err)
		}
	}
}

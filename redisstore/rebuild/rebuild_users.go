package rebuild

import (
	"context"
	"errors"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore"

	"github.com/redis/go-redis/v9"
)

// A user's list indexes (the large-group list :lg in the inbox and the
// mention index mx, see conversations_index.go) repeat what the inbox and
// the mention lane hold. A Redis that evicted keys may have taken one and
// left the other, so after an eviction they are rebuilt from what they
// index: cleared, then built again as an inbox older than them is.

// reindexStep is the SCAN COUNT of ReindexUsers.
const reindexStep = 500

// ReindexUser clears the user's list indexes and builds them again from
// the inbox and the lane (BuildListIndex). A user whose keys moved to the
// hot store is left alone here (redisstore.ErrUserMoved).
func (s *Rebuilder) ReindexUser(ctx context.Context, user string) error {
	k := s.keys
	ib, mx, prof := k.Inbox(user), k.MentionIndex(user), k.Profile(user)
	err := s.rebuildCall(ctx, func(ctx context.Context) error {
		return s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			loc, err := tx.HGet(ctx, prof, redisstore.ProfileLocation).Result()
			if err != nil && err != redis.Nil {
				return err
			}
			if loc == redisstore.ProfileOnHot {
				return redisstore.ErrUserMoved
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, mx)
				p.HDel(ctx, ib, redisstore.InboxLargeGroups, redisstore.InboxIndexed, inboxIndexHScan, inboxIndexZScan)
				return nil
			})
			return err
		}, prof)
	})
	if err != nil {
		return fmt.Errorf("reindex %s: clear the list indexes: %w", user, err)
	}
	return s.st.BuildListIndex(ctx, user)
}

// Inbox fields of a list index build in progress (see
// lua/list_index_build.lua).
const (
	inboxIndexHScan = ":ixh"
	inboxIndexZScan = ":ixz"
)

// ReindexUsers rebuilds the list indexes of every user this store holds an
// inbox or a mention index of (ReindexUser), skipping users that moved to
// the hot store; it returns how many users were reindexed. SCAN may name a
// user twice: reindexing again yields the same indexes.
func (s *Rebuilder) ReindexUsers(ctx context.Context) (int, error) {
	nodes, err := s.st.ScanNodes(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, node := range nodes {
		for cursor := uint64(0); ; {
			keys, next, err := s.st.ScanKeys(ctx, node, cursor, reindexStep)
			if err != nil {
				return n, err
			}
			for _, key := range keys {
				done, err := s.reindexKey(ctx, key)
				if err != nil {
					return n, err
				}
				if done {
					n++
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return n, nil
}

// reindexKey reindexes the user of an inbox key, or of a mention index
// whose inbox is gone (one beside an inbox is reindexed with it).
func (s *Rebuilder) reindexKey(ctx context.Context, key string) (bool, error) {
	ref, ok := s.keys.ParseKey(key)
	if !ok || ref.User == "" || (ref.Part != "ib" && ref.Part != "mx") {
		return false, nil
	}
	if ref.Part == "mx" {
		var has int64
		err := s.rebuildCall(ctx, func(ctx context.Context) error {
			var err error
			has, err = s.rdb.Exists(ctx, s.keys.Inbox(ref.User)).Result()
			return err
		})
		if err != nil {
			return false, fmt.Errorf("reindex %s: %w", ref.User, err)
		}
		if has == 1 {
			return false, nil
		}
	}
	switch err := s.ReindexUser(ctx, ref.User); {
	case errors.Is(err, redisstore.ErrUserMoved):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A held conversation (Keys.Held) is one a restore from im.sequenced could
// not put back exactly: sequence.lua refuses it (OBHELD) and a rebuild's
// commit (rebuild_commit.lua) releases it, in a new epoch.

// HoldConversation marks a conversation a restore could not put back
// exactly, with why: sequencing refuses it (OBHELD, Permanent) until a
// rebuild gives it a new epoch, so no seq the changelog gave one message
// is handed to another. A plain SET: it succeeds whatever the
// conversation's other keys hold. A hold already set keeps its reason;
// set reports whether this call set it.
func (s *Store) HoldConversation(ctx context.Context, conv, reason string) (set bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	set, err = s.rdb.SetNX(ctx, s.keys.Held(conv), reason, 0).Result()
	if err != nil {
		return false, fmt.Errorf("hold %s for a rebuild: %w", conv, err)
	}
	return set, nil
}

// HeldReason reports why a restore held the conversation, if it did.
func (s *Store) HeldReason(ctx context.Context, conv string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	why, err := s.rdb.Get(ctx, s.keys.Held(conv)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read the hold of %s: %w", conv, err)
	}
	return why, true, nil
}

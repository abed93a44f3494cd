package redisstore

import (
	"context"
	"fmt"
)

// SetReceiveOnly marks user as a receive-only account (bots, notification
// targets): the fanout writes nothing to their inbox while the mark is on.
// Call it on the store the user is routed to (InboxRouter.For).
func (s *Store) SetReceiveOnly(ctx context.Context, user string, on bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	var err error
	if on {
		err = s.rdb.HSet(ctx, s.keys.Profile(user), ProfileReceiveOnly, "1").Err()
	} else {
		err = s.rdb.HDel(ctx, s.keys.Profile(user), ProfileReceiveOnly).Err()
	}
	if err != nil {
		return fmt.Errorf("set receive-only of %s to %v: %w", user, on, err)
	}
	return nil
}

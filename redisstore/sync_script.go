package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// scriptCall is one run of a script within a pipeline.
type scriptCall struct {
	keys []string
	args []any
}

// evalPiped runs one script many times in one pipeline. A Cluster client
// splits the pipeline per node, so the calls may touch different slots as
// long as each call stays in one. A server that lost its script cache (a
// restart, SCRIPT FLUSH) answers NOSCRIPT: the script is loaded and the
// whole pipeline is sent again, which is safe because every script of the
// store is idempotent.
func (s *Store) evalPiped(ctx context.Context, sc *redis.Script, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	for attempt := 0; ; attempt++ {
		cmds := make([]*redis.Cmd, len(calls))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, c := range calls {
				cmds[i] = sc.EvalSha(ctx, p, c.keys, c.args...)
			}
			return nil
		})
		if err == nil {
			return cmds, nil
		}
		if attempt > 0 || !anyNoScript(cmds) {
			return cmds, err
		}
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return nil, fmt.Errorf("load script: %w", err)
		}
	}
}

func anyNoScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if c != nil && redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			return true
		}
	}
	return false
}

// asUserMoved turns a script's OBMOVED answer into ErrUserMoved, so the
// caller routes the user again (see InboxRouter).
func asUserMoved(err error) error {
	if redis.HasErrorPrefix(err, "OBMOVED") {
		return ErrUserMoved
	}
	return err
}

// anyUserMoved reports whether any call of a pipeline answered OBMOVED.
func anyUserMoved(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if c != nil && redis.HasErrorPrefix(c.Err(), "OBMOVED") {
			return true
		}
	}
	return false
}

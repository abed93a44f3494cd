package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// A server that evicted keys lost state no one can name: any conversation's
// counter, timeline or dedupe day, any user's inbox. Sequencing on it could
// hand out a seq twice, so a writer that finds evicted_keys risen since it
// verified the server holds the whole store (Keys.EvictionHold) until an
// operator repairs it (`offlinebox repair-evicted`: every conversation
// rebuilt from ClickHouse, then ReleaseEvictionHold).

// EvictionsSeen reads each server's evicted_keys as verified (by run_id).
func (s *Store) EvictionsSeen(ctx context.Context) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	raw, err := s.rdb.HGetAll(ctx, s.keys.EvictionsSeen()).Result()
	if err != nil {
		return nil, fmt.Errorf("read the evictions verified: %w", err)
	}
	out := make(map[string]int64, len(raw))
	for id, v := range raw {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s field %s is %q", ErrMalformed, s.keys.EvictionsSeen(), id, v)
		}
		out[id] = n
	}
	return out, nil
}

// SeeEvictions records the evicted_keys of servers verified for the first
// time (a field already there stays: HSETNX).
func (s *Store) SeeEvictions(ctx context.Context, ins []Instance) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, in := range ins {
			p.HSetNX(ctx, s.keys.EvictionsSeen(), in.RunID, in.EvictedKeys)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the evictions verified: %w", err)
	}
	return nil
}

// HoldEvicted holds sequencing on the store, with why; a hold already set
// keeps its reason. set reports whether this call set it.
func (s *Store) HoldEvicted(ctx context.Context, reason string) (set bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	set, err = s.rdb.SetNX(ctx, s.keys.EvictionHold(), reason, 0).Result()
	if err != nil {
		return false, fmt.Errorf("hold the store for its evicted keys: %w", err)
	}
	return set, nil
}

// EvictionHold reports why sequencing is held on the store, if it is.
func (s *Store) EvictionHold(ctx context.Context) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	why, err := s.rdb.Get(ctx, s.keys.EvictionHold()).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read the eviction hold: %w", err)
	}
	return why, true, nil
}

// ReleaseEvictionHold ends the hold once the store was repaired: the
// servers' evicted_keys of now are the ones verified, and the hold is
// gone, in one transaction.
func (s *Store) ReleaseEvictionHold(ctx context.Context, ins []Instance) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.keys.EvictionsSeen())
		for _, in := range ins {
			p.HSet(ctx, s.keys.EvictionsSeen(), in.RunID, in.EvictedKeys)
		}
		p.Del(ctx, s.keys.EvictionHold())
		return nil
	})
	if err != nil {
		return fmt.Errorf("release the eviction hold: %w", err)
	}
	return nil
}

package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/datakey_swap.lua
	dataKeySwapLua    string
	dataKeySwapScript = redis.NewScript(dataKeySwapLua)
)

// DataKey returns conv's wrapped data key ("" when it has none).
func (s *Store) DataKey(ctx context.Context, conv string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	v, err := s.rdb.Get(ctx, s.keys.DataKey(conv)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read data key of %s: %w", conv, err)
	}
	return v, nil
}

// PutDataKey stores wrapped as conv's data key unless it has one; it
// returns the key stored. The key never expires: history outlives the
// timeline.
func (s *Store) PutDataKey(ctx context.Context, conv, wrapped string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	old, err := s.rdb.SetArgs(ctx, s.keys.DataKey(conv), wrapped, redis.SetArgs{Mode: "NX", Get: true}).Result()
	if errors.Is(err, redis.Nil) {
		return wrapped, nil
	}
	if err != nil {
		return "", fmt.Errorf("store data key of %s: %w", conv, err)
	}
	return old, nil
}

// SwapDataKey replaces conv's wrapped key old by new (the same key,
// wrapped anew); false when the stored key is no longer old.
func (s *Store) SwapDataKey(ctx context.Context, conv, old, new string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := dataKeySwapScript.Run(ctx, s.rdb, []string{s.keys.DataKey(conv)}, old, new).Int()
	if err != nil {
		return false, fmt.Errorf("rewrap data key of %s: %w", conv, err)
	}
	return n == 1, nil
}

// EachDataKey calls fn with every conversation's wrapped data key, one
// SCAN page at a time over every node (a key may come twice).
func (s *Store) EachDataKey(ctx context.Context, fn func(conv, wrapped string) error) error {
	nodes, err := s.ScanNodes(ctx)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		for cursor := uint64(0); ; {
			cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
			keys, next, err := node.client.Scan(cctx, cursor, s.keys.dataKeyMatch(), 500).Result()
			cancel()
			if err != nil {
				return fmt.Errorf("scan data keys of %s: %w", node.Name, err)
			}
			for _, key := range keys {
				ref, ok := s.keys.ParseKey(key)
				if !ok || ref.Conv == "" || ref.Part != "dk" {
					continue
				}
				w, err := s.DataKey(ctx, ref.Conv)
				if err != nil {
					return err
				}
				if w == "" {
					continue
				}
				if err := fn(ref.Conv, w); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// Canaries returns master key id → canary (see Keys.MasterCanaries).
func (s *Store) Canaries(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	m, err := s.rdb.HGetAll(ctx, s.keys.MasterCanaries()).Result()
	if err != nil {
		return nil, fmt.Errorf("read master key canaries: %w", err)
	}
	return m, nil
}

// PutCanary records master key id's canary unless it has one.
func (s *Store) PutCanary(ctx context.Context, id, canary string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.rdb.HSetNX(ctx, s.keys.MasterCanaries(), id, canary).Err(); err != nil {
		return fmt.Errorf("record canary of master key %s: %w", id, err)
	}
	return nil
}

// DeleteCanary forgets master key id (it wraps nothing any more).
func (s *Store) DeleteCanary(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.rdb.HDel(ctx, s.keys.MasterCanaries(), id).Err(); err != nil {
		return fmt.Errorf("forget master key %s: %w", id, err)
	}
	return nil
}
